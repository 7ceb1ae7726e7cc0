"""Data steps a question states for all of its parts, read once: missing values filled ("replace
missing values in LoanAmount with the median"), new columns derived ("a new feature 'TotalIncome'
by adding ApplicantIncome and CoapplicantIncome", "'Trips per Membership' is the ratio of A to B"),
and columns transformed in place ("apply a natural log transformation to horsepower"). Used by
:mod:`whyflow.ask.tools.requests`; computed by ``request_ops.apply_step``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from whyflow.ask.tools.request_rules import _norm, _numeric, _outlier_rule, quoted_extension
from whyflow.ask.tools.slots import ColumnInfo, find_columns

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "FormulaError",
    "cleaning_steps",
    "declared_names",
    "derive_steps",
    "drop_step",
    "fill_steps",
    "formula_steps",
    "with_durations",
]

_SENTENCES = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'`])|\n")  # not inside "Inc. (AAPL)" or "No. of cases"
_NEW = re.compile(
    r"\bnew (?:feature|column|variable)|\bcreate\b|\bgenerate\b|"
    r"\b(?:calculate|compute|define) (?:a new|the ['\"`])",
    re.I,
)
_FUNCTIONS = (
    (r"\bsum\b|\badd(?:ing|ed)?\b|\bplus\b|\btotal of\b", "sum"),
    (r"\bdifference\b|\bsubtract", "difference"),
    (r"\bratio\b|\bdivid|\bdivision of\b", "ratio"),
    (r"\bproduct\b|\bmultipl", "product"),
    (r"\baverage (?:of|stock|value|price)\b|\bmean of\b", "mean"),
    (r"\blog10\b|\bbase 10\b|\blogarithm", "log10"),
)
_QUOTED = re.compile(r"['\"`]([^'\"`]{1,60})['\"`]")


def _function(low: str) -> str | None:
    """The operation a sentence names first ("by dividing A by B. Add a constant" is a ratio)."""
    found = [(m.start(), fn) for pattern, fn in _FUNCTIONS for m in [re.search(pattern, low)] if m]
    return min(found)[1] if found else None


def _guards(text: str, fn: str) -> dict[str, Any]:
    """How a ratio treats a zero denominator: a constant added to it, or zero where it is zero."""
    low = text.lower()
    out: dict[str, Any] = {}
    constant = re.search(
        r"add(?:ing)? a small (?:constant|value|number|epsilon)[^0-9]{0,20}\(?([0-9.]+e-?\d+|0\.0*1)\)?"
        r"[^.]{0,40}denominator",
        low,
    )
    if fn == "ratio" and constant:
        out["epsilon"] = float(constant.group(1))
    if (
        fn == "ratio"
        and re.search(
            r"(?:division|dividing|divisions) by zero|(?:of|is) zero[^.]{0,60}(?:ratio|defined)|"
            r"infinit\w*[^.]{0,40}\bzero",
            low,
        )
        and re.search(
            r"\b(?:as|with|to be) zero\b|"
            r"defined as zero|with zero",
            low,
        )
    ):
        out["zero_for_infinite"] = True
    return out


def declared_names(text: str, infos: list[ColumnInfo]) -> list[str]:
    """Quoted names of new columns the question makes ("create a new feature 'FamilySize'")."""
    names = {c.name for c in infos}
    return [q for s in _SENTENCES.split(text) if _NEW.search(s) for q in _QUOTED.findall(s) if q not in names]


class FormulaError(ValueError):
    """A stated formula for a new column holds a term that is neither a column nor a number."""


_TERM_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def formula_steps(text: str, infos: list[ColumnInfo]) -> list[dict[str, Any]]:
    """New columns stated as a sum: "FamilySize = IsAlone + 1 (for a sibling) + 1", each term a
    column (by its exact name) or a number; remarks in parentheses are no terms. Only names the
    question declares as new. Raises FormulaError when a term is neither (or the formula is not a sum)."""
    by_norm = {_norm(c.name): c.name for c in infos if c.numeric}
    steps: list[dict[str, Any]] = []
    for name in declared_names(text, infos):
        match = re.search(rf"(?<![\w'\"`]){re.escape(name)}['\"`]?\s*=\s*([^\n;]+?)(?:\.(?:\s|$)|$|\n)", text)
        if match is None:
            continue
        expression = re.sub(r"\([^)]*\)", " ", match.group(1))
        if re.search(r"[-*/^×÷]", expression):
            raise FormulaError(f"'{name} = {expression.strip()}' is not a sum this parser reads")
        columns, constant = [], 0.0
        for term in (t.strip() for t in expression.split("+")):
            if _TERM_NUMBER.fullmatch(term):
                constant += float(term)
            elif _norm(term) in by_norm:
                columns.append(by_norm[_norm(term)])
            else:
                raise FormulaError(f"'{term}' in '{name} = {expression.strip()}' is neither a column nor a number")
        if columns:
            steps.append({"kind": "derive", "name": name, "fn": "sum", "columns": columns, "constant": constant})
    return steps


def derive_steps(text: str, infos: list[ColumnInfo]) -> list[dict[str, Any]]:
    """New columns the question defines: "a new feature 'X' ... the sum/difference/ratio of A and B";
    a name declared in one sentence ("a new column called 'X'") may be defined in a later one
    ("'X' is calculated as the ratio of A to B"). A sum or product takes every column named."""
    steps: list[dict[str, Any]] = []
    names = {c.name for c in infos}
    sentences = _SENTENCES.split(text)
    declared = [q for s in sentences if _NEW.search(s) for q in _QUOTED.findall(s) if q not in names]
    for sentence in sentences:
        low = sentence.lower()
        quoted = [q for q in _QUOTED.findall(sentence) if q not in names]
        if not (_NEW.search(low) or (quoted and quoted[0] in declared)):
            continue
        clause = re.split(r",?\s*(?:and )?then\b", sentence)[0]  # "adding A and B, then correlate it with C"
        fn = _function(clause.lower())
        unquoted = clause
        for name in quoted:  # the new column's own name ("power-to-weight") names no input
            unquoted = unquoted.replace(name, " ")
        cols = list(dict.fromkeys(m.column for m in find_columns(unquoted, infos) if _numeric(m.column, infos)))
        need = 1 if fn in ("log10", "log") else 2
        if fn and quoted and len(cols) >= need and all(s["name"] != quoted[0] for s in steps):
            take = cols if fn in ("sum", "product", "mean") else cols[:need]
            steps.append({"kind": "derive", "name": quoted[0], "fn": fn, "columns": take, **_guards(text, fn)})
    if not steps and not declared:  # "create a new feature that represents the average of A, B and C": unnamed
        for sentence in sentences:
            clause = re.split(r",?\s*(?:and )?then\b", sentence)[0]
            fn = _function(clause.lower())
            cols = list(dict.fromkeys(m.column for m in find_columns(clause, infos) if _numeric(m.column, infos)))
            if (
                re.search(r"\bnew (?:feature|column|variable)\b", clause, re.I)
                and fn in ("sum", "product", "mean")
                and len(cols) >= 2
            ):
                steps.append({"kind": "derive", "name": "new_feature", "fn": fn, "columns": cols})
                break
    return steps + _transform_steps(text, infos, {s["name"] for s in steps})


def _transform_steps(text: str, infos: list[ColumnInfo], taken: set[str]) -> list[dict[str, Any]]:
    """A column replaced by its logarithm: "apply a (natural) log transformation to the X column",
    "transform X by applying the logarithm (base 10)"; the natural log unless base 10 is stated."""
    steps: list[dict[str, Any]] = []
    for sentence in _SENTENCES.split(text):
        low = sentence.lower()
        if not re.search(
            r"\blog(?:arithm(?:ic)?)?[- ]?transform|\btransform\w*\b[^.]{0,60}\blog(?:arithm)?\b|"
            r"\bapply\w*\b[^.]{0,30}\b(?:natural )?log(?:arithm)?\b",
            low,
        ):
            continue
        if re.search(r"\bif\b|\bnew (?:feature|column)", low):  # conditional, or a new column: not in place
            continue
        cols = [m.column for m in find_columns(sentence, infos)]
        cols = [c for c in cols if next((i.numeric for i in infos if i.name == c), False) and c not in taken]
        if len(cols) != 1 or any(s["name"] == cols[0] for s in steps):
            continue
        base10 = bool(re.search(r"base[- ]?10|log10", text.lower()))
        steps.append({"kind": "derive", "name": cols[0], "fn": "log10" if base10 else "log", "columns": cols})
    return steps


def fill_steps(text: str, infos: list[ColumnInfo]) -> list[dict[str, Any]]:
    """Missing values the question fills: "replace missing values in LoanAmount with the median",
    "fill the missing values with the mean of their respective columns"."""
    steps: list[dict[str, Any]] = []
    for sentence in _SENTENCES.split(text):
        low = sentence.lower()
        if not (re.search(r"\b(?:fill\w*|replac\w*|imput\w*)\b", low) and re.search(r"missing|null|nan\b|\bna\b", low)):
            continue
        start = 0
        for how in re.finditer(r"\bwith (?:the )?(?:column'?s? )?(mean|median|mode)\b", low):
            cols = [m.column for m in find_columns(sentence[start : how.start()], infos)]
            if cols:
                steps.append({"kind": "fillna", "column": cols[-1], "how": how.group(1)})
            elif re.search(r"respective|each column|all (?:the )?columns|their", low):
                steps += [{"kind": "fillna", "column": c.name, "how": how.group(1)} for c in infos if c.numeric]
            start = how.end()
    return steps


_DROP_WORD = re.compile(r"\b(?:remov|delet|drop|exclud|discard|eliminat)\w*\b", re.I)
_FILL_WORD = re.compile(r"\b(?:fill|replac|imput)\w*\b", re.I)
_MISSING = re.compile(r"\b(?:missing|null|nan|na|empty)\b", re.I)


def _first_about_missing(text: str, word: re.Pattern[str]) -> int | None:
    """Where the text first names an action (``word``) in a sentence about missing values."""
    at = 0
    for sentence in _SENTENCES.split(text):
        start = text.find(sentence, at)
        at = max(at, start)
        hit = word.search(sentence)
        if hit and _MISSING.search(sentence):
            return start + hit.start()
    return None


def dropna_steps(text: str, infos: list[ColumnInfo]) -> list[dict[str, Any]]:
    """Rows removed for a missing value in named columns: "remove any row that has a missing value
    in the cabin column", "drop the rows where Age is null" (a sentence that also fills is not one)."""
    steps: list[dict[str, Any]] = []
    for sentence in _SENTENCES.split(text):
        drop = _DROP_WORD.search(sentence)
        if not drop or _FILL_WORD.search(sentence) or not _MISSING.search(sentence):
            continue
        if not re.search(r"\b(?:rows?|records?|entries|observations)\b", sentence[drop.start() :], re.I):
            continue
        cols = [m.column for m in find_columns(sentence[drop.start() :], infos)]
        if cols:
            steps.append({"kind": "dropna", "columns": cols[:1]})
    return steps


def cleaning_steps(text: str, infos: list[ColumnInfo]) -> list[dict[str, Any]]:
    """Missing values filled and rows with missing values dropped, in the order the question first
    names the two: "use the deletion strategy for cabin and imputation for age" drops, then fills."""
    fills, drops = fill_steps(text, infos), dropna_steps(text, infos)
    fill_at, drop_at = _first_about_missing(text, _FILL_WORD), _first_about_missing(text, _DROP_WORD)
    if drops and fills and drop_at is not None and fill_at is not None and drop_at < fill_at:
        return drops + fills
    return fills + drops


def with_durations(infos: list[ColumnInfo], frame: pd.DataFrame) -> list[ColumnInfo]:
    """Columns of "HH:MM:SS" durations, or of estimates with their interval ("630308[495000-801000]"),
    count as numbers here (``request_ops.numeric`` reads seconds, or the estimate)."""
    out = []
    for info in infos:
        if not info.numeric and info.name in frame.columns:
            text = frame[info.name].dropna().astype(str).str.strip().head(500)
            clock = text.str.fullmatch(r"\d{1,3}:\d{2}:\d{2}(?:\.\d+)?")
            interval = text.str.fullmatch(r"-?[\d,.]+(?:\s*\[[^\]]*\])?")  # "630308[495000-801000]"
            if len(text) and (
                clock.mean() >= 0.95 or (interval.mean() >= 0.95 and text.str.contains("[", regex=False).any())
            ):
                info = info.model_copy(update={"numeric_text": True})
        out.append(info)
    return out


def drop_step(text: str, infos: list[ColumnInfo]) -> dict[str, Any] | None:
    """Removing a column's outliers, when the question says so ("remove the outliers of X"; not "do not remove")."""
    low = text.lower()
    match = re.search(
        r"\b(?:remov\w*|exclud\w*|drop\w*|filter\w* out|eliminat\w*)\b[^.\n]*\boutliers?\b|"
        r"\boutliers?\b[^.\n]*\b(?:remov\w*|exclud\w*|drop\w*|eliminat\w*)\b",
        low,
    )
    if not match:
        return None
    sentence_start = max(low.rfind(".", 0, match.start()), low.rfind("\n", 0, match.start())) + 1
    if re.search(r"\b(?:not|n't|never|without|no need to)\b[^.\n]*$", low[sentence_start : match.start() + 12]):
        return None  # "do not remove any outliers"
    cols = [m.column for m in find_columns(text[match.start() : match.end() + 80], infos) if _numeric(m.column, infos)]
    cols += [m.column for m in find_columns(text[sentence_start : match.end()], infos) if _numeric(m.column, infos)]
    if not cols:
        cols = [m.column for m in find_columns(text, infos) if _numeric(m.column, infos)]
    if not cols:
        return None
    return {"kind": "drop_outliers", "column": quoted_extension(cols[0], text, infos), **_outlier_rule(low)}
