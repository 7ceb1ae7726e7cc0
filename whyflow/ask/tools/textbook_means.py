"""Textbook questions on the difference of two means measured on the same rows: "the null
hypothesis that there is no difference in the average <measure> in <A> and <B>" (or "from <A>
and from <B>") asks for a paired t-test of the two numeric columns whose names differ only by the
labels A and B ('dx90_1948' and 'dx90_2018' for 1948 and 2018), read by
:class:`~whyflow.ask.tools.textbook_reader.Reader`.

Where several pairs of columns differ by those labels ('bookstore_new' / 'amazon_new' and
'bookstore_used' / 'amazon_used'), the pair is the one whose other name parts the question names
('90' of 'days exceeding 90°F' picks 'dx90_*' over 'dx70_*'); when the question names none, or
more than one pair, nothing is computed. The words of the measure are placed where the data's
description defines the chosen columns with them ('dx90_1948: Number of days above 90 degrees in
1948'), or where they repeat the description.

Where A and B are no column's labels but two values of one column ("the average weight between
drug and placebo"), the question is Welch's two-sample t-test of the numeric column it names
between those two groups of rows.
"""

from __future__ import annotations

import re

from whyflow.ask.tools.textbook_reader import TEST_WORDS, Reader, TextbookParse
from whyflow.ask.tools.textbook_spec import TextbookSpec, ValueRef
from whyflow.ask.tools.wording import same_root

__all__ = ["paired_difference"]

_CUE = re.compile(r"\bno difference (?:in|between) (?:the )?(?:average|mean)\b")
_COMPARED = re.compile(
    r"\b(?:in|from|between|for) (?:the )?(?:(?P<mod>[a-z]+) )?(?P<a>[a-z0-9]+) and (?:from |in |for )?(?:the )?"
    r"(?P<b>[a-z0-9]+)\b"
)
_ABOVE = frozenset("above over exceeding exceed exceeds exceeded beyond".split())
"""Words for 'more than a threshold': one of them in the question stands for another in a
column's definition ('days exceeding 90°F' for 'days above 90 degrees')."""


def _parts(name: str) -> list[str]:
    """A column name's parts: its words and its numbers ('dx90_1948' -> dx, 90, 1948)."""
    return re.findall(r"[a-z]+|\d+", name.lower())


def _pairs(r: Reader, a: str, b: str) -> list[tuple[str, str]]:
    """Numeric columns (x, y) whose names are the same but for the label a in x and b in y."""
    numeric = [c.name for c in r.infos if c.numeric]
    out: list[tuple[str, str]] = []
    for x in numeric:
        parts = _parts(x)
        if a not in parts:
            continue
        swapped = [b if p == a else p for p in parts]
        out.extend((x, y) for y in numeric if y != x and _parts(y) == swapped)
    return out


def _definition(context: str, column: str) -> str:
    """The description's line that defines ``column`` ('dx90_1948: Number of days ...'), or ''."""
    found = re.search(rf"^\s*{re.escape(column)}\s*[:=–-]\s*(.+)$", context, re.M)
    return found.group(1) if found else ""


def _want(r: Reader) -> str | None:
    """The p-value, the t statistic or its degrees of freedom: what the question asks of the test."""
    if re.search(r"\bdegrees of freedom\b", r.low):
        return "df"
    if r.take_phrase(r"\bt-statistic\b|\bt statistic\b|\btest statistic\b"):
        return "statistic"
    return "p_value" if "p-value" in r.low else None


def _two_sample(r: Reader, after: int, compared: re.Match[str]) -> TextbookParse:
    """'No difference in the average <numeric column> between <A> and <B>', A and B two values of
    one column: Welch's two-sample t-test of the column between the rows of A and those of B."""
    values = [v for v in r.values() if compared.start() <= v.start and v.end <= compared.end()]
    measures = {c for c, s, e in r.columns() if after <= s and e <= compared.start() and r.by_name[c].numeric}
    if len(values) != 2 or len({v.column for v in values}) != 1 or len(measures) != 1:
        return r.result(None, "two_sample_t")
    measure = measures.pop()
    for c, s, e in r.columns():
        if c == measure:
            r.take(s, e)
    for v in values:
        r.take(v.start, v.end)
    r.take_words(TEST_WORDS)
    want = _want(r)
    if want is None or values[0].value == values[1].value:
        return r.result(None, "two_sample_t")
    refs = [ValueRef(column=v.column, value=v.value, words=r.text[v.start : v.end]) for v in values]
    spec = TextbookSpec(
        kind="two_sample_t",
        want=want,  # type: ignore[arg-type]
        columns=[measure, values[0].column],
        values=refs,
        decimals=r.prompt.decimals,
    )
    return r.result(spec, "two_sample_t")


def paired_difference(r: Reader) -> TextbookParse | None:
    """'Is there a difference in the average <measure> in A and B?' as a paired t-test."""
    cue = _CUE.search(r.low)
    if not cue:
        return None
    compared = _COMPARED.search(r.low, cue.end())
    if not compared or compared.group("a") == compared.group("b"):
        return r.result(None, "paired_t")
    a, b = compared.group("a"), compared.group("b")
    r.take(cue.start(), cue.end())
    r.take(compared.start(), compared.start("mod") if compared.group("mod") else compared.start("a"))
    r.take(compared.start("a"), compared.end())
    pairs = _pairs(r, a, b)
    if not pairs:
        return _two_sample(r, cue.end(), compared)
    words = [(m.group(0), m.start(), m.end()) for m in re.finditer(r"[a-z]+|\d+", r.low)]
    if len(pairs) > 1:  # the pair whose own name parts the question names
        rests = [set(_parts(x)) - {a} for x, _ in pairs]
        shared = set.intersection(*rests)
        said = {w for w, _, _ in words}
        pairs = [p for p, rest in zip(pairs, rests, strict=True) if rest - shared and rest - shared <= said]
    if len(pairs) != 1:
        return r.result(None, "paired_t")
    x, y = pairs[0]
    own = set(_parts(x)) - {a}
    for w, s, e in words:
        if w in own and cue.end() <= s < compared.start():
            r.take(s, e)
            unit = re.match(r"\s*°\s*[fc]\b", r.low[e:])
            if unit:
                r.take(e, e + unit.end())
    defined = re.findall(r"[A-Za-z]+", f"{_definition(r.prompt.context, x)} {_definition(r.prompt.context, y)}")
    above = any(d.lower() in _ABOVE for d in defined)
    for w, s, e in words:
        if cue.end() <= s < compared.start() and len(w) >= 3:
            if any(same_root(w, d.lower()) for d in defined) or (above and w in _ABOVE):
                r.take(s, e)
    for c, s, e in r.columns():  # 'for NOAA stations': a column of labels, one a row, names the rows paired
        info = r.by_name[c]
        if not info.numeric and (info.n_unique or 0) > 30 and s >= compared.end():
            r.take(s, e)
    r.take_words(TEST_WORDS)
    want = _want(r)
    if want is None:
        return r.result(None, "paired_t")
    spec = TextbookSpec(kind="paired_t", want=want, columns=[x, y], decimals=r.prompt.decimals)  # type: ignore[arg-type]
    return r.result(spec, "paired_t")
