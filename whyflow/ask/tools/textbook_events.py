"""Textbook questions on the union of events: "the probability a randomly selected loan is for
someone who has a mortgage or owns her home" is P(A or B), the share of rows holding either
value, read by :class:`~whyflow.ask.tools.textbook_reader.Reader`.

The events are category values named by their words, joined by 'or' (', ' between more than
two). A value may be named by a verb whose lemma is the one-word label ('owns' for 'own'), and
the noun right after such a value is placed where it is part of the column's name ('her home' of
'homeownership'). A question that also conditions ('given', 'and', 'among') is not a union: it
is left to the other readers.
"""

from __future__ import annotations

import re

from whyflow.ask.tools.textbook_reader import TEST_WORDS, Match, Reader, TextbookParse, labels, stance
from whyflow.ask.tools.textbook_spec import TextbookSpec, ValueRef
from whyflow.ask.tools.wording import roots

__all__ = ["union"]

_CUE = re.compile(
    r"\bprobability (?:that |of )?(?:a |an )?(?:randomly (?:chosen|selected|drawn|picked) )?(?P<unit>[a-z]+)?\b"
)
_CONDITIONING = re.compile(r"\b(?:given|and|among|if|conditional)\b")
_POSSESSIVE = re.compile(r"\s+(?:her|his|their|its|a|an|the)\s+([a-z]{4,})\b")


def _verb_values(r: Reader, taken: list[Match]) -> list[Match]:
    """One-word labels named by a verb form of them ('owns' for 'own'), outside ``taken``."""
    out: list[Match] = []
    for m in re.finditer(r"[a-z]+", r.low):
        if any(t.start <= m.start() < t.end for t in taken):
            continue
        forms = roots(m.group(0)) - {m.group(0)}
        owners = [
            (c.name, v) for c in r.infos for v in labels(c) if " " not in v.strip() and v.strip().lower() in forms
        ]
        if len(owners) == 1:
            out.append(Match(owners[0][0], owners[0][1], m.start(), m.end()))
    return out


def union(r: Reader) -> TextbookParse | None:
    """P(A or B [or C]): the share of rows holding any of the named values."""
    cue = _CUE.search(r.low)
    if not cue or " or " not in r.low[cue.end() :] or _CONDITIONING.search(r.low):
        return None
    named = r.values()
    matches = sorted(named + _verb_values(r, named), key=lambda m: m.start)
    if len(matches) < 2:
        return None
    own = [(s, e) for c, s, e in r.columns() if any(m.column == c and e <= m.start for m in matches)]
    between = []
    for a, b in zip(matches, matches[1:], strict=False):
        gap = r.low[a.end : b.start]
        for s, e in own:  # 'rent or grade b': the column's own name before its value
            if a.end <= s and e <= b.start:
                gap = gap[: s - a.end] + " " * (e - s) + gap[e - a.end :]
        between.append(gap)
    if not all(re.fullmatch(r"\W*(?:or|,)\W*(?:(?:has|have|is|are|a|an|the)\s+)*", g) for g in between):
        return None
    for s, e in own:
        r.take(s, e)
    r.take(cue.start(), cue.end("unit") if cue.group("unit") else cue.end())
    for gap_start, gap_end in ((a.end, b.start) for a, b in zip(matches, matches[1:], strict=False)):
        r.take(gap_start, gap_end)
    r.take_phrase(r"\b(?:from|in|of) (?:the|this) (?:data set|dataset|data|sample|survey|study)\b")
    r.take_phrase(r"\bis for (?:someone|a person|one|somebody) (?:who|that)\b")
    r.take_words(TEST_WORDS | {"compute", "calculate", "determine", "find", "estimate", "probability"})
    for m in matches:
        r.take(m.start, m.end)
        stance(r, m.start)
        article = re.search(r"\b(?:has|have|is|are)?\s*\b(?:a|an|the)\s+$", r.low[: m.start])
        if article:  # 'has a mortgage': the article of a value, never a value itself
            r.take(article.start(), m.start)
        after = _POSSESSIVE.match(r.low, m.end)
        if after and after.group(1) in m.column.lower():  # 'owns her home' for 'homeownership'
            r.take(m.end, after.end())
    refs = [ValueRef(column=m.column, value=m.value, words=r.text[m.start : m.end]) for m in matches]
    if len({(v.column, v.value) for v in refs}) != len(refs):
        return r.result(None, "union")
    spec = TextbookSpec(kind="union", values=refs, decimals=r.prompt.decimals)
    return r.result(spec, "union")
