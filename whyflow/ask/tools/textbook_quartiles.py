"""Textbook questions on one numeric column's quartiles: "estimate the median AQI value of this
sample", "the first quartile (Q1) of <column>", "the interquartile range (IQR) of <column>", read
by :class:`~whyflow.ask.tools.textbook_reader.Reader`.

The column is the one numeric column whose name holds every word of the phrase ('AQI value' for
'daily_aqi_value'), or a column the question writes out; a phrase two columns hold, or a word no
name holds, gives no number. The quartiles are interpolated linearly between order statistics
(numpy's and pandas' default, Hyndman and Fan's type 7), which the answer says.
"""

from __future__ import annotations

import re

from whyflow.ask.tools.textbook_reader import TEST_WORDS, Reader, TextbookParse
from whyflow.ask.tools.textbook_spec import TextbookSpec

__all__ = ["quartile"]

_ASK = re.compile(
    r"^(?:estimate|compute|calculate|find|what is|what's|identify) the "
    r"(?P<what>median|first quartile(?: \(q1\))?|third quartile(?: \(q3\))?|q1|q3|interquartile range(?: \(iqr\))?"
    r"|iqr) of (?:the )?(?P<phrase>[a-z0-9_ ]+?)(?P<rows> (?:of|in) (?:this|the) (?:sample|data|data set|dataset))?"
    r"\W*$"
)
_ASK_BEFORE = re.compile(  # 'the median AQI value of this sample': the phrase between the word and the rows
    r"^(?:estimate|compute|calculate|find|what is|what's|identify) the (?P<what>median) "
    r"(?P<phrase>[a-z0-9_ ]+?)(?P<rows> (?:of|in) (?:this|the) (?:sample|data|data set|dataset))?\W*$"
)
_WANT = {"median": "median", "first": "q1", "q1": "q1", "third": "q3", "q3": "q3", "interquartile": "iqr", "iqr": "iqr"}


def _parts(name: str) -> set[str]:
    return set(re.findall(r"[a-z]+|\d+", name.lower()))


def quartile(r: Reader) -> TextbookParse | None:
    """The median, a quartile or the interquartile range of the one numeric column named."""
    cue = _ASK.match(r.low) or _ASK_BEFORE.match(r.low)
    if not cue:
        return None
    phrase = cue.group("phrase")
    words = re.findall(r"[a-z]+|\d+", phrase)
    numeric = [c.name for c in r.infos if c.numeric]
    named = [c for c in numeric if c.lower() == phrase.strip().replace(" ", "_") or set(words) <= _parts(c)]
    r.take(0, cue.end("what"))
    if cue.group("rows"):
        r.take(cue.start("rows"), cue.end("rows"))
    r.take_words(TEST_WORDS)
    if len(named) != 1 or not words:
        return r.result(None, "quartile")  # the phrase's words, unread: no name or two hold them
    r.take(cue.start("phrase"), cue.end("phrase"))
    want = _WANT[cue.group("what").split()[0]]
    spec = TextbookSpec(kind="quartile", want=want, columns=named, decimals=r.prompt.decimals)  # type: ignore[arg-type]
    return r.result(spec, "quartile")
