"""Sensitivity of an effect estimate to unmeasured confounding: E-values, Rosenbaum bounds, refuters.

* E-values (VanderWeele & Ding, 2017): the minimum strength of association, on the risk-ratio
  scale, that an unmeasured confounder would need with both treatment and outcome to explain
  the estimate away. Continuous outcomes go through the standardized mean difference
  (d = estimate / sd(outcome), RR ~ exp(0.91 d), VanderWeele 2017); binary outcomes through
  the risk ratio implied by the risk difference and the control group's risk.
* Rosenbaum bounds for the Wilcoxon signed-rank test on 1:1 propensity-matched pairs: the
  critical Gamma (odds of treatment within a pair) at which the worst-case p-value crosses 0.05.
* DoWhy refuters (placebo treatment, random common cause, data subset, added unobserved common
  cause) on a backdoor linear-regression estimate over the adjustment set.
"""

from __future__ import annotations

import math
import warnings
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "evalue_rr",
    "evalue_for_effect",
    "is_binary",
    "matched_pair_differences",
    "propensity_logit",
    "rosenbaum_pvalue",
    "rosenbaum_gamma",
    "run_refuters",
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


# ---- DoWhy refuters ------------------------------------------------------------------------
@contextmanager
def _quiet_dowhy() -> Iterator[None]:
    """Silence DoWhy's per-estimate pandas copy-keyword deprecation warning, nothing else."""
    from pandas.errors import Pandas4Warning

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=Pandas4Warning, module=r"dowhy\.")
        yield


@contextmanager
def _numpy_global_seed(seed: int) -> Iterator[None]:
    """Seed numpy's global generator for a library that only uses it, then restore it."""
    saved = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(saved)


def _refutation(result: Any) -> dict[str, Any]:
    """The numbers of one DoWhy CausalRefutation as plain floats."""
    sig = getattr(result, "refutation_result", None) or {}
    p = sig.get("p_value")
    return {
        "new_effect": float(np.mean(result.new_effect)),
        "p_value": None if p is None else float(p),
    }


def run_refuters(
    frame: pd.DataFrame,
    treatment: str,
    outcome: str,
    adjustment: list[str],
    *,
    simulations: int = 50,
    seed: int = 0,
    subset_fraction: float = 0.8,
    flip_probabilities: tuple[float, ...] = (0.02, 0.05, 0.1),
    outcome_strengths_sd: tuple[float, ...] = (0.05, 0.1, 0.25),
) -> dict[str, Any]:
    """DoWhy's four refuters on a backdoor linear-regression estimate of the effect.

    Random states are passed as ``RandomState`` objects (an int makes DoWhy's data-subset
    refuter draw the same subset every time). The unobserved common cause flips a binary
    treatment with the given probabilities (a continuous one gets a linear effect of that many
    treatment SDs) and shifts the outcome by the given multiples of its SD.
    """
    from dowhy import CausalModel
    from threadpoolctl import threadpool_limits

    data = frame[[treatment, outcome, *adjustment]].dropna().reset_index(drop=True)
    binary_t = is_binary(data[treatment])
    if binary_t:
        data[treatment] = data[treatment].astype(int)
    model = CausalModel(data=data, treatment=treatment, outcome=outcome, common_causes=adjustment or None)
    # Hundreds of tiny OLS fits: one BLAS thread avoids oversubscription (2x faster on 2 busy cores).
    with _quiet_dowhy(), threadpool_limits(limits=1):
        estimand = model.identify_effect(proceed_when_unidentifiable=True)
        estimate = model.estimate_effect(estimand, method_name="backdoor.linear_regression")
        out: dict[str, Any] = {"estimate": float(estimate.value), "n_used": len(data), "simulations": simulations}
        for name, kwargs in (
            ("placebo_treatment_refuter", {"placebo_type": "permute"}),
            ("random_common_cause", {}),
            ("data_subset_refuter", {"subset_fraction": subset_fraction}),
        ):
            try:
                result = model.refute_estimate(
                    estimand,
                    estimate,
                    method_name=name,
                    num_simulations=simulations,
                    random_state=np.random.RandomState(seed),
                    **kwargs,
                )
                out[name] = _refutation(result)
            except Exception as exc:  # noqa: BLE001 - one refuter's failure is a recorded skip
                out.setdefault("skipped", {})[name] = failure_reason(exc)
        try:
            out["add_unobserved_common_cause"] = _unobserved(
                model,
                estimand,
                estimate,
                data,
                treatment,
                outcome,
                binary_t,
                seed,
                flip_probabilities,
                outcome_strengths_sd,
            )
        except Exception as exc:  # noqa: BLE001 - as above
            out.setdefault("skipped", {})["add_unobserved_common_cause"] = failure_reason(exc)
    return out


def failure_reason(exc: BaseException) -> str:
    """An exception as one short line for a skip note: ``ValueError: strata too small``."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__


def _unobserved(
    model: Any,
    estimand: Any,
    estimate: Any,
    data: pd.DataFrame,
    treatment: str,
    outcome: str,
    binary_t: bool,
    seed: int,
    flip_probabilities: tuple[float, ...],
    outcome_strengths_sd: tuple[float, ...],
) -> dict[str, Any]:
    """The added-unobserved-common-cause grid: effect remaining at each pair of strengths."""
    sd_y = float(data[outcome].std())
    kappa_y = [s * sd_y for s in outcome_strengths_sd]
    if binary_t:
        kappa_t, effect_on_t = list(flip_probabilities), "binary_flip"
    else:
        kappa_t, effect_on_t = [p * float(data[treatment].std()) for p in flip_probabilities], "linear"
    with _numpy_global_seed(seed):  # DoWhy draws the confounder from numpy's global generator
        result = model.refute_estimate(
            estimand,
            estimate,
            method_name="add_unobserved_common_cause",
            confounders_effect_on_treatment=effect_on_t,
            confounders_effect_on_outcome="linear",
            effect_strength_on_treatment=kappa_t,
            effect_strength_on_outcome=kappa_y,
            plotmethod=None,
        )
    grid = np.asarray(result.new_effect_array, dtype=float)
    return {
        "effect_on_treatment": effect_on_t,
        "strengths_treatment": list(flip_probabilities),
        "strengths_outcome_sd": list(outcome_strengths_sd),
        "new_effects": grid.tolist(),
        "min_effect": float(grid.min()),
        "max_effect": float(grid.max()),
        "strongest_effect": float(grid[-1, -1]),
    }
