"""The rows a slot's own words select: ``mean_fare_class1`` (Pclass is 1), ``not_graduate_mean_loan``
(Education is "Not Graduate"), ``mean_familysize_did_not_survive`` (Survived is 0),
``average_age_male_class2`` (Sex is male and Pclass is 2). Used by :mod:`whyflow.ask.tools.requests`.

Every leftover word of the slot must be read as part of a condition; otherwise there is no group
and the request is left uncomputed rather than computed on the wrong rows.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from whyflow.ask.tools.request_rules import _ORDINALS, words_of
from whyflow.ask.tools.slots import ColumnInfo

if TYPE_CHECKING:
    import pandas as pd

_NEGATIONS = frozenset({"not", "non", "no", "did", "didnt", "does", "doesnt", "were", "was", "is", "are"})
_FILLER = frozenset({"passengers", "passenger", "people", "persons", "group", "those", "who", "with", "without"})


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def _binary_values(frame: pd.DataFrame, column: str) -> tuple[Any, Any] | None:
    """The (yes, no) values of a 0/1, boolean or yes/no column."""
    values = {_plain(v) for v in frame[column].dropna().unique()}
    for yes, no in ((1, 0), (True, False), ("yes", "no"), ("Yes", "No"), ("Y", "N"), ("True", "False")):
        if values == {yes, no}:
            return yes, no
    return None


def _value_match(words: list[str], start: int, frame: pd.DataFrame, info: ColumnInfo) -> tuple[int, Any] | None:
    """The longest run of words from ``start`` that spells one value of the column: (length, value)."""
    by_text: dict[str, Any] = {}
    for value in frame[info.name].dropna().unique():
        text = "".join(words_of(str(value).removesuffix(".0")))
        if text:
            by_text.setdefault(text, _plain(value))
    for end in range(len(words), start, -1):
        joined = "".join(words[start:end])
        if joined in by_text and (not joined.isdigit() or end - start == 1):
            return end - start, by_text[joined]
    return None


def group_conditions(
    left: list[str], frame: pd.DataFrame, infos: list[ColumnInfo], exclude: set[str]
) -> list[dict[str, Any]] | None:
    """One ``{"column", "value"}`` per condition the leftover words state, or None when a word is
    not read. A value is a run of words that spells it (``not graduate``); a 0/1 column is named by
    its own word (``survived``), negated by a word before it (``did not survive``); a number names a
    value of the column whose name is next to it (``class1``, ``third class``)."""
    words = [_ORDINALS.get(w, w) for w in left]
    if not words:
        return None
    columns = [c for c in infos if c.name in frame.columns and c.name not in exclude and (c.n_unique or 0) <= 50]
    conditions: list[dict[str, Any]] = []
    used_columns: set[str] = set()
    i = 0
    while i < len(words):
        if words[i] in {w for c in used_columns for w in words_of(c)}:  # "eligible for free agency": one column's name
            i += 1
            continue
        found: tuple[int, dict[str, Any]] | None = None
        nulls = _null_condition(words, i, frame, infos, exclude)  # "tree_null", "tree_notnull": missing or not
        if nulls is not None:
            conditions.append(nulls[1])
            used_columns.add(nulls[1]["column"])
            i += nulls[0]
            continue
        for info in columns:
            if info.name in used_columns:
                continue
            name_words = set(words_of(info.name))
            binary = _binary_values(frame, info.name)
            j = i
            negated = False
            while j < len(words) and words[j] in _NEGATIONS:
                negated = negated or words[j] in ("not", "non", "no", "didnt", "doesnt")
                j += 1
            if binary and j < len(words) and any(words[j][:5] == nw[:5] and len(words[j]) > 3 for nw in name_words):
                found = (j + 1 - i, {"column": info.name, "value": binary[1] if negated else binary[0]})
                break
            named = i < len(words) and any(words[i] in nw or nw in words[i] for nw in name_words if len(words[i]) > 2)
            start = i + 1 if named else i
            match = _value_match(words, start, frame, info) if start < len(words) else None
            if match and (
                not str(match[1]).lstrip("-").replace(".", "").isdigit()
                or named
                or (i > 0 and any(words[i - 1] in nw for nw in name_words))
            ):
                found = (start - i + match[0], {"column": info.name, "value": match[1]})
                break
        if found is None:
            if words[i] in _FILLER or (words[i] in name_words_all(columns) and conditions):
                i += 1
                continue
            return None
        conditions.append(found[1])
        used_columns.add(found[1]["column"])
        i += found[0]
    return conditions or None


def name_words_all(columns: list[ColumnInfo]) -> set[str]:
    """Every word of the candidate columns' names (``class`` after ``class1`` was read)."""
    return {w for c in columns for w in words_of(c.name)}


def stated_filters(text: str, frame: pd.DataFrame, used: set[str]) -> list[dict[str, Any]]:
    """Row filters the question states in words for columns no request computes on or groups by
    ("male passengers who survived", "hotels with a star rating of 5"), as ``filter`` steps."""
    from whyflow.ask.tools.filters import find_filters
    from whyflow.ask.tools.slots import as_column_infos, find_columns, value_mentions

    infos = as_column_infos(frame)
    named = find_columns(text, infos)
    mentions = sorted([*named, *value_mentions(text, infos, named)], key=lambda m: m.start)
    handled = {
        m.column
        for sentence in re.split(r"(?<=[.!?])\s+|\n", text)  # "replace missing Self_Employed"
        if re.search(r"missing|\bfill|replac|imput|encod|convert|transform|normali[sz]|scal", sentence, re.I)
        for m in find_columns(sentence, infos)
    }
    unused = [m for m in mentions if m.column not in used | handled]
    steps = []
    steps += _named_filters(text, frame, infos, used | handled)
    taken = {st["column"] for st in steps}
    for found in find_filters(text, infos, [m for m in unused if m.column not in taken], used | handled | taken):
        value: Any = found.value
        if found.source == "value" and not re.search(
            rf"(?<!\bper )(?<!\beach )(?<!\bevery )(?<!\ba )(?<!\ban )"
            rf"\b{re.escape(str(value))}\b",
            text,
            re.I,
        ):
            continue  # "hotels", "per hotel", "a hotel" name the rows; a category is named by its own word
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        steps.append({"kind": "filter", "column": found.column, "op": found.op, "value": value})
    return steps


_COMPARE = (
    ("greater than or equal to", ">="),
    ("less than or equal to", "<="),
    ("greater than", ">"),
    ("higher than", ">"),
    ("more than", ">"),
    ("above", ">"),
    ("less than", "<"),
    ("lower than", "<"),
    ("below", "<"),
)


def _named_filters(text: str, frame: pd.DataFrame, infos: list[ColumnInfo], used: set[str]) -> list[dict[str, Any]]:
    """Filters find_filters leaves out: a quoted value next to its column's name ("the 'Assault'
    category"), and a column compared with its own statistic ("a fare greater than the average fare")."""
    from whyflow.ask.tools.slots import find_columns

    steps: list[dict[str, Any]] = []
    for m in re.finditer(
        r"['\"]([^'\"]{2,40})['\"]\s+(\w+)|\b(\w+)\s+(?:of\s+|is\s+|=\s*)?['\"]([^'\"]{2,40})['\"]", text
    ):
        value, word = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
        for info in infos:
            if info.name in used or info.name not in frame.columns or info.numeric or (info.n_unique or 0) > 200:
                continue
            if not any(word.lower() in w or w in word.lower() for w in words_of(info.name) if len(w) > 3):
                continue
            hits = [v for v in frame[info.name].dropna().unique() if str(v).strip().lower() == value.strip().lower()]
            if hits and all(st["column"] != info.name for st in steps):
                steps.append({"kind": "filter", "column": info.name, "op": "==", "value": _plain(hits[0])})
    low = text.lower()
    for m in re.finditer(r"\b(first|second|third|1st|2nd|3rd)[- ]+(\w+)", low):  # "in first class": Pclass == 1
        named = find_columns(m.group(2), infos)
        number = int(_ORDINALS[m.group(1)])
        if len(named) == 1 and named[0].column in frame.columns and named[0].column not in used:
            column = named[0].column
            values = {_plain(v) for v in frame[column].dropna().unique()}
            if number in values and len(values) <= 20 and all(st["column"] != column for st in steps):
                steps.append({"kind": "filter", "column": column, "op": "==", "value": number})
    for m in re.finditer(
        r"\bthe (\w+) with the (highest|largest|maximum|greatest|lowest|smallest|minimum) "
        r"(?!(?:average|mean|total|number|median|sum)\b)([\w .]{2,40})",
        low,
    ):
        named = find_columns(text[m.start(3) : m.end()], infos)  # "the storm with the highest category": that row
        if named and named[0].column not in used and _plain_numeric(frame, named[0].column) and not steps:
            steps.append(
                {
                    "kind": "extreme_row",
                    "column": named[0].column,
                    "largest": m.group(2) in ("highest", "largest", "maximum", "greatest"),
                }
            )
            break
    for pattern, op in (
        (r"\b((?:1[6-9]|20)\d\d) and (?:beyond|after|later|onwards?|above)\b", ">="),
        (r"\bsince ((?:1[6-9]|20)\d\d)\b", ">="),
        (r"\b(?:after|beyond) ((?:1[6-9]|20)\d\d)\b", ">"),
        (r"\bbefore ((?:1[6-9]|20)\d\d)\b", "<"),
    ):
        year = re.search(pattern, low)  # "for the years 2000 and beyond": the one time column holding that year
        owners = [
            c
            for c in infos
            if year
            and c.temporal
            and c.numeric
            and c.name not in used
            and int(year.group(1)) in {_plain(v) for v in frame[c.name].dropna().unique()}
        ]
        if year and len(owners) == 1:
            steps.append({"kind": "filter", "column": owners[0].name, "op": op, "value": int(year.group(1))})
            break
    for phrase, op in _COMPARE:
        for m in re.finditer(rf"\b{phrase}\s+the\s+(average|mean|median)\s+([\w .]{{2,40}})", low):
            before = find_columns(text[max(0, m.start() - 40) : m.start()], infos)
            after = find_columns(text[m.end(2) - len(m.group(2)) : m.end()], infos)
            compared = after[0].column if after else None
            if (
                before
                and compared
                and before[-1].column == compared
                and compared not in used | {x["column"] for x in steps}
            ):
                stat = "median" if m.group(1) == "median" else "mean"
                steps.append({"kind": "filter", "column": compared, "op": op, "value": 0, "stat": stat})
    return steps


def _plain_numeric(frame: pd.DataFrame, column: str) -> bool:
    import pandas as pd

    return column in frame.columns and bool(pd.api.types.is_numeric_dtype(frame[column]))


_NULL = {
    "null": True,
    "missing": True,
    "nan": True,
    "na": True,
    "notnull": False,
    "nonnull": False,
    "notna": False,
    "nonmissing": False,
}


def _null_condition(
    words: list[str], i: int, frame: pd.DataFrame, infos: list[ColumnInfo], exclude: set[str]
) -> tuple[int, dict[str, Any]] | None:
    """A column's word followed by ``null`` / ``notnull`` / ``not null``: rows where it is (not) missing."""
    for info in infos:
        if info.name in exclude or info.name not in frame.columns or words[i] not in words_of(info.name):
            continue
        rest = words[i + 1 : i + 3]
        if rest[:2] in (["not", "null"], ["not", "missing"], ["non", "null"], ["not", "na"]):
            return 3, {"column": info.name, "isna": False}
        if rest[:1] and rest[0] in _NULL:
            return 2, {"column": info.name, "isna": _NULL[rest[0]]}
    return None
