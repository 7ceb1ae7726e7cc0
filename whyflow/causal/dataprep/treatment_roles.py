"""Columns that repeat the treatment: never covariates, because they leave it no variation.

Why: a file often holds the treatment more than once: a recorded copy (``enrolled`` beside
``treated``, or ``1 - treated``), a treatment x other-column term that is zero for every untreated
row, or a label of the arm (``arm`` = control / voucher_A / voucher_B beside ``treated`` 0/1).
Adjusting for any of them holds the treatment itself fixed: the estimate goes to zero, or the
design is singular and a solver returns one of infinitely many answers (an OLS "effect" of
5.8 × 10¹¹ in a real trial).

The rules read the values only. A copy agrees with the treatment in at least
:data:`COPY_CORR` of its variation; an interaction is constant on every untreated row and varies
among the treated; an alias is a text categorical within each of whose levels the treatment is
one value (its dummies then add up to the treatment exactly). A numeric column is never read as
an alias: a count or a score that fixes the treatment by a threshold (an eligibility rule)
enters a design linearly, does not make it singular, and is a confounder to keep.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from whyflow.causal.dataprep.column_names import ColumnRole
from whyflow.causal.dataprep.column_stats import MIN_ROWS, categorical_levels, determined_by, numeric, pearson, spearman

__all__ = ["COPY_CORR", "treatment_roles"]

COPY_CORR = 0.98
"""|correlation| (or share of agreeing rows for 0/1 columns) with the treatment: a near-copy of it."""


def treatment_roles(frame: pd.DataFrame, t: str, cols: list[str]) -> list[ColumnRole]:
    """Near-copies of the (numeric) treatment, treatment x other-column terms (0/1 treatment) and
    text labels whose every level holds one treatment value."""
    tv = frame[t].to_numpy(dtype=float, na_value=np.nan)
    out: list[ColumnRole] = []
    for c in cols:
        v = numeric(frame, c)
        role = _numeric_role(v, tv, t) if v is not None else _alias(frame[c], tv, t)
        if role is not None:
            out.append(ColumnRole(c, *role))
    return out


def _numeric_role(v: np.ndarray, tv: np.ndarray, t: str) -> tuple[str, str] | None:
    """(role, reason) for a numeric column that copies the treatment or interacts with it, or None."""
    levels = np.unique(tv[~np.isnan(tv)])
    binary = len(levels) == 2
    ok = ~(np.isnan(v) | np.isnan(tv))
    if ok.sum() < MIN_ROWS or np.std(v[ok]) == 0:
        return None
    r = pearson(v, tv)
    rho = spearman(v, tv) if not binary else r
    if max(abs(r), abs(rho)) >= COPY_CORR:
        why = (
            f"a copy of the treatment {t!r} (correlation {r:+.3f}): adjusting for it leaves no variation "
            "in the treatment to learn from"
        )
        return "treatment_copy", why
    if not binary:
        return None
    vv, tt = v[ok], tv[ok]
    if set(np.unique(vv)) <= {0.0, 1.0}:
        agree = float(np.mean(vv == (tt == levels[1])))
        share = max(agree, 1.0 - agree)
        if share >= COPY_CORR:
            why = (
                f"a copy of the treatment {t!r} (the same 0/1 value in {share:.1%} of rows): "
                "adjusting for it leaves almost no variation in the treatment"
            )
            return "treatment_copy", why
    control, treated = vv[tt == levels[0]], vv[tt == levels[1]]
    if len(control) >= 20 and np.ptp(control) == 0 and len(np.unique(treated)) > 1:
        why = (
            f"derived from the treatment: equal to {control[0]:g} whenever {t!r} is {levels[0]:g} and "
            "varying only among the treated (a treatment x other-column term or a part of the treatment)"
        )
        return "treatment_interaction", why
    return None


def _alias(s: pd.Series, tv: np.ndarray, t: str) -> tuple[str, str] | None:
    """(role, reason) for a text categorical that labels the arms (one treatment value per level), or None."""
    if categorical_levels(s) is None:
        return None
    mapping = determined_by(s, tv)
    if mapping is None:
        return None
    by_value: dict[float, list[str]] = {}
    for level, value in mapping.items():
        by_value.setdefault(value, []).append(level)
    shown = "; ".join(f"{t} = {value:g}: {', '.join(map(repr, levels[:4]))}" for value, levels in by_value.items())
    why = (
        f"derived from the treatment: a label of the arm, each of its {len(mapping)} levels has one value of {t!r} "
        f"({shown}): its dummies add up to the treatment, so as a covariate it leaves no variation. If it "
        "also causes the outcome, no adjustment separates the two"
    )
    return "treatment_alias", why
