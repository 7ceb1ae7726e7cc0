"""The numeric checks the column-role rules share: correlations and fits that skip missing values,
and whether one column is a function of a categorical one.

Kept apart so the treatment-side rules (:mod:`whyflow.causal.dataprep.treatment_roles`), the dummy
rule (:mod:`whyflow.causal.dataprep.categorical_dummies`) and the classifier
(:mod:`whyflow.causal.dataprep.column_roles`) read one column the same way.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from whyflow.causal.discovery.adjustment_rules import MAX_LEVELS

__all__ = [
    "MIN_ROWS",
    "categorical_levels",
    "determined_by",
    "is_integer_valued",
    "numeric",
    "pearson",
    "r_squared",
    "spearman",
]

MIN_ROWS = 30
"""Rows with both values known below which no rule reads a relation."""
MIN_PER_LEVEL = 10
"""Mean rows per level below which "constant within every level" could happen by chance."""


def numeric(frame: pd.DataFrame, c: str) -> np.ndarray | None:
    """``frame[c]`` as floats (missing as NaN), or None when it is not numeric or 0/1."""
    s = frame[c]
    if pd.api.types.is_bool_dtype(s) or pd.api.types.is_numeric_dtype(s):
        return s.to_numpy(dtype=float, na_value=np.nan)
    return None


def is_integer_valued(s: pd.Series) -> bool:
    """Numeric (not 0/1 bool), finite and whole in every known row."""
    if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
        return False
    v = s.dropna().to_numpy(dtype=float)
    return bool(len(v) and np.all(np.isfinite(v)) and np.all(v == np.round(v)))


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Rank correlation on the rows where both are known (0 when too few or constant)."""
    ok = ~(np.isnan(a) | np.isnan(b))
    if ok.sum() < MIN_ROWS or np.nanstd(a[ok]) == 0 or np.nanstd(b[ok]) == 0:
        return 0.0
    ra, rb = pd.Series(a[ok]).rank().to_numpy(), pd.Series(b[ok]).rank().to_numpy()
    r = np.corrcoef(ra, rb)[0, 1]
    return float(r) if np.isfinite(r) else 0.0


def pearson(a: np.ndarray, b: np.ndarray) -> float:
    """Correlation on the rows where both are known (0 when too few or constant)."""
    ok = ~(np.isnan(a) | np.isnan(b))
    if ok.sum() < MIN_ROWS or np.std(a[ok]) == 0 or np.std(b[ok]) == 0:
        return 0.0
    r = np.corrcoef(a[ok], b[ok])[0, 1]
    return float(r) if np.isfinite(r) else 0.0


def r_squared(y: np.ndarray, X: np.ndarray) -> float:
    """R² of the least-squares fit of ``y`` on ``X`` and an intercept (complete rows passed)."""
    design = np.column_stack([np.ones(len(y)), X])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    return float(1.0 - np.var(y - design @ coef) / np.var(y))


def categorical_levels(s: pd.Series) -> int | None:
    """The number of levels of a text (or category) column usable as a categorical: 2 to the
    adjustment rules' ``MAX_LEVELS``, with :data:`MIN_PER_LEVEL` rows each on average; None otherwise."""
    if pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
        return None
    known = s.dropna()
    levels = int(known.nunique())
    if not 2 <= levels <= MAX_LEVELS or len(known) < max(MIN_ROWS, MIN_PER_LEVEL * levels):
        return None
    return levels


def determined_by(levels: pd.Series, values: np.ndarray) -> dict[str, float] | None:
    """``{level: value}`` when ``values`` is one number in every level of ``levels`` and differs
    between at least two levels (a function of the categorical); None otherwise.

    Read on the rows where both are known; a level seen in fewer than two such rows cannot show
    a spread, so such levels must hold under 5% of the rows.
    """
    ok = levels.notna().to_numpy() & ~np.isnan(values)
    if ok.sum() < MIN_ROWS:
        return None
    # Grouped on integer codes: sorting the labels themselves costs memory per character (a
    # megabyte label once took gigabytes), and only the few levels' names are needed at the end.
    codes, labels = pd.factorize(levels.to_numpy()[ok])
    grouped = pd.Series(values[ok]).groupby(codes, sort=True)
    spread, size = grouped.agg(np.ptp), grouped.size()
    if bool((spread > 0).any()) or size[size < 2].sum() >= 0.05 * ok.sum():
        return None
    first = grouped.first()
    if first.nunique() < 2:
        return None
    named = {str(labels[k]): float(v) for k, v in first.items()}
    return dict(sorted(named.items()))
