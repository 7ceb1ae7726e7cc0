"""One treatment-outcome pair's estimation: setup, the method menu, headline rule, results.

Shared by ``effect_estimator`` (runs a fixed plan) and ``effect_estimator_react`` (chooses
each step), so both produce identical estimates for identical choices.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from agents.base.errors import AgentError
from agents.stats import propensity as P
from agents.stats.adjustment import Adjustment, Prepared, choose_adjustment, prepare, safe_name
from agents.stats.estimators import Estimate

__all__ = [
    "METHODS",
    "PairSetup",
    "setup_pair",
    "refit_propensity",
    "default_methods",
    "run_method",
    "choose_headline",
    "to_result",
]

METHODS = {
    "naive": "Naive difference",
    "ols": "Regression adjustment (OLS)",
    "ipw": "Inverse probability weighting",
    "aipw": "AIPW (doubly robust)",
    "matching": "Propensity score matching",
    "stratification": "Propensity score stratification",
    "s_learner": "S-learner",
    "t_learner": "T-learner",
    "x_learner": "X-learner",
    "dr_learner": "DR-learner",
    "iv": "Instrumental variables (2SLS)",
    "did": "Difference-in-differences",
    "rdd": "Regression discontinuity",
}
PS_METHODS = ("ipw", "aipw", "matching", "stratification", "s_learner", "t_learner", "x_learner", "dr_learner")
DESIGN_METHODS = ("iv", "did", "rdd")
META_MIN_N = 1000


@dataclass
class PairSetup:
    """Everything the estimators need for one pair, and what was decided while building it."""

    treatment: str
    outcome: str
    frame: pd.DataFrame
    adjustment: Adjustment
    prep: Prepared
    estimand: str
    design: dict[str, Any]
    seed: int
    bootstrap: int
    ps_model: str = "logistic"
    ps: np.ndarray | None = None
    overlap: dict[str, Any] | None = None
    trim: dict[str, Any] | None = None
    changes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    _dowhy: Any = None

    @property
    def binary(self) -> bool:
        """Whether the treatment is binary (backdoor estimators apply)."""
        return self.ps is not None

    @property
    def scores(self) -> np.ndarray:
        """The propensity scores (only for a binary treatment)."""
        if self.ps is None:
            raise AgentError("propensity scores exist only for a binary treatment")
        return self.ps


def _design(view_design: Any, frame: pd.DataFrame, profile: Any, dk: dict[str, Any] | None) -> dict[str, Any]:
    """The declared design: instrument, discontinuity and/or panel columns present in the data."""
    d: dict[str, Any] = {}
    if view_design.instrument and view_design.instrument in frame.columns:
        d["iv"] = {"instrument": view_design.instrument}
    if (
        view_design.running_variable
        and view_design.cutoff is not None
        and view_design.running_variable in frame.columns
    ):
        d["rdd"] = {"running_variable": view_design.running_variable, "cutoff": float(view_design.cutoff)}
    unit = view_design.unit_column or next((c for c, r in ((dk or {}).get("roles") or {}).items() if r == "id"), None)
    time = view_design.time_column or (profile.time_column if profile is not None else None)
    if unit in frame.columns and time in frame.columns and frame.duplicated(subset=[unit]).any():
        d["did"] = {"unit_column": unit, "time_column": time}
    return d


def setup_pair(
    frame: pd.DataFrame,
    treatment: str,
    outcome: str,
    *,
    profile: Any,
    view_design: Any,
    confounder_discovery: dict[str, Any] | None,
    domain_knowledge: dict[str, Any] | None,
    codes: list[str],
    ps_model: str,
    seed: int,
    bootstrap: int,
) -> PairSetup:
    """Choose the adjustment set, prepare the data, fit propensities and act on trim codes."""
    design = _design(view_design, frame, profile, domain_knowledge)
    reserved = (view_design.instrument, view_design.running_variable, view_design.unit_column, view_design.time_column)
    adj = choose_adjustment(
        frame,
        treatment,
        outcome,
        list(profile.potential_confounders),
        confounder_discovery,
        domain_knowledge,
        widen="widen_adjustment_set" in codes,
        design_columns=reserved,
    )
    binary = frame[treatment].dropna().nunique() == 2
    if not binary and not ({"iv", "rdd"} & set(design)):
        raise AgentError(
            f"treatment '{treatment}' has {frame[treatment].nunique()} distinct values; the backdoor estimators need a "
            "binary treatment. Dichotomise it, or declare an instrument (--instrument) or a discontinuity "
            "(--running-variable/--cutoff)."
        )
    extra = [c for c in (design.get("iv", {}).get("instrument"), design.get("rdd", {}).get("running_variable")) if c]
    prep = prepare(
        frame, treatment, outcome, adj.covariates + [c for c in extra if c not in adj.covariates], binary=binary
    )
    design_cols = [
        c
        for c in prep.X.columns
        if c in {safe_name(e) for e in extra} and c not in {safe_name(a) for a in adj.covariates}
    ]
    setup = PairSetup(
        treatment,
        outcome,
        frame,
        adj,
        prep,
        view_design.estimand if view_design.estimand in ("ATE", "ATT") else "ATE",
        design,
        seed,
        bootstrap,
        ps_model,
    )
    setup.notes.extend(prep.notes)
    setup.design["_design_cols"] = design_cols
    if "switch_propensity_model" in codes:
        setup.ps_model = "gbm" if ps_model == "logistic" else "logistic"
        setup.changes.append(f"switch_propensity_model: propensity model switched to {setup.ps_model}")
    if binary:
        refit_propensity(setup, setup.ps_model)
        if "trim_to_common_support" in codes:
            _trim(setup)
    if adj.added:
        setup.changes.append("widen_adjustment_set: added " + ", ".join(adj.added))
    return setup


def _covariates(setup: PairSetup) -> pd.DataFrame:
    """The adjustment covariates (design columns such as the instrument left out)."""
    drop = setup.design.get("_design_cols", [])
    return setup.prep.X.drop(columns=drop) if drop else setup.prep.X


def refit_propensity(setup: PairSetup, model: str) -> dict[str, Any]:
    """(Re)fit the cross-fitted propensity with ``model`` and refresh the overlap summary."""
    X = _covariates(setup)
    setup.ps_model = model
    setup.ps = P.fit_propensity(X, setup.prep.t, model, setup.seed)
    setup.overlap = (
        P.overlap_summary(setup.ps, setup.prep.t)
        if X.shape[1]
        else {"overlap_ok": True, "outside_support": {"overall": 0.0}}
    )
    setup._dowhy = None
    return setup.overlap


def _trim(setup: PairSetup) -> None:
    keep, (lo, hi) = P.trim_mask(setup.scores)
    n_drop = int((~keep).sum())
    p = setup.prep
    setup.prep = Prepared(
        p.frame[keep].reset_index(drop=True),
        p.t[keep],
        p.y[keep],
        p.X[keep].reset_index(drop=True),
        p.treated_label,
        p.n_missing_dropped,
        p.notes,
    )
    setup.trim = {"lower": round(lo, 4), "upper": round(hi, 4), "n_dropped": n_drop, "n_kept": int(keep.sum())}
    refit_propensity(setup, setup.ps_model)
    setup.changes.append(
        f"trim_to_common_support: dropped {n_drop} units with propensity outside [{lo:.3f}, {hi:.3f}] (Crump et al. rule); "
        "estimates now describe the overlap population"
    )


def check_balance(setup: PairSetup) -> dict[str, Any]:
    """Balance (SMDs) before/after weighting with the current propensity scores."""
    if setup.ps is None:
        return {}
    return P.diagnose(_covariates(setup), setup.prep.t, setup.ps, setup.estimand)


def default_methods(setup: PairSetup, codes: list[str]) -> tuple[list[str], list[str]]:
    """Methods chosen from the data and design, and why each family is in or out."""
    n = len(setup.prep.y)
    methods, why = ["naive"], ["Naive difference reported for contrast (it ignores confounding)."]
    methods.append("ols")
    for kind, label in (
        ("iv", "instrument"),
        ("did", "panel (unit and time columns)"),
        ("rdd", "running variable and cutoff"),
    ):
        if kind in setup.design:
            methods.append(kind)
            why.append(f"{METHODS[kind]}: the user declared a {label}.")
    if not any(k in setup.design for k in DESIGN_METHODS):
        why.append("No instrument, panel or discontinuity declared: design-based estimators not run.")
    if setup.binary and any(k in setup.design for k in DESIGN_METHODS):
        why.append(
            "A design was declared, so the propensity methods (which assume every confounder is measured) are not run "
            "by default; pin them with `methods` to compare."
        )
    elif setup.binary:
        methods += ["ipw", "aipw", "matching", "stratification"]
        why.append("Binary treatment: propensity methods (IPW, AIPW, matching, stratification) run.")
        t = setup.prep.t
        if n >= META_MIN_N and min(t.sum(), len(t) - t.sum()) >= 200:
            methods += ["s_learner", "t_learner", "x_learner", "dr_learner"]
            why.append(f"n = {n} with >= 200 units per arm: meta-learners (S, T, X, DR) run for effect heterogeneity.")
        else:
            why.append(f"n = {n} (or an arm under 200 units): meta-learners skipped, too few units for stable CATEs.")
    if "add_doubly_robust" in codes and "aipw" not in methods and setup.binary:
        methods.append("aipw")
    return methods, why


def _dowhy(setup: PairSetup) -> Any:
    from agents.stats.estimators import DowhyBackdoor

    if setup._dowhy is None:
        setup._dowhy = DowhyBackdoor(_covariates(setup), setup.prep.t, setup.prep.y, setup.scores)
    return setup._dowhy


def run_method(setup: PairSetup, name: str) -> Estimate:
    """Run one method of the menu on the pair (raises AgentError when it does not apply)."""
    from agents.stats import designs as D
    from agents.stats import estimators as E

    p, X = setup.prep, _covariates(setup)
    if name in PS_METHODS and not setup.binary:
        raise AgentError(f"{METHODS[name]} needs a binary treatment")
    if name in DESIGN_METHODS and name not in setup.design:
        raise AgentError(f"{METHODS[name]} needs a declared design ({name})")
    if name == "naive":
        return E.naive_difference(p.y, p.t) if setup.binary else _slope(p.y, p.t)
    if name == "ols":
        return E.ols_adjustment(_dowhy(setup)) if setup.binary else _ols_continuous(p.y, p.t, X)
    if name == "ipw":
        return E.ipw_hajek(p.y, p.t, setup.scores, setup.estimand)
    if name == "aipw":
        return E.aipw(X, p.y, p.t, setup.scores, setup.seed, setup.estimand)
    if name in ("matching", "stratification"):
        fn = E.ps_matching if name == "matching" else E.ps_stratification
        return fn(_dowhy(setup), setup.estimand, setup.bootstrap, setup.seed)
    if name.endswith("_learner"):
        from agents.stats.meta_learners import meta_learner

        return meta_learner(name.split("_")[0].upper(), X, p.y, p.t, setup.scores, setup.seed)
    if name == "iv":
        z = setup.design["iv"]["instrument"]
        return D.iv_2sls(p.y, p.t, p.frame[z].astype(float).to_numpy(), X, z)
    if name == "did":
        d = setup.design["did"]
        return D.did_twfe(setup.frame, d["unit_column"], d["time_column"], setup.treatment, setup.outcome)
    if name == "rdd":
        d = setup.design["rdd"]
        x = p.frame[d["running_variable"]].astype(float).to_numpy()
        return D.rdd_local_linear(x, p.y, p.t, d["cutoff"], d["running_variable"])
    raise AgentError(f"unknown method '{name}'; choose from {', '.join(METHODS)}")


def _slope(y: np.ndarray, t: np.ndarray) -> Estimate:
    return _ols_continuous(y, t, pd.DataFrame(index=range(len(y))), naive=True)


def _ols_continuous(y: np.ndarray, t: np.ndarray, X: pd.DataFrame, naive: bool = False) -> Estimate:
    """OLS slope of a non-binary treatment (per unit of treatment), HC1 SE."""
    import statsmodels.api as sm

    from agents.stats.estimators import normal_ci

    exog = sm.add_constant(np.column_stack([t, X.to_numpy(dtype=float)]) if X.shape[1] else t.reshape(-1, 1))
    fit = sm.OLS(y, exog).fit(cov_type="HC1")
    ci, pv = normal_ci(float(fit.params[1]), float(fit.bse[1]))
    method = "Naive difference" if naive else "Regression adjustment (OLS)"
    details = {"naive": True} if naive else {}
    details["per_unit_of_treatment"] = True
    return Estimate(method, "ATE", float(fit.params[1]), float(fit.bse[1]), ci, pv, ["linear dose-response"], details)


def choose_headline(
    setup: PairSetup, estimates: dict[str, Estimate], ps_diag: dict[str, Any] | None
) -> tuple[str, str]:
    """The headline method and why, by a fixed rule (see agents/README and the module docs).

    1. A declared design (IV, then RDD, then DiD) wins: it does not rest on "no unmeasured
       confounding". 2. Otherwise AIPW when overlap is adequate (or the sample was trimmed to
       common support): doubly robust, efficient. 3. With poor overlap and no trimming, OLS:
       weighting estimators are unstable there; regression extrapolates, so say so. 4. Else the
       first available of OLS, IPW, matching, stratification, meta-learners.
    """
    for kind in ("iv", "rdd", "did"):
        if kind in estimates:
            return (
                kind,
                f"{estimates[kind].method} headlines because the user declared that design; it identifies the effect without assuming all confounders are measured.",
            )
    overlap_ok = bool((setup.overlap or {}).get("overlap_ok", True))
    if ps_diag and ps_diag.get("treatment") == setup.treatment and not setup.trim:
        overlap_ok = overlap_ok and bool(ps_diag.get("overlap_ok", True))
    agree = _agreement(estimates)
    if "aipw" in estimates and (overlap_ok or setup.trim):
        where = "on the trimmed common-support sample" if setup.trim else "and propensity overlap is adequate"
        return (
            "aipw",
            f"AIPW headlines: it is doubly robust (consistent if either the propensity or the outcome model is right) {where}. {agree}",
        )
    if not overlap_ok and "ols" in estimates:
        return "ols", (
            "Regression adjustment headlines because propensity overlap is poor: weighting estimators rest on a few "
            f"extreme weights there, while OLS extrapolates linearly across the gap (trimming to common support is advised). {agree}"
        )
    for name in (
        "ols",
        "ipw",
        "aipw",
        "matching",
        "stratification",
        "dr_learner",
        "x_learner",
        "t_learner",
        "s_learner",
        "naive",
    ):
        if name in estimates:
            return name, f"{estimates[name].method} headlines as the most credible method that was run. {agree}"
    name = next(iter(estimates))
    return name, f"{estimates[name].method} is the only estimate."


def _agreement(estimates: dict[str, Estimate]) -> str:
    if "aipw" in estimates and "ols" in estimates:
        a, o = estimates["aipw"], estimates["ols"]
        gap = abs(a.estimate - o.estimate) / max(np.hypot(a.std_error, o.std_error), 1e-12)
        verdict = "agree" if gap < 2 else "DISAGREE (check model specification and overlap)"
        return f"AIPW and OLS {verdict} ({gap:.1f} combined SEs apart)."
    return ""


def to_result(setup: PairSetup, key: str, est: Estimate, round_no: int, changes: list[str]) -> dict[str, Any]:
    """A TreatmentEffectResult-shaped dict for the state."""
    details = {
        **est.details,
        "method_key": key,
        "n_used": int(len(setup.prep.y)),
        "adjustment_set": [] if key in ("naive", "did", "rdd") else list(setup.adjustment.covariates),
        "excluded_covariates": setup.adjustment.excluded,
        "round": round_no,
        "changes_applied": [c.split(":", 1)[0] for c in changes],
        "treated_value": setup.prep.treated_label,
        "propensity_model": setup.ps_model if key in PS_METHODS else None,
    }
    if setup.trim and key not in DESIGN_METHODS:
        details["trimmed"] = setup.trim
        details["population"] = "units inside common support (trimmed)"
    return {
        "method": est.method,
        "estimand": est.estimand,
        "estimate": est.estimate,
        "std_error": est.std_error,
        "ci_lower": est.ci[0],
        "ci_upper": est.ci[1],
        "p_value": est.p_value,
        "assumptions_tested": list(est.assumptions),
        "details": details,
        "treatment_variable": setup.treatment,
        "outcome_variable": setup.outcome,
    }
