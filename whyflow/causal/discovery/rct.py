"""An empty adjustment set (a randomised experiment): which covariates may buy precision.

With nothing to adjust for, the difference in means is the estimate; a covariate-adjusted
version (Lin 2013) is reported for precision only. A precision covariate must be measured
before the treatment: anything excluded as post-treatment, a mediator, collider, descendant,
copy or part of the outcome, identifier or constant is never used, and neither is a covariate
clearly imbalanced between the arms (in an experiment a pre-treatment covariate is balanced up
to chance; a strong imbalance suggests it is affected by the treatment).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from whyflow.causal.discovery.adjustment import safe_name

__all__ = ["precision_covariates", "describe", "UNSAFE_REASON"]

UNSAFE_REASON = re.compile(
    r"post|after|mediat|descendant|collider|caused by|deterministic|derived|copy|constant|identifier|"
    r"high-cardinality|role '(id|time|outcome|treatment)'",
    re.IGNORECASE,
)
_OUTCOME_PART = re.compile(
    r"outcome\W.*\b(part|component|fit|difference|sum|change|predict)|"
    r"\b(part|component|copy|fit)\b.*outcome",
    re.IGNORECASE,
)
MAX_LEVELS = 10


def _safe(col: str, reason: str | None) -> bool:
    if reason is None:
        return True
    return not (UNSAFE_REASON.search(reason) or _OUTCOME_PART.search(reason))


def _encode(s: pd.Series, name: str) -> pd.DataFrame | None:
    if pd.api.types.is_bool_dtype(s) or pd.api.types.is_numeric_dtype(s):
        return pd.DataFrame({safe_name(name): s.astype(float).to_numpy()})
    if s.nunique() > MAX_LEVELS:
        return None
    d = pd.get_dummies(s.astype(str), prefix=safe_name(name), drop_first=True, dtype=float).reset_index(drop=True)
    d.columns = [safe_name(c) for c in d.columns]
    return d


def precision_covariates(
    frame: pd.DataFrame,
    t: np.ndarray,
    candidates: list[str],
    excluded: dict[str, str],
    reserved: set[str],
) -> tuple[pd.DataFrame, dict[str, str]]:
    """Encoded pre-treatment covariates (rows of ``frame``) and why each other candidate is left out.

    ``frame`` holds the analysed rows (aligned with ``t``); a covariate with missing values there
    is left out rather than dropping rows, so the precision estimate describes the same units.
    """
    n = len(t)
    limit = max(0.05, 4 / np.sqrt(max(n, 1)))
    parts: list[pd.DataFrame] = []
    left_out: dict[str, str] = {}
    for col in dict.fromkeys(candidates):
        if col in reserved or col not in frame.columns:
            continue
        reason = excluded.get(col)
        if not _safe(col, reason):
            left_out[col] = f"not used for precision: {reason}"
            continue
        s = frame[col].reset_index(drop=True)
        if s.isna().any():
            left_out[col] = "not used for precision: has missing values among the analysed rows"
            continue
        enc = _encode(s, col)
        if enc is None:
            left_out[col] = f"not used for precision: more than {MAX_LEVELS} categories"
            continue
        enc = enc.loc[:, enc.std() > 0]
        if enc.shape[1] == 0:
            continue
        smd = _max_smd(enc, t)
        if smd > limit:
            left_out[col] = (
                f"not used for precision: imbalanced between the arms (|SMD| {smd:.2f} > {limit:.2f}), "
                "so it may be affected by the treatment"
            )
            continue
        parts.append(enc)
    X = pd.concat(parts, axis=1) if parts else pd.DataFrame(index=range(n))
    return X.loc[:, ~X.columns.duplicated()], left_out


def _max_smd(X: pd.DataFrame, t: np.ndarray) -> float:
    out = 0.0
    for col in X.columns:
        x = X[col].to_numpy(dtype=float)
        sd = float(np.sqrt((x[t == 1].var() + x[t == 0].var()) / 2)) or 1.0
        out = max(out, abs(float(x[t == 1].mean() - x[t == 0].mean())) / sd)
    return out


def describe(X: pd.DataFrame, left_out: dict[str, Any]) -> str:
    """One sentence for the reasoning."""
    used = ", ".join(X.columns) or "none"
    text = f"Precision covariates for the covariate-adjusted difference: {used}."
    if left_out:
        text += " Left out: " + "; ".join(f"{c} ({r})" for c, r in left_out.items()) + "."
    return text
