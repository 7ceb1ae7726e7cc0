"""Sensitivity of an effect estimate to unmeasured confounding: E-values, Rosenbaum bounds, refuters.

* E-values (VanderWeele & Ding, 2017): the minimum strength of association, on the risk-ratio
  scale, that an unmeasured confounder would need with both treatment and outcome to explain
  the estimate away. Continuous outcomes go through the standardized mean difference
  (d = estimate / sd(outcome), RR ~ exp(0.91 d), VanderWeele 2017); binary outcomes through
  the risk ratio implied by the risk difference and the control group's risk.
* Rosenbaum bounds for the Wilcoxon signed-rank test on 1:1 propensity-matched pairs: the
  critical Gamma (odds of treatment within a pair) at which the worst-case p-value crosses 0.05.
* DoWhy's refuters, by least squares: :mod:`whyflow.causal.review.refuters`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "evalue_rr",
    "evalue_for_effect",
    "is_binary",
    "matched_pair_differences",
    "propensity_logit",
    "rosenbaum_pvalue",
    "rosenbaum_gamma",
]

SMD_TO_LOG_RR = 0.91
"""VanderWeele's (2017) conversion of a standardized mean difference to a log risk ratio."""


# ---- E-values ------------------------------------------------------------------------------
def evalue_rr(rr: float) -> float:
    """E-value of a risk ratio: RR + sqrt(RR (RR - 1)), with RR < 1 inverted first."""
    if not math.isfinite(rr) or rr <= 0:
        raise ValueError(f"a risk ratio must be positive and finite, got {rr}")
    if rr < 1:
        rr = 1.0 / rr
    return float(rr + math.sqrt(rr * (rr - 1.0)))


def is_binary(series: pd.Series) -> bool:
    """Whether a column holds only 0/1 (or two boolean) values."""
    values = set(pd.Series(series).dropna().unique().tolist())
    return len(values) == 2 and values <= {0, 1}  # True == 1 and False == 0


def _to_rr(value: float, scale: str, outcome_sd: float | None, baseline_risk: float | None) -> float:
    """One effect on the additive scale converted to the risk-ratio scale."""
    if scale == "smd":
        return math.exp(SMD_TO_LOG_RR * value / float(outcome_sd or 1.0))
    p0 = float(baseline_risk or 0.0)
    p1 = min(max(p0 + value, 1e-6), 1.0)
    return p1 / p0


def evalue_for_effect(
    estimate: float,
    ci_lower: float,
    ci_upper: float,
    *,
    outcome_sd: float | None = None,
    baseline_risk: float | None = None,
) -> dict[str, Any]:
    """E-values of an additive effect and of its confidence limit closest to the null.

    Pass ``outcome_sd`` for a continuous outcome (standardized-difference conversion) or
    ``baseline_risk`` (the control group's risk) for a binary outcome with a risk-difference
    estimate. When the interval crosses the null its limit's E-value is 1: no confounding at
    all is needed to make the interval include no effect.
    """
    if baseline_risk is not None:
        if not 0 < baseline_risk < 1:
            raise ValueError(f"baseline risk must lie strictly between 0 and 1, got {baseline_risk}")
        scale = "risk_ratio"
    elif outcome_sd is not None and outcome_sd > 0:
        scale = "smd"
    else:
        raise ValueError("need a positive outcome_sd (continuous outcome) or a baseline_risk (binary outcome)")
    rr = _to_rr(estimate, scale, outcome_sd, baseline_risk)
    rr_lo = _to_rr(ci_lower, scale, outcome_sd, baseline_risk)
    rr_hi = _to_rr(ci_upper, scale, outcome_sd, baseline_risk)
    crosses = ci_lower <= 0 <= ci_upper
    limit = rr_lo if estimate >= 0 else rr_hi
    return {
        "scale": scale,
        "risk_ratio": rr,
        "risk_ratio_ci": [rr_lo, rr_hi],
        "evalue_estimate": evalue_rr(rr),
        "evalue_ci": 1.0 if crosses else evalue_rr(limit),
        "ci_crosses_null": crosses,
        "standardized_effect": estimate / outcome_sd if scale == "smd" and outcome_sd else None,
    }


# ---- Rosenbaum bounds ----------------------------------------------------------------------
def _design_matrix(frame: pd.DataFrame, covariates: list[str]) -> np.ndarray:
    """Covariates one-hot encoded (categoricals) and standardized, as a float matrix."""
    x = pd.get_dummies(frame[covariates], drop_first=True, dtype=float)
    x = x.loc[:, x.std(ddof=0) > 0]
    return np.asarray((x - x.mean()) / x.std(ddof=0), dtype=float)


def propensity_logit(frame: pd.DataFrame, treatment: str, covariates: list[str]) -> np.ndarray:
    """Logit of a logistic-regression propensity of a binary ``treatment`` (zeros without covariates).

    ``frame`` must have no missing values in ``treatment`` and ``covariates``.
    """
    from sklearn.linear_model import LogisticRegression

    t = frame[treatment].astype(int).to_numpy()
    if not covariates:
        return np.zeros(len(t))
    x = _design_matrix(frame, covariates)
    return np.asarray(LogisticRegression(max_iter=1000).fit(x, t).decision_function(x))


def matched_pair_differences(
    frame: pd.DataFrame,
    treatment: str,
    outcome: str,
    covariates: list[str],
    seed: int = 0,
    caliper_sd: float = 0.2,
) -> np.ndarray:
    """Outcome differences (treated minus control) of 1:1 nearest-neighbour propensity pairs.

    The propensity is a logistic regression on ``covariates``; matching is greedy, on the logit
    of the propensity, without replacement (each control used once, as the signed-rank test
    assumes independent pairs), visiting the smaller group's units in a seeded random order,
    within a caliper of ``caliper_sd`` standard deviations of the logit (Austin, 2011): without
    it, late units get distant partners and the pairs are biased again.
    """
    data = frame[[treatment, outcome, *covariates]].dropna()
    t = data[treatment].astype(int).to_numpy()
    y = data[outcome].astype(float).to_numpy()
    score = propensity_logit(data, treatment, covariates)
    treated, control = np.flatnonzero(t == 1), np.flatnonzero(t == 0)
    small, large = (treated, control) if len(treated) <= len(control) else (control, treated)
    caliper = caliper_sd * float(score.std()) if score.std() > 0 else np.inf
    rng = np.random.default_rng(seed)
    available = np.ones(len(large), dtype=bool)
    diffs: list[float] = []
    for i in rng.permutation(small):
        distance = np.where(available, np.abs(score[large] - score[i]), np.inf)
        j = int(np.argmin(distance))
        if distance[j] > caliper:
            continue
        available[j] = False
        a, b = (i, large[j]) if t[i] == 1 else (large[j], i)
        diffs.append(y[a] - y[b])
    return np.asarray(diffs)


def rosenbaum_pvalue(differences: np.ndarray, gamma: float, *, positive: bool = True) -> float:
    """Upper bound of the one-sided Wilcoxon signed-rank p-value under hidden bias ``gamma``.

    Rosenbaum (2002, ch. 4): with p+ = Gamma / (1 + Gamma), the worst-case statistic has mean
    p+ * sum(ranks) and variance p+ (1 - p+) * sum(ranks^2) (normal approximation, ties by
    average ranks). ``positive`` tests a positive effect; otherwise the signs are flipped.
    """
    from scipy.stats import norm, rankdata

    d = np.asarray(differences, dtype=float)
    d = d if positive else -d
    d = d[d != 0]
    if d.size == 0:
        return 1.0
    ranks = rankdata(np.abs(d))
    t_plus = float(ranks[d > 0].sum())
    p_plus = gamma / (1.0 + gamma)
    mean = p_plus * ranks.sum()
    var = p_plus * (1.0 - p_plus) * float((ranks**2).sum())
    return float(norm.sf((t_plus - mean) / math.sqrt(var)))


def rosenbaum_gamma(
    differences: np.ndarray, *, alpha: float = 0.05, positive: bool = True, gamma_max: float = 20.0
) -> dict[str, Any]:
    """The critical Gamma: the smallest hidden bias at which the worst-case p-value exceeds ``alpha``.

    Gamma = 1 means the matched comparison is not significant even without hidden bias;
    ``gamma_max`` caps the search (the result is then reported as at least that value).
    """
    from scipy.optimize import brentq

    p1 = rosenbaum_pvalue(differences, 1.0, positive=positive)
    grid = [1.0, 1.25, 1.5, 2.0, 3.0, 5.0]
    table = {g: rosenbaum_pvalue(differences, g, positive=positive) for g in grid}
    if p1 > alpha:
        gamma, capped = 1.0, False
    elif rosenbaum_pvalue(differences, gamma_max, positive=positive) <= alpha:
        gamma, capped = gamma_max, True
    else:
        gamma = float(brentq(lambda g: rosenbaum_pvalue(differences, g, positive=positive) - alpha, 1.0, gamma_max))
        capped = False
    return {
        "gamma": gamma,
        "capped": capped,
        "alpha": alpha,
        "p_value_gamma_1": p1,
        "p_values": {str(g): p for g, p in table.items()},
        "n_pairs": int(np.asarray(differences).size),
    }
