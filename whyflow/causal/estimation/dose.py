"""Estimators of a continuous or multi-valued (numeric) treatment's effect: a slope, its estimand named.

Without a declared design a dose is summarised by a slope: the change in the outcome per one
unit of the treatment. Regression adjustment assumes the outcome is linear in the treatment and
the covariates; the partially linear model of Robinson (1988), fitted by double machine learning
(Chernozhukov et al. 2018) with cross-fitting, lets the covariates enter in any form:
Y = theta * T + g(X) + e. When the effect of the dose is not constant, theta is a
variance-weighted average of the unit slopes, which the estimand text says.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from whyflow.causal.estimation.backdoor import Estimate, normal_ci

__all__ = ["SLOPE", "slope_ols", "plm_dml"]

SLOPE = "slope"
"""The estimand label of a dose-response slope (per unit of the treatment)."""


def _estimand_text(treatment: str, outcome: str) -> str:
    return f"average change in {outcome} per one-unit increase in {treatment}"


def slope_ols(
    y: np.ndarray, t: np.ndarray, X: pd.DataFrame, treatment: str = "T", outcome: str = "Y", naive: bool = False
) -> Estimate:
    """OLS slope of the treatment (per unit), adjusted for X unless ``naive``; HC1 robust SE."""
    import statsmodels.api as sm

    cols = [t] if naive or X.shape[1] == 0 else [t, X.to_numpy(dtype=float)]
    exog = sm.add_constant(np.column_stack(cols))
    fit = sm.OLS(y, exog).fit(cov_type="HC1")
    ci, pv = normal_ci(float(fit.params[1]), float(fit.bse[1]))
    details: dict[str, Any] = {
        "per_unit_of_treatment": True,
        "estimand_description": _estimand_text(treatment, outcome)
        + (" (no adjustment)" if naive else ", assuming a linear dose-response"),
        "se_method": "HC1 robust (statsmodels)",
    }
    if naive:
        details["naive"] = True
    return Estimate(
        "Naive difference" if naive else "Regression adjustment (OLS)",
        SLOPE,
        float(fit.params[1]),
        float(fit.bse[1]),
        ci,
        pv,
        ["none: ignores confounding"]
        if naive
        else ["no unmeasured confounding given the adjustment set", "outcome linear in the treatment and covariates"],
        details,
    )


def plm_dml(
    y: np.ndarray,
    t: np.ndarray,
    X: pd.DataFrame,
    seed: int = 0,
    folds: int = 5,
    treatment: str = "T",
    outcome: str = "Y",
) -> Estimate:
    """Partially linear DML: residualise T and Y on X (learners chosen by CV loss), regress residual on residual.

    The standard error comes from the influence function of the orthogonal score.
    """
    from whyflow.causal.estimation.nuisance import fit_continuous

    if X.shape[1] == 0:
        raise ValueError("no covariates: the partially linear model reduces to the unadjusted slope")
    nu = fit_continuous(X, t, y, seed, folds)
    assert nu.m_t is not None and nu.m_y is not None
    rt, ry = t - nu.m_t, y - nu.m_y
    denom = float(np.mean(rt**2))
    if denom <= 1e-12 * max(float(np.var(t)), 1e-300):
        raise ValueError("the covariates predict the treatment exactly: no variation left to learn a slope from")
    theta = float(np.mean(rt * ry) / denom)
    psi = (ry - theta * rt) * rt / denom
    se = float(psi.std(ddof=1) / np.sqrt(len(y)))
    ci, pv = normal_ci(theta, se)
    return Estimate(
        "Partially linear DML (cross-fitted)",
        SLOPE,
        theta,
        se,
        ci,
        pv,
        [
            "no unmeasured confounding given the adjustment set",
            "effect linear in the treatment (a constant slope; otherwise a variance-weighted average slope)",
        ],
        {
            "per_unit_of_treatment": True,
            "estimand_description": _estimand_text(treatment, outcome)
            + " (partially linear model; with varying effects, a variance-weighted average of unit slopes)",
            "se_method": "influence function (orthogonal score)",
            "crossfit_folds": nu.folds,
            "nuisance_models": nu.choice,
            "nuisance_cv_loss": nu.cv_loss,
            "treatment_r2_from_covariates": round(1 - denom / max(float(np.var(t)), 1e-300), 4),
        },
    )
