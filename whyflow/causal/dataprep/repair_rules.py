"""Repairs a data scientist would make, each found by a stated rule, and the re-check after them.

Pure functions over DataFrames used by the data repair agent:

* infinities (``inf``/``-inf``, e.g. a division by zero in an export) become missing;
* dates stored as text become datetimes (a time axis; never a category or a covariate);
* recording errors such as a value entered x100 (a percentage as 4500 instead of 45, metres as
  centimetres) are found by robust statistics and set to missing: a value counts only when it
  is at least 20 times the column's median magnitude, beyond Tukey's far-out fence, rare (at
  most 5% of the values) and separated from the rest of the column by a gap of at least 5x.
  Heavy tails have no such gap, so a skewed income column is left alone;
* after every repair the data is checked again with Great Expectations (types, missing values,
  constants, duplicates, label variants), and what still fails is listed per column, so the
  critique can refuse to approve an estimate that adjusts for it. Plain outliers are not
  errors: they are reported and kept (a heavy-tailed income is data, not a failure).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from whyflow.causal.dataprep.frame_checks import at_most_distinct, duplicate_rows
from whyflow.causal.dataprep.implausible import overflowing
from whyflow.causal.dataprep.profiling import NUMERIC_TYPES, label_variants, parse_dates
from whyflow.causal.diagnostics import Unrepaired
from whyflow.causal.state import DataProfile

__all__ = [
    "infinite_to_missing",
    "overflowing_to_missing",
    "parse_date_columns",
    "recording_errors",
    "recheck_expectations",
    "table_checks",
    "unrepaired",
]

ERROR_MAGNITUDE = 20.0
"""A recording error is at least this many times the column's median magnitude."""
ERROR_GAP = 5.0
"""... and at least this many times the largest ordinary value."""
ERROR_MAX_SHARE = 0.05


def infinite_to_missing(frame: pd.DataFrame) -> dict[str, int]:
    """Replace ``inf``/``-inf`` by missing in every float column (in place); count per column."""
    counts: dict[str, int] = {}
    for col in frame.columns:
        if not pd.api.types.is_float_dtype(frame[col]):
            continue
        mask = np.isinf(frame[col].to_numpy(dtype="float64", na_value=np.nan))
        if mask.any():
            counts[str(col)] = int(mask.sum())
            frame[col] = frame[col].mask(mask)
    return counts


def overflowing_to_missing(frame: pd.DataFrame) -> dict[str, int]:
    """Replace finite values too large to be measurements (:func:`overflowing`) by missing (in place); count them."""
    counts: dict[str, int] = {}
    for col in frame.columns:
        if not pd.api.types.is_float_dtype(frame[col]):
            continue
        mask = overflowing(frame[col].to_numpy(dtype="float64", na_value=np.nan))
        if mask.any():
            counts[str(col)] = int(mask.sum())
            frame[col] = frame[col].mask(mask)
    return counts


def parse_date_columns(frame: pd.DataFrame, profile: DataProfile) -> dict[str, tuple[int, int]]:
    """Parse the columns the profile calls datetime (in place); (values, unparseable) per column."""
    out: dict[str, tuple[int, int]] = {}
    for col, kind in profile.feature_types.items():
        if kind != "datetime" or col not in frame.columns or pd.api.types.is_datetime64_any_dtype(frame[col]):
            continue
        n = int(frame[col].notna().sum())
        frame[col] = parse_dates(frame[col])
        out[col] = (n, n - int(frame[col].notna().sum()))
    return out


def recording_errors(series: pd.Series) -> tuple[pd.Series, int] | None:
    """A mask of values entered at the wrong scale (e.g. x100) and the typical factor, or None."""
    if not pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
        return None
    values = series.astype("float64")
    finite = values[np.isfinite(values)]
    if len(finite) < 20:
        return None
    magnitude = finite.abs()
    median = float(magnitude.median())
    q1, q3 = (float(q) for q in finite.quantile([0.25, 0.75]))
    iqr = q3 - q1
    if median <= 0 or iqr <= 0:
        return None
    far = (values > q3 + 3 * iqr) | (values < q1 - 3 * iqr)
    mask = far & (values.abs() >= ERROR_MAGNITUDE * median)
    n = int(mask.sum())
    if n == 0 or n > ERROR_MAX_SHARE * len(finite):
        return None
    ordinary = magnitude[~mask.loc[magnitude.index]]
    if ordinary.empty or float(values[mask].abs().min()) < ERROR_GAP * float(ordinary.max()):
        return None
    factor = int(10 ** round(float(np.log10(values[mask].abs().median() / median))))
    return mask.fillna(False).astype(bool), factor


def table_checks(frame: pd.DataFrame) -> list[Any]:
    """The table-level expectation (no exact duplicate rows), when a row hash finds a duplicate.

    ``duplicate_rows`` is exact, so a table it clears passes the expectation; leaving it out
    spares Great Expectations' own whole-table pass, the costliest check on a large table.
    """
    import great_expectations as gx

    if not duplicate_rows(frame).any():
        return []
    return [gx.expectations.ExpectCompoundColumnsToBeUnique(column_list=list(frame.columns))]


def _recheck_suite(frame: pd.DataFrame, profile: DataProfile) -> list[Any]:
    import great_expectations as gx

    E = gx.expectations
    types = profile.feature_types
    suite: list[Any] = table_checks(frame)
    for col in frame.columns:
        kind = types.get(col, "numeric" if pd.api.types.is_numeric_dtype(frame[col]) else "categorical")
        if kind in ("id", "text"):
            continue
        suite.append(E.ExpectColumnValuesToNotBeNull(column=col))
        if at_most_distinct(frame[col], 1):
            suite.append(E.ExpectColumnUniqueValueCountToBeBetween(column=col, min_value=2))
        if kind in NUMERIC_TYPES and not pd.api.types.is_numeric_dtype(frame[col]):
            suite.append(E.ExpectColumnValuesToBeInTypeList(column=col, type_list=["float64", "int64", "Float64"]))
        if kind in ("categorical", "binary") and not pd.api.types.is_numeric_dtype(frame[col]):
            variants = label_variants(frame[col])
            allowed = sorted({str(v) for v in frame[col].dropna().astype(str).unique()} - set(variants))
            suite.append(E.ExpectColumnValuesToBeInSet(column=col, value_set=allowed))
    return suite


def _key(expectation: Any) -> tuple[str, Any, str]:
    cfg = expectation.configuration
    return cfg.type, cfg.kwargs.get("column"), json.dumps(cfg.kwargs, sort_keys=True, default=str)


def recheck_expectations(
    frame: pd.DataFrame,
    profile: DataProfile,
    run: Any,
    unchanged: tuple[list[Any], list[dict[str, Any]]] | None = None,
) -> list[dict[str, Any]]:
    """The expectations that still fail on the repaired data (``run`` validates a suite).

    ``unchanged``: the suite and the failures of a validation of these very values (no repair
    changed the data). When that suite holds every expectation of the re-check with the same
    arguments, their results stand: the same data is not validated twice.
    """
    suite = _recheck_suite(frame, profile)
    if unchanged is not None:
        done_suite, done_failures = unchanged
        keys = {_key(e) for e in suite}
        if keys <= {_key(e) for e in done_suite}:
            wanted = {(kind, col) for kind, col, _ in keys}
            return [dict(f) for f in done_failures if (f["expectation"], f["column"]) in wanted]
    return list(run(frame, suite))


def unrepaired(after: list[dict[str, Any]]) -> list[Unrepaired]:
    """One ``data_repairs`` entry per column with a failed expectation left after the repairs.

    An :class:`~whyflow.causal.diagnostics.Unrepaired`: ``column`` (str | None), ``expectations`` (names), ``detail``
    (``column`` is None for table-level checks such as duplicate rows).
    """
    by_column: dict[str | None, list[dict[str, Any]]] = {}
    for failure in after:
        by_column.setdefault(failure.get("column"), []).append(failure)
    return [
        Unrepaired(
            kind="unrepaired",
            column=col,
            expectations=[f["expectation"] for f in failures],
            detail="; ".join(str(f.get("detail", "")) for f in failures),
        )
        for col, failures in by_column.items()
    ]
