"""The primitives every request operation reads its numbers with (columns as numbers, a
statistic, an outlier rule). Sent into the sandbox as source with :mod:`whyflow.ask.tools.request_fits`
and :mod:`whyflow.ask.tools.request_ops`, so it imports nothing of whyflow.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

__all__ = ["NUMBER_OPS", "col_numbers", "numeric", "outlier_mask", "pair_numbers", "statistic"]

NUMBER_OPS = ("mean", "median", "std", "var", "min", "max", "sum", "count", "skew", "kurtosis", "range", "mode")


def numeric(series: pd.Series) -> pd.Series:
    """Numbers of a column, also when stored as text ("1,234", "$5", "12%")."""
    if pd.api.types.is_bool_dtype(series):
        return series.astype(float)
    if not pd.api.types.is_numeric_dtype(series):
        text = series.astype("string").str.strip()
        clock = text.dropna().str.fullmatch(r"\d{1,3}:\d{2}:\d{2}(?:\.\d+)?")
        if len(clock) and clock.mean() >= 0.95:  # "00:01:35", a duration: its seconds
            valid = text.str.fullmatch(r"\d{1,3}:\d{2}:\d{2}(?:\.\d+)?").fillna(False).astype(bool)
            return pd.to_timedelta(text.where(valid), errors="coerce").dt.total_seconds()
        text = text.str.replace(r"(?<=\d)\s*\[[^\]]*\]$", "", regex=True)  # "630308[495000-801000]": the estimate
        series = text.str.replace(r"[,$%\s]", "", regex=True)
    return pd.to_numeric(series, errors="coerce")


def col_numbers(df: pd.DataFrame, name: str) -> pd.Series:
    if name not in df.columns:
        raise KeyError(f"no column '{name}'")
    return numeric(df[name])


def statistic(x: pd.Series, op: str, opts: dict[str, Any]) -> Any:
    from scipy import stats

    x = x.dropna()
    ddof = int(opts.get("ddof", 1))
    if op == "mean":
        return float(x.mean())
    if op == "median":
        return float(x.median())
    if op == "std":
        return float(x.std(ddof=ddof))
    if op == "var":
        return float(x.var(ddof=ddof))
    if op in ("min", "max", "sum"):
        return float(getattr(x, op)())
    if op == "range":
        return float(x.max() - x.min())
    if op == "count":
        return int(x.count())
    if op == "mode":
        return float(x.mode().iloc[0])
    if op == "skew":
        return float(stats.skew(x, bias=True)) if opts.get("library") == "scipy" else float(x.skew())
    if op == "kurtosis":
        return float(stats.kurtosis(x, bias=True)) if opts.get("library") == "scipy" else float(x.kurt())
    raise ValueError(f"unknown statistic '{op}'")


def outlier_mask(x: pd.Series, method: str, threshold: float, ddof: int = 0) -> pd.Series:
    """True for the outliers of ``x``: beyond ``threshold`` z-scores, or ``threshold`` IQRs past the quartiles."""
    if method == "zscore":
        z = (x - x.mean()) / x.std(ddof=ddof)
        return z.abs() > threshold
    q1, q3 = x.quantile(0.25), x.quantile(0.75)
    iqr = q3 - q1
    return (x < q1 - threshold * iqr) | (x > q3 + threshold * iqr)


def pair_numbers(df: pd.DataFrame, cols: list[str]) -> tuple[pd.Series, pd.Series]:
    if len(cols) < 2:
        raise ValueError("a correlation needs two columns")
    both = pd.concat([col_numbers(df, cols[0]), col_numbers(df, cols[1])], axis=1).dropna()
    return both.iloc[:, 0], both.iloc[:, 1]
