"""The data checks of the repair step: Great Expectations suites built from the profile, and their failures.

:func:`expectation_suites` turns a table's profile into expectations (on the raw table: the
numbers stored as text; on the parsed one: missing values, ranges, label sets, duplicates),
:func:`run_expectations` validates them with an ephemeral GE context and gives one entry with
counts per failure. :mod:`whyflow.causal.dataprep.data_repair` decides and records the repairs.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

from whyflow.causal.dataprep.column_names import keyword_tokens
from whyflow.causal.dataprep.frame_checks import at_most_distinct, duplicate_rows
from whyflow.causal.dataprep.profiling import NUMERIC_TYPES, label_variants
from whyflow.causal.dataprep.repair_rules import table_checks
from whyflow.causal.state import DataProfile

__all__ = ["expectation_suites", "run_expectations", "range_bounds", "fmt_value"]

_NUMERIC_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
_NUMERIC_DTYPES += ["float16", "float32", "float64", "Int8", "Int16", "Int32", "Int64", "Float32", "Float64", "bool"]
_FAR_OUT = 3.0  # Tukey's "far out" fence: beyond 3 IQR from the quartiles


def range_bounds(col: str, stats: dict[str, float]) -> tuple[float, float] | None:
    """Plausible range: Tukey's far-out fences, intersected with [0, 120] for ages.

    Only a column that holds ages in years gets the age bounds: one whose lower quartile is
    negative (``age_z``, a centred or standardised age) is not in years, whatever its name.
    """
    if not {"p25", "p75"} <= stats.keys():
        return None
    iqr = stats["p75"] - stats["p25"]
    if iqr <= 0:
        return None
    lo, hi = stats["p25"] - _FAR_OUT * iqr, stats["p75"] + _FAR_OUT * iqr
    if "age" in keyword_tokens(col) and stats["p25"] >= 0:
        lo, hi = max(lo, 0.0), min(hi, 120.0)
    return lo, hi


def expectation_suites(
    parsed: pd.DataFrame, raw: pd.DataFrame, profile: DataProfile, ids: list[str]
) -> tuple[list, list]:
    """Expectations on the raw data (types) and on the data with numbers parsed (the rest).

    Only what can fail is validated: the type check where the raw column is not already of a
    listed number dtype (GE compares the dtype itself), the duplicate-row check where a row hash
    finds a duplicate (``table_checks``).
    """
    import great_expectations as gx

    E = gx.expectations
    types = profile.feature_types
    on_raw: list[Any] = []
    on_parsed: list[Any] = table_checks(parsed)
    for col in parsed.columns:
        kind = types.get(col, "categorical")
        on_parsed.append(E.ExpectColumnValuesToNotBeNull(column=col))
        listed = isinstance(raw[col].dtype, np.dtype) and raw[col].dtype.name in _NUMERIC_DTYPES
        if kind in NUMERIC_TYPES and pd.api.types.is_numeric_dtype(parsed[col]) and not listed:
            on_raw.append(E.ExpectColumnValuesToBeInTypeList(column=col, type_list=_NUMERIC_DTYPES))
        if kind == "constant" or at_most_distinct(parsed[col], 1):
            on_parsed.append(E.ExpectColumnUniqueValueCountToBeBetween(column=col, min_value=2))
        if col in ids:
            on_parsed.append(E.ExpectColumnValuesToBeUnique(column=col))
        bounds = range_bounds(col, _stats(parsed[col])) if kind == "numeric" else None
        if bounds is not None:
            on_parsed.append(E.ExpectColumnValuesToBeBetween(column=col, min_value=bounds[0], max_value=bounds[1]))
        if kind in ("categorical", "binary") and not pd.api.types.is_numeric_dtype(parsed[col]):
            variants = label_variants(parsed[col])
            allowed = sorted({str(v) for v in parsed[col].dropna().astype(str).unique()} - set(variants))
            on_parsed.append(E.ExpectColumnValuesToBeInSet(column=col, value_set=allowed))
    return on_raw, on_parsed


def _stats(series: pd.Series) -> dict[str, float]:
    v = series.dropna()
    if v.empty or not pd.api.types.is_numeric_dtype(v):
        return {}
    q = v.astype("float64").quantile([0.25, 0.75]).to_numpy()
    return {"p25": float(q[0]), "p75": float(q[1])}


def run_expectations(frame: pd.DataFrame, expectations: list[Any]) -> list[dict[str, Any]]:
    """Validate ``expectations`` on ``frame`` with an ephemeral GE context; one entry per failure."""
    if not expectations:
        return []
    import logging

    import great_expectations as gx
    from great_expectations.data_context.data_context.context_factory import project_manager
    from great_expectations.data_context.types.base import ProgressBarsConfig

    # GE logs "Created temporary directory ... for ephemeral docs site" at INFO for every
    # context (its module sets its own logger to INFO on import); only whyflow's own lines
    # belong on the console. GE's warnings still show.
    for name in ("great_expectations", "great_expectations.data_context.types.base"):
        logging.getLogger(name).setLevel(logging.WARNING)
    gctx = gx.get_context(mode="ephemeral")
    gctx.variables.progress_bars = ProgressBarsConfig(globally=False)
    suite = gx.ExpectationSuite(name="whyflow_repair", expectations=expectations)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=FutureWarning, module=r"great_expectations\..*")
            warnings.filterwarnings("ignore", category=UserWarning, module=r"great_expectations\..*")
            result = gctx.data_sources.pandas_default.read_dataframe(frame).validate(suite, result_format="SUMMARY")
    finally:  # GE keeps the context as its project, the context the batch's metrics (113 MB at 1M rows)
        project_manager.set_project(None)
    failures: list[dict[str, Any]] = []
    for res in result.results:
        if res.success:
            continue
        cfg = res.expectation_config
        if cfg is None:
            continue
        col = cfg.kwargs.get("column")
        failures.append(_failure_entry(frame, cfg.type, col, cfg.kwargs, dict(res.result or {})))
    return failures


def _failure_entry(frame: pd.DataFrame, kind: str, col: str | None, kwargs: dict, res: dict) -> dict[str, Any]:
    """A data_repairs entry for one failed expectation, with a count and a plain explanation."""
    n = len(frame)
    count = res.get("unexpected_count")
    if kind == "expect_column_values_to_be_in_type_list":
        count = int(frame[col].notna().sum())
        detail = f"values stored as {res.get('observed_value', 'text')}, not numbers ({count:,} values)"
    elif kind == "expect_column_unique_value_count_to_be_between":
        count = n
        distinct = res.get("observed_value", 1)
        detail = (
            "empty column: every value is missing" if distinct == 0 else f"constant column: {distinct} distinct value"
        )
    elif kind == "expect_compound_columns_to_be_unique":
        count = int(duplicate_rows(frame).sum())
        detail = f"{count:,} rows exactly repeat an earlier row ({res.get('unexpected_count', 0):,} rows involved)"
    elif kind == "expect_column_values_to_be_between":
        detail = (
            f"{count:,} of {n:,} values outside the plausible range "
            f"[{kwargs['min_value']:.4g}, {kwargs['max_value']:.4g}] (3 IQR beyond the quartiles)"
        )
    elif kind == "expect_column_values_to_be_in_set":
        detail = (
            f"{count:,} values are spelling variants of another label: {res.get('partial_unexpected_list', [])[:5]}"
        )
    elif kind == "expect_column_values_to_not_be_null":
        detail = f"{count:,} of {n:,} values missing ({(count or 0) / max(n, 1):.1%})"
    else:
        detail = f"{count} unexpected values"
    return {
        "kind": "expectation",
        "expectation": kind,
        "column": col,
        "success": False,
        "unexpected_count": int(count or 0),
        "detail": detail,
    }


def fmt_value(value: Any) -> str:
    """A value for a message: numbers compactly, text quoted."""
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return f"{float(value):g}"
    return repr(str(value)) if value is not None else "nothing"
