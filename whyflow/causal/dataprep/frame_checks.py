"""Exact checks over a whole column or table that are cheap at a million rows.

``series.nunique() <= k`` hashes every value of the column; when the column is continuous the
answer is already known from its first few hundred values. ``frame.duplicated()`` factorises
every column; one 64-bit hash a row finds the candidates, and only rows that share a hash are
compared exactly. Both return what the pandas expression they replace returns.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from whyflow.causal.dataprep.profiling import label_variants, parse_numeric_text

__all__ = [
    "at_most_distinct",
    "duplicate_rows",
    "DuplicateVerdict",
    "duplicate_verdict",
    "load_findings",
    "quality_findings",
    "save_findings",
]

FINDINGS_FILE = "input_findings.json"

_PROBE = 512


def at_most_distinct(series: pd.Series, k: int) -> bool:
    """``series.nunique(dropna=True) <= k``, answered from a prefix when the prefix already exceeds ``k``."""
    values = series.dropna()
    if len(values) <= k:
        return True
    if k == 0:
        return False
    if len(values) > _PROBE and len(pd.unique(values.iloc[:_PROBE])) > k:
        return False
    return int(values.nunique()) <= k


def _column_hash(column: pd.Series) -> np.ndarray:
    """64-bit hashes of one column's values; floats with -0.0 as 0.0 and one NaN (pandas counts them equal)."""
    if pd.api.types.is_float_dtype(column) and isinstance(column.dtype, np.dtype):
        values = column.to_numpy() + 0.0
        values[np.isnan(values)] = np.nan
        return pd.util.hash_array(values)
    return pd.util.hash_pandas_object(column, index=False, categorize=True).to_numpy()


def duplicate_rows(frame: pd.DataFrame) -> pd.Series:
    """``frame.duplicated(keep="first")``: rows that repeat an earlier row exactly.

    Rows whose 64-bit hashes are unique cannot repeat another row; the rest (every copy of a
    duplicated row among them) are compared exactly by pandas, in their original order.
    """
    if frame.shape[1] == 0 or len(frame) < 2:
        return frame.duplicated(keep="first")
    hashes = np.zeros(len(frame), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for i in range(frame.shape[1]):
            hashes = (hashes ^ _column_hash(frame.iloc[:, i])) * np.uint64(1_000_003 + 2 * i)
    candidates = pd.Series(hashes).duplicated(keep=False).to_numpy()
    out = np.zeros(len(frame), dtype=bool)
    if candidates.any():
        out[candidates] = frame.iloc[candidates].duplicated(keep="first").to_numpy()
    return pd.Series(out, index=frame.index)


@dataclass(frozen=True)
class DuplicateVerdict:
    """How many rows repeat an earlier row exactly, and whether they are copies to drop."""

    rows: int
    drop: bool
    column: str | None = None
    """The continuous column that makes a chance repeat implausible (None: every column is discrete)."""
    kept_by_request: bool = False
    """Kept because the recipe said so (``drop_duplicates: false``), whatever the columns."""

    def sentence(self) -> str:
        """What was found and done, for the console, the trace and the report ("" when no row repeats)."""
        if not self.rows:
            return ""
        many = f"{self.rows:,} exact duplicate row{'s' if self.rows != 1 else ''}"
        if self.kept_by_request:
            return f"{many} kept, as the recipe asks (drop_duplicates: false)"
        if self.drop:
            return (
                f"{many} dropped: {self.column} is continuous, so an exact repeat of a whole row is a copy, "
                "not a second observation"
            )
        return (
            f"{many} kept: every column is discrete, so identical rows are expected (the same answers, the "
            "same counts); drop them before the run if they are copies"
        )


def duplicate_verdict(frame: pd.DataFrame, repeats: pd.Series | None = None) -> DuplicateVerdict:
    """Count the exact repeats; they are copies to drop only where a continuous column rules out chance.

    Where every column is discrete (survey answers, counts, categories), two units giving the
    same values is ordinary and dropping one of them changes the estimate. Where a numeric
    column takes a different value in most rows (at least 20 values, and in at least half of
    the rows once the repeats are set aside), a whole row repeated exactly, that column
    included, is a double entry.
    """
    repeats = duplicate_rows(frame) if repeats is None else repeats
    n = int(repeats.sum())
    if not n:
        return DuplicateVerdict(0, False)
    distinct = frame.loc[~repeats.to_numpy()]
    best: tuple[int, str] | None = None
    for col in distinct.columns:
        values = distinct[col]
        if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
            continue
        present = values.dropna()
        count = int(present.nunique())
        if count >= max(20, len(present) / 2) and (best is None or count > best[0]):
            best = (count, str(col))
    return DuplicateVerdict(n, best is not None, best[1] if best else None)


def quality_findings(frame: pd.DataFrame) -> dict[str, Any]:
    """Problems visible in a table: missing cells, duplicates, text numbers, constants, label variants."""
    text_numeric = [c for c in frame.columns if parse_numeric_text(frame[c]) is not None]
    labels = {
        c: len(label_variants(frame[c]))
        for c in frame.columns
        if not pd.api.types.is_numeric_dtype(frame[c]) and c not in text_numeric and at_most_distinct(frame[c], 200)
    }
    return {
        "n_rows": len(frame),
        "missing": {c: int(n) for c, n in frame.isna().sum().items() if n},
        "duplicates": int(duplicate_rows(frame).sum()),
        "text_numeric": text_numeric,
        "constant": [c for c in frame.columns if at_most_distinct(frame[c], 1)],
        "label_variants": {c: n for c, n in labels.items() if n},
    }


def _fingerprint(source: str | Path) -> dict[str, Any]:
    st = Path(source).stat()
    return {"path": str(Path(source).resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def save_findings(frame: pd.DataFrame, source: str | Path, folder: Path) -> None:
    """Record ``quality_findings`` of ``frame`` as read from ``source``, with the file's fingerprint."""
    record = {"source": _fingerprint(source), "findings": quality_findings(frame)}
    tmp = folder / f".{FINDINGS_FILE}.tmp"
    tmp.write_text(json.dumps(record, default=int), encoding="utf-8")
    os.replace(tmp, folder / FINDINGS_FILE)


def load_findings(source: str | Path, folder: Path) -> dict[str, Any] | None:
    """The findings ``save_findings`` recorded for ``source``, if they are of the file as it is now."""
    try:
        record = json.loads((folder / FINDINGS_FILE).read_text(encoding="utf-8"))
        return record["findings"] if record.get("source") == _fingerprint(source) else None
    except (OSError, ValueError, KeyError, TypeError):
        return None
