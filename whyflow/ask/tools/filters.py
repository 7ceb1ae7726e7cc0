"""Row filters read from a question: 'older than 60', 'with 4 cylinders', 'female', 'non-smokers'.

A filter is kept only when the question states it about a column the chosen worked example does
not already use: 'average fare by sex' groups by sex, 'average fare of female passengers'
filters on it. Filters become plain pandas lines with the values as Python literals.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from whyflow.ask.tools.slots import STOP_WORDS, WORD_RE, ColumnInfo, Mention, tokens

__all__ = ["COMPARISON_PHRASES", "Filter", "find_filters", "comparing"]

COMPARISON_PHRASES: tuple[tuple[str, str], ...] = (
    ("greater than or equal to", ">="),
    ("less than or equal to", "<="),
    ("at least", ">="),
    ("at most", "<="),
    ("no more than", "<="),
    ("no less than", ">="),
    ("greater than", ">"),
    ("more than", ">"),
    ("larger than", ">"),
    ("higher than", ">"),
    ("older than", ">"),
    ("above", ">"),
    ("over", ">"),
    ("exceeding", ">"),
    ("less than", "<"),
    ("lower than", "<"),
    ("smaller than", "<"),
    ("younger than", "<"),
    ("below", "<"),
    ("under", "<"),
    ("equal to", "=="),
    ("equals", "=="),
    (">=", ">="),
    ("<=", "<="),
    ("==", "=="),
    (">", ">"),
    ("<", "<"),
    ("=", "=="),
)


class Filter(BaseModel):
    """A row filter read from the question: ``column op value``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    column: str
    op: Literal[">", ">=", "<", "<=", "=="]
    value: float | str
    source: Literal["comparison", "count", "flag", "value"] = "comparison"

    def code(self) -> str:
        """A pandas line applying the filter to ``df`` (values as literals, never spliced text)."""
        col = repr(self.column)
        if isinstance(self.value, str):
            return f"df = df[df[{col}].astype(str).str.strip().str.lower() == {self.value.lower()!r}]"
        return f"df = df[pd.to_numeric(df[{col}], errors='coerce') {self.op} {self.value!r}]"

    def describe(self) -> str:
        """The filter in words, for caveats."""
        return f"{self.column} {self.op} {self.value}"


def find_filters(
    question: str, columns: Sequence[ColumnInfo], mentions: Sequence[Mention], used: set[str]
) -> list[Filter]:
    """Row filters the question states: '<column> above 30', 'where fare > 10', or a category value named.

    A category value filters only when it is a whole word of 3+ letters, belongs to exactly one
    column, and that column is not already one of the template's slots (so 'male vs female' in a
    comparison does not become a filter).
    """
    filters: list[Filter] = []
    by_name = {c.name: c for c in columns}
    lower = question.lower()
    word_pos = [m.start() for m in WORD_RE.finditer(question)]
    for mention in mentions:
        if mention.column in used or mention.via == "value":
            continue
        head = lower[word_pos[mention.start] : word_pos[mention.start] + 40] if mention.start < len(word_pos) else ""
        age = re.match(r"(older|younger)\s+than\s+(-?\d+(?:\.\d+)?)", head)
        if age:
            op = ">" if age.group(1) == "older" else "<"
            filters.append(Filter(column=mention.column, op=op, value=float(age.group(2))))  # type: ignore[arg-type]
            continue
        tail_start = word_pos[mention.end] if mention.end < len(word_pos) else len(question)
        tail = lower[tail_start : tail_start + 40]
        for phrase, op in COMPARISON_PHRASES:
            m = re.match(
                r"\s*(?:is\s+|are\s+|was\s+|of\s+)?" + re.escape(phrase) + r"\s*(-?\d+(?:,\d{3})*(?:\.\d+)?)", tail
            )
            if m:
                filters.append(Filter(column=mention.column, op=op, value=float(m.group(1).replace(",", ""))))  # type: ignore[arg-type]
                break
        else:
            named = _named_value(tail, by_name.get(mention.column))
            if named is not None:
                source = "count" if isinstance(named, float) else "value"
                filters.append(Filter(column=mention.column, op="==", value=named, source=source))
    comparing = bool(_COMPARING.search(lower))
    filters.extend(_period_filters(lower, columns, used, filters))
    for mention in mentions:  # 'how many passengers survived': a 0/1 column named as a verb is a filter
        info = by_name.get(mention.column)
        if (
            mention.column in used
            or info is None
            or not _binary(info)
            or any(f.column == mention.column for f in filters)
        ):
            continue
        before = (
            lower[max(0, word_pos[mention.start] - 20) : word_pos[mention.start]]
            if mention.start < len(word_pos)
            else ""
        )
        op_words = lower[word_pos[mention.start] :] if mention.start < len(word_pos) else ""
        if re.match(
            r"\S+\s+(?:(?:is|are|was|were)\s+(?:-?\d|equal|greater|less|above|below|over|under)|[<>=]|(?:of|by|per)\b)",
            op_words,
        ):
            continue
        negated = bool(re.search(_NEGATION, before))
        word = (
            re.escape(question[word_pos[mention.start] :].split()[0].strip("?.,!;:").lower())
            if mention.start < len(word_pos)
            else ""
        )
        polarities = (
            {bool(re.search(_NEGATION, lower[max(0, m.start() - 20) : m.start()])) for m in re.finditer(word, lower)}
            if word
            else set()
        )
        if len(polarities) == 2 or comparing:  # 'smokers and non-smokers', 'versus those who did not' compare
            continue
        kept: float | str = (0.0 if negated else 1.0) if info.numeric else _flag_word(info, not negated)
        filters.append(Filter(column=mention.column, op="==", value=kept, source="flag"))
    for mention in mentions:  # 'cars that have 4 cylinders', 'with 2 children'
        if mention.column in used or any(f.column == mention.column for f in filters):
            continue
        before = lower[: word_pos[mention.start]] if mention.start < len(word_pos) else lower
        count = re.search(r"\b(?:have|has|had|having|with|of)\s+(-?\d+(?:\.\d+)?)\s*$", before)
        if count:
            filters.append(Filter(column=mention.column, op="==", value=float(count.group(1)), source="count"))
    inside = {i for m in mentions if m.via != "value" for i in range(m.start, m.end)}  # 'hotel types' names a column
    raw = [w.group(0).lower() for w in WORD_RE.finditer(question)]
    single = tokens(question)
    words = {w for i, w in enumerate(single) if i not in inside} | {w for i, w in enumerate(raw) if i not in inside}
    owners: dict[str, list[ColumnInfo]] = {}
    for column in columns:
        for value in column.values:
            v = value.strip().lower()
            if len(v) >= 3 and v.isalpha() and v not in STOP_WORDS and v in words:
                owners.setdefault(v, []).append(column)
    named_per_column: dict[str, int] = {}
    for cols in owners.values():
        if len(cols) == 1:
            named_per_column[cols[0].name] = named_per_column.get(cols[0].name, 0) + 1
    for value, cols in owners.items():
        if len(cols) != 1 or named_per_column[cols[0].name] != 1:  # 'North and South' compares; it does not filter
            continue
        if cols[0].name not in used and not any(f.column == cols[0].name for f in filters):
            original = next(x for x in cols[0].values if x.strip().lower() == value)
            filters.append(Filter(column=cols[0].name, op="==", value=original, source="value"))
    return filters


_COMPARING = re.compile(
    r"\b(?:versus|vs\.?|compared (?:to|with)|or not|those who (?:did|do|does|were|are) not|those without)\b"
)


def _period_filters(lower: str, columns: Sequence[ColumnInfo], used: set[str], taken: Sequence[Filter]) -> list[Filter]:
    """'in 2020', 'during 1999': a year that is a value of exactly one time column keeps that year."""
    out: list[Filter] = []
    for match in re.finditer(r"\b(?:in|during|for|of)\s+((?:1[6-9]|20)\d\d)\b", lower):
        owners = [
            c for c in columns if c.temporal and c.numeric and match.group(1) in {v.split(".")[0] for v in c.values}
        ]
        if len(owners) == 1 and owners[0].name not in used and all(f.column != owners[0].name for f in [*taken, *out]):
            out.append(Filter(column=owners[0].name, op="==", value=float(match.group(1)), source="count"))
    return out


def comparing(question: str) -> bool:
    """Whether the question compares two sides ('versus', 'compared with', 'those who did not')."""
    return bool(_COMPARING.search(question.lower()))


def _named_value(tail: str, info: ColumnInfo | None) -> str | float | None:
    """A value of the column stated right after it: 'Sex is F', 'region = West', 'product B',
    'a star rating of 5' (a number only after is/of/=, and only for a numeric column)."""
    if info is None:
        return None
    number = re.match(r"\s*(?:is|of|=|==|equals|equal to)\s*(-?\d+(?:\.\d+)?)(?![\w.%])", tail)
    if number and info.numeric:
        return float(number.group(1))
    m = re.match(r"\s*(?:(?:is|=|==|equals|equal to|of)\s*)?['\"]?([^\s'\")?,.;]+)", tail)
    if not m:
        return None
    for value in info.values:
        if value.strip().lower() == m.group(1).lower() and not value.strip().isdigit():
            return value
    return None


_NEGATION = r"\b(?:not|no|non|never|didn't|did not|don't|n't)\W*(?:\w+\W+)?$"
_FLAGS = ({"yes", "no"}, {"true", "false"}, {"y", "n"})


def _binary(info: ColumnInfo) -> bool:
    """A 0/1, boolean or yes/no column."""
    if info.dtype.lower().startswith("bool"):
        return True
    if info.numeric:
        return info.n_unique == 2 and {v.split(".")[0] for v in info.values} == {"0", "1"}
    return {v.strip().lower() for v in info.values} in _FLAGS


def _flag_word(info: ColumnInfo, positive: bool) -> str:
    """The value of a yes/no column that means yes (or no), as the data spells it."""
    wanted = ("yes", "true", "y") if positive else ("no", "false", "n")
    for value in info.values:
        if value.strip().lower() in wanted:
            return value
    return wanted[0]
