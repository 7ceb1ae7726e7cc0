"""Clauses of a question that the slot parser has no reading for, so it computes no number.

Every clause of a question changes what its parts mean; a clause no rule places must not be
dropped while the parts are computed on the whole table. Three kinds are recognised here:

- a reference to another row's value: "the average horsepower of all vehicles within the same
  model year as this vehicle" (the year of the row another part finds);
- rows named by a quoted value no column holds ("offenders in 'Assault' category");
- a restriction to named rows ("Only consider countries using Pfizer/BioNTech, Moderna, ...")
  that no filter step, group or test level of the parse holds.

:func:`withhold_unplaced` then turns the parts such a clause touches into ``unknown`` requests
whose reason names the words: those of a correlation whose partner names no column, those that
name a new column no step builds, and every part for a clause that changes them all.

Used by :func:`whyflow.ask.tools.requests.parse_requests`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from whyflow.ask.tools.request_rules import _norm
from whyflow.ask.tools.request_spec import Request

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "PAIRED_OPS",
    "restriction_sentences",
    "unplaced_clause",
    "unplaced_restriction",
    "unread_values",
    "withhold_unplaced",
]

PAIRED_OPS = frozenset({"corr", "corr_p", "slope", "intercept", "r2"})
"""Operations computed on a pair of columns."""
_ONE_COLUMN_VERDICTS = frozenset({"normality", "skew_sign", "skew_normal", "skew_class", "group_test"})

_SAME_AS = re.compile(r"\b(?:the )?same ([a-z][\w ]{0,30}?) as (?:this|that|the|its|his|her|their)\b[^.,;\n]*", re.I)
_ONLY = re.compile(
    r"\bonly (?:consider|include|keep|analy[sz]e|look at|select)\b|\b(?:consider|include|keep) only\b|"
    r"\brestrict\w* (?:the )?(?:analysis|data)\b",
    re.I,
)
_ABOUT_COLUMNS = re.compile(r"\b(?:columns?|variables?|features?|fields?|attributes?)\b", re.I)
_ABOUT_MISSING = re.compile(
    r"\b(?:missing|null|non-null|nan|complete|valid|empty|available|recorded|present|known|reported)\b", re.I
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n")


def unplaced_clause(text: str) -> str | None:
    """Why the question cannot be computed from its slots alone (a reference to another row), or None."""
    same = _SAME_AS.search(text)
    if same:
        return f"'{same.group(0).strip()}' refers to the value of another row, which this parser does not read"
    return None


def _held(step_or_condition: dict[str, Any]) -> list[str]:
    """The values a filter step or a where-condition names (or a test's levels), as lower-case text."""
    out = []
    for key in ("value", "levels"):
        value = step_or_condition.get(key)
        for v in value if isinstance(value, list) else [value]:
            if v is not None and not isinstance(v, bool):
                out.append(str(v).lower())
    return out


def restriction_sentences(text: str) -> list[str]:
    """The sentences that restrict the rows ("Please only consider people no older than 22"),
    other than to rows with values present or to some columns ("only consider the 'Close' column")."""
    return [
        sentence.strip()
        for sentence in _SENTENCE.split(text)
        if _ONLY.search(sentence) and not _ABOUT_MISSING.search(sentence) and not _ABOUT_COLUMNS.search(sentence)
    ]


def unplaced_restriction(text: str, steps: list[dict[str, Any]], options: list[dict[str, Any]]) -> str | None:
    """The "only consider ..." sentence whose rows no filter, group or test level of the parse names."""
    held: list[str] = []
    for step in steps:
        held += _held(step)
    levels = [_held({"levels": opts["levels"]}) for opts in options if opts.get("levels") is not None]
    for opts in options:
        where = opts.get("where")
        for cond in [where] if isinstance(where, dict) else where or []:
            held += _held(cond)
    for sentence in restriction_sentences(text):
        low = sentence.lower()
        tested = any(group and all(v in low for v in group) for group in levels)  # a test of the named groups
        if not tested and not any(v and v in low for v in held):
            return f"'{sentence.strip()[:120]}' restricts the rows in a way this parser does not read"
    return None


def _pairs(request: Request) -> bool:
    """Whether a request is computed on a pair of columns (a correlation, a fit, a verdict on one)."""
    if request.op == "verdict":
        return request.options.get("base") not in _ONE_COLUMN_VERDICTS
    return request.op in PAIRED_OPS or request.op == "strongest_corr"


def _withheld(request: Request, reason: str) -> Request:
    return Request(slot=request.slot, op="unknown", decimals=request.decimals, reason=reason)


def withhold_unplaced(
    requests: list[Request], *, clause: str | None, unbuilt: list[str], side: str, restriction: str | None
) -> list[Request]:
    """The requests with every part an unplaced clause touches left uncomputed, saying why:

    ``clause`` and ``restriction`` (a reference to another row, an unread "only consider") touch
    every part; ``side`` (words of a "correlation between A and B" side naming no column) the parts
    on a pair of columns; ``unbuilt`` (new columns no step makes) the parts whose slot names one.
    """
    out = []
    for r in requests:
        hit = next((n for n in unbuilt if _norm(n) in _norm(r.slot)), None)
        if r.op == "unknown":
            out.append(r)
        elif clause or restriction:
            out.append(_withheld(r, f"{clause}; not computed" if clause else str(restriction)))
        elif side and _pairs(r):
            out.append(_withheld(r, f"'{side}' names no column of the data; the correlation is not computed"))
        elif hit:
            out.append(_withheld(r, f"the new column '{hit}' is not built by this parser; not computed"))
        else:
            out.append(r)
    return out


_VALUE_CUE = re.compile(
    r"\b(?:in|from|for|of|with|within|among|where|whose|by)\s+(?:the\s+)?[\"'`]([^\"'`]{1,40})[\"'`]"
    r"|[\"'`]([^\"'`]{1,40})[\"'`]\s+(?:category|categories|region|group|type|class|section|genre|team|country)\b",
    re.I,
)


_MAKES = re.compile(
    r"\b(?:creat\w*|new|deriv\w*|feature|categori[sz]\w*|bin\w*|assign\w*|label\w*|map\w*|extract\w*|"
    r"replac\w*|renam\w*|encod\w*)\b",
    re.I,
)


def unread_values(text: str, frame: pd.DataFrame, steps: list[dict[str, Any]]) -> list[str]:
    """Quoted words the question names rows by ('offenders in 'Assault' category', 'articles
    from 'ABC News'') that are no column, no value of one and no column a step makes: a
    population the parse cannot place, so no number is computed for all the rows instead."""
    if _MAKES.search(text):
        return []  # a question that makes new columns or labels may name them before they exist
    names = {_norm(str(c)) for c in frame.columns} | {_norm(str(s.get("name", ""))) for s in steps}
    out = []
    for match in _VALUE_CUE.finditer(text):
        quoted = (match.group(1) or match.group(2) or "").strip()
        if not quoted or _norm(quoted) in names or not re.match(r"[A-Z][A-Za-z ]*$", quoted):
            continue  # a code word ('scipy.stats', 'pearson'), an identifier or a column: not a label
        low = quoted.lower()
        held = any(
            low in {str(v).strip().lower() for v in frame[c].dropna().unique()[:5000]}
            for c in frame.columns
            if not _numeric_series(frame[c])
        )
        if not held:
            out.append(quoted)
    return out


def _numeric_series(series: Any) -> bool:
    import pandas as pd

    return bool(pd.api.types.is_numeric_dtype(series))
