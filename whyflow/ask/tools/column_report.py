"""Seed 004's first analysis of a dataset, deterministic: a per-column table, a short summary
and a session title.

The table has 004's columns — Column, Type, Non-Null Count, Unique Count, Description, Typical
Values, Issues — and a row for every column. Issues flag high null rates, suspicious outliers
(beyond 3 × IQR), mixed types, constant columns, and numbers or dates stored as text ("None"
when clean). Nothing here guesses: every figure is counted from the data.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["HEADERS", "ColumnRow", "column_report", "dataset_summary", "session_title", "report_table"]

HEADERS = ["Column", "Type", "Non-Null Count", "Unique Count", "Description", "Typical Values", "Issues"]
HIGH_NULL = 0.2
_NUMBER_TEXT = re.compile(r"[,$%€£\s]")


class ColumnRow(BaseModel):
    """One row of the per-column table."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    column: str
    type: str
    non_null: int
    unique: int
    description: str
    typical_values: str
    issues: list[str]

    def cells(self) -> list[Any]:
        return [
            self.column,
            self.type,
            self.non_null,
            self.unique,
            self.description,
            self.typical_values,
            "; ".join(self.issues) or "None",
        ]


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"
    if hasattr(value, "isoformat"):
        return str(value.isoformat())[:19].removesuffix("T00:00:00")
    return str(value)[:40]


def _as_numbers(text: pd.Series) -> pd.Series:
    import pandas as pd

    return pd.to_numeric(text.str.replace(_NUMBER_TEXT, "", regex=True), errors="coerce")


def _as_dates(text: pd.Series) -> pd.Series:
    import warnings

    import pandas as pd

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return pd.to_datetime(text, errors="coerce", format="mixed")
        except (ValueError, TypeError):
            return pd.Series(pd.NaT, index=text.index)


def _outliers(values: pd.Series) -> str | None:
    values = values.dropna()
    if len(values) < 8:
        return None
    q1, q3 = float(values.quantile(0.25)), float(values.quantile(0.75))
    iqr = q3 - q1
    if iqr <= 0:
        return None
    low, high = q1 - 3 * iqr, q3 + 3 * iqr
    out = values[(values < low) | (values > high)]
    if out.empty:
        return None
    if len(out) == 1:
        return f"1 suspicious outlier beyond 3×IQR ({_fmt(float(out.iloc[0]))})"
    return f"{len(out)} suspicious outliers beyond 3×IQR (from {_fmt(float(out.min()))} to {_fmt(float(out.max()))})"


def _numeric_row(name: str, series: pd.Series, kind: str, issues: list[str]) -> tuple[str, str, str]:
    values = series.dropna().astype(float)
    if values.empty:
        return kind, "no values", ""
    if values.nunique() <= 2:
        levels = ", ".join(_fmt(v) for v in sorted(values.unique()))
        share = float(values.eq(values.max()).mean())
        return "binary", f"two values ({levels}); {share:.0%} are {_fmt(float(values.max()))}", levels
    outliers = _outliers(values) if values.nunique() > 20 else None  # a few discrete levels have no outliers
    if outliers:
        issues.append(outliers)
    desc = (
        f"{kind}, range {_fmt(float(values.min()))} to {_fmt(float(values.max()))}, mean {_fmt(float(values.mean()))}"
    )
    typical = (
        f"median {_fmt(float(values.median()))} (IQR {_fmt(float(values.quantile(0.25)))}–"
        f"{_fmt(float(values.quantile(0.75)))})"
    )
    return kind, desc, typical


def _top(series: pd.Series, k: int = 3) -> str:
    counts = series.astype(str).value_counts().head(k)
    return ", ".join(f"{v} ({n})" for v, n in counts.items())


def _column(name: str, series: pd.Series) -> ColumnRow:
    import pandas as pd

    rows = len(series)
    non_null = int(series.notna().sum())
    try:
        unique = int(series.nunique(dropna=True))
    except TypeError:  # unhashable cells
        unique = int(series.astype(str).nunique(dropna=True))
    issues: list[str] = []
    if name.startswith("Unnamed: "):
        issues.append("no name in the header row")
    if rows and (rows - non_null) / rows > HIGH_NULL:
        issues.append(f"high null rate ({(rows - non_null) / rows:.0%} missing)")
    if non_null == 0:
        return ColumnRow(
            column=name,
            type="empty",
            non_null=0,
            unique=0,
            description="no values at all",
            typical_values="",
            issues=[*issues[:1], "entirely empty"] if name.startswith("Unnamed: ") else ["entirely empty"],
        )
    if unique == 1:
        issues.append("constant column (one value)")
    present = series.dropna()
    if pd.api.types.is_bool_dtype(series):
        kind, desc, typical = "boolean", f"true/false; {float(present.astype(bool).mean()):.0%} true", _top(present)
    elif pd.api.types.is_numeric_dtype(series):
        kind = "integer" if pd.api.types.is_integer_dtype(series) or bool((present % 1 == 0).all()) else "float"
        kind, desc, typical = _numeric_row(name, series, kind, issues)
    elif pd.api.types.is_datetime64_any_dtype(series):
        kind, desc = "date", f"dates from {_fmt(present.min())} to {_fmt(present.max())}"
        typical = f"{_fmt(present.min())} … {_fmt(present.max())}"
    else:
        text = present.astype(str)
        numbers = _as_numbers(text)
        share = float(numbers.notna().mean())
        if share >= 0.95:
            if text.str.contains(_NUMBER_TEXT).any():
                issues.append(f"numbers stored as text (such as '{text[text.str.contains(_NUMBER_TEXT)].iloc[0]}')")
            kind, desc, typical = _numeric_row(name, numbers, "number (text)", issues)
        else:
            if 0.05 <= share < 0.95:
                issues.append(f"mixed types ({share:.0%} numbers, the rest text)")
            dates = _as_dates(text.head(500)) if share < 0.05 else None
            if dates is not None and float(dates.notna().mean()) >= 0.9 and text.str.contains(r"\d").all():
                parsed = _as_dates(text).dropna()
                kind, desc = "date (text)", f"dates from {_fmt(parsed.min())} to {_fmt(parsed.max())}"
                typical = f"{_fmt(parsed.min())} … {_fmt(parsed.max())}"
                issues.append("dates stored as text")
            elif unique == non_null and non_null > 20:
                kind, desc, typical = (
                    "identifier",
                    f"unique for every row ({unique} values): an identifier or free text",
                    _top(text, 2),
                )
            elif unique <= max(20, 0.05 * non_null):
                mode = text.value_counts()
                kind = "categorical"
                desc = f"{unique} categories; most common '{mode.index[0]}' ({mode.iloc[0] / non_null:.0%})"
                typical = _top(text)
            else:
                kind, desc, typical = "text", f"text with {unique} distinct values", _top(text)
    return ColumnRow(
        column=name,
        type=kind,
        non_null=non_null,
        unique=unique,
        description=desc,
        typical_values=typical,
        issues=issues,
    )


def column_report(frame: pd.DataFrame) -> list[ColumnRow]:
    """One row per column of ``frame`` (every column, in order)."""
    return [_column(str(name), frame.iloc[:, i]) for i, name in enumerate(frame.columns)]


def report_table(rows: list[ColumnRow]) -> dict[str, Any]:
    """The table as ``{columns, rows}`` (what answer.json, the CLI and the answer page show)."""
    return {"columns": list(HEADERS), "rows": [r.cells() for r in rows], "row_count": len(rows)}


def dataset_summary(name: str, frame: pd.DataFrame, rows: list[ColumnRow]) -> str:
    """A 3–5 sentence summary of what the dataset holds and what stands out."""
    kinds: dict[str, int] = {}
    for r in rows:
        group = (
            "numeric"
            if r.type in ("integer", "float", "number (text)", "binary", "boolean")
            else "date"
            if r.type.startswith("date")
            else "categorical"
            if r.type == "categorical"
            else "text or ID"
        )
        kinds[group] = kinds.get(group, 0) + 1
        del group
    parts = ", ".join(f"{n} {k}" for k, n in kinds.items())
    sentences = [f"'{name}' holds {len(frame):,} rows and {len(rows)} columns ({parts})."]
    numeric = [r for r in rows if r.type in ("integer", "float", "number (text)")]
    if numeric:
        sentences.append(
            "Its measures include "
            + "; ".join(f"{r.column} ({r.description.split(', ', 1)[-1]})" for r in numeric[:3])
            + "."
        )
    cats = [r for r in rows if r.type in ("categorical", "binary", "boolean")]
    if cats:
        sentences.append("It is grouped by " + ", ".join(f"{r.column} ({r.unique} values)" for r in cats[:4]) + ".")
    dated = [r for r in rows if r.type.startswith("date")]
    if dated:
        sentences.append(f"The column {dated[0].column} spans {dated[0].description.removeprefix('dates ')}.")
    unnamed = sum(r.column.startswith("Unnamed: ") for r in rows)
    if unnamed * 2 >= len(rows):
        sentences.insert(
            1,
            f"{unnamed} of its {len(rows)} column names are missing: the file may start with a title "
            "row above the real header.",
        )
    flagged = [r for r in rows if r.issues]
    if flagged:
        shown = "; ".join(f"{r.column}: {r.issues[0]}" for r in flagged[:3])
        more = f" and {len(flagged) - 3} more" if len(flagged) > 3 else ""
        quality = f"{len(flagged)} column(s) need attention — {shown}{more}."
    else:
        quality = "No column shows high null rates, outliers, mixed types or constant values."
    return " ".join([*sentences[:4], quality])


def session_title(name: str, frame: pd.DataFrame) -> str:
    """A short descriptive title from the file's name and size."""
    words = re.sub(r"[_\-.]+", " ", re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name)).split()
    base = " ".join(w if w.isupper() else w.capitalize() for w in words) or "Dataset"
    return f"{base} ({len(frame):,} rows × {frame.shape[1]} columns)"[:80]
