"""Textbook questions on a distribution's shape: "is the distribution of <column> left skewed,
right skewed or symmetric?", read by :class:`~whyflow.ask.tools.textbook_reader.Reader`.

The column is the one numeric column whose name holds every word of the phrase (as for
quartiles). The answer is the sign of the adjusted Fisher-Pearson skewness (scipy's
``skew(bias=False)``), called skewed only where it exceeds twice its standard error
sqrt(6n(n-1) / ((n-2)(n+1)(n+3))) and symmetric otherwise; where the question offers no
'symmetric' and the skewness is within that band, no answer is given.
"""

from __future__ import annotations

import re

from whyflow.ask.tools.textbook_reader import TEST_WORDS, Reader, TextbookParse
from whyflow.ask.tools.textbook_spec import TextbookSpec

__all__ = ["skew_direction"]

_OPTION = re.compile(
    r"\b(?:left|right|positively|negatively)[- ]skewed\b|\bskewed to the (?:left|right)\b|\bsymmetric\b"
)
_ASK = re.compile(r"^(?:is|are) (?:the )?(?:distribution of (?:the )?)?(?P<phrase>[a-z0-9_ ]+?) (?:distribution )?$")


def skew_direction(r: Reader) -> TextbookParse | None:
    """Whether one numeric column's distribution is left skewed, right skewed or symmetric."""
    options = list(_OPTION.finditer(r.low))
    if len(options) < 2:
        return None
    ask = _ASK.match(r.low[: options[0].start()])
    if not ask:
        return None
    r.take(0, ask.start("phrase"))
    r.take(ask.end("phrase"), options[0].start())
    last = options[-1].end()
    r.take(options[0].start(), last)
    tail = re.fullmatch(r"\W*", r.low[last:])
    r.take_words(TEST_WORDS)
    words = re.findall(r"[a-z]+|\d+", ask.group("phrase"))
    numeric = [c.name for c in r.infos if c.numeric]
    named = [c for c in numeric if set(words) <= set(re.findall(r"[a-z]+|\d+", c.lower()))]
    if len(named) != 1 or not words or tail is None:
        return r.result(None, "skew")
    r.take(ask.start("phrase"), ask.end("phrase"))
    symmetric = any(o.group(0) == "symmetric" for o in options)
    spec = TextbookSpec(
        kind="skew",
        want="answer" if symmetric else "statistic",
        columns=named,
        choices=list(r.prompt.choices) or [o.group(0) for o in options],
    )
    return r.result(spec, "skew")
