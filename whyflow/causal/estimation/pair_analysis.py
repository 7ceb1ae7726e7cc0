"""One treatment-outcome pair's estimation: setup, propensity refits, one method's run, typed results.

Shared by ``effect_estimator`` (runs a fixed plan) and ``effect_estimator_react`` (chooses
each step), so both produce identical estimates for identical choices.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from whyflow.causal.diagnostics import ConfounderDiscovery, PSDiagnostics
from whyflow.causal.discovery.adjustment import Adjustment, Prepared, choose_adjustment, prepare, safe_name
from whyflow.causal.estimates import EstimateDetails, Trimming
from whyflow.causal.estimation import propensity as P
from whyflow.causal.estimation.backdoor import Estimate
from whyflow.causal.estimation.estimate_checks import check_estimate
from whyflow.causal.estimation.menu import DESIGN_METHODS
from whyflow.causal.estimation.methods import REGISTRY
from whyflow.causal.estimation.nuisance import MORE_FOLDS
from whyflow.causal.estimation.pair_setup import PairSetup, covariates_of
from whyflow.causal.knowledge import DomainKnowledge
from whyflow.causal.review.complete_case import complete_case_frame
from whyflow.causal.state import TreatmentEffectResult
from whyflow.core.errors import AgentError

__all__ = [
    "setup_pair",
    "shared_adjustment",
    "one_block",
    "refit_propensity",
    "check_balance",
    "run_method",
    "to_result",
    "mark_credibility",
    "population",
]


def _design(view_design: Any, frame: pd.DataFrame, profile: Any, dk: DomainKnowledge | None) -> dict[str, Any]:
    """The declared design: instrument, discontinuity and/or panel columns present in the data."""
    d: dict[str, Any] = {}
    if view_design.instrument and view_design.instrument in frame.columns:
        d["iv"] = {"instrument": view_design.instrument}
        if view_design.extra_instruments:
            d["iv"]["instruments"] = [c for c in view_design.instruments if c in frame.columns]
    if (
        view_design.running_variable
        and view_design.cutoff is not None
        and view_design.running_variable in frame.columns
    ):
        d["rdd"] = {"running_variable": view_design.running_variable, "cutoff": float(view_design.cutoff)}
        if view_design.fuzzy:
            d["rdd"]["stated_fuzzy"] = True
    unit = view_design.unit_column or next((c for c, r in (dk.roles if dk else {}).items() if r == "id"), None)
    time = view_design.time_column or (profile.time_column if profile is not None else None)
    if unit in frame.columns and time in frame.columns and frame.duplicated(subset=[unit]).any():
        d["did"] = {"unit_column": unit, "time_column": time}
        if view_design.repeated_cross_section:
            d["did"]["cross_section"] = True
    return d


def setup_pair(
    frame: pd.DataFrame,
    treatment: str,
    outcome: str,
    *,
    profile: Any,
    view_design: Any,
    confounder_discovery: ConfounderDiscovery | None,
    domain_knowledge: DomainKnowledge | None,
    codes: list[str],
    ps_model: str,
    seed: int,
    bootstrap: int,
    cache_dir: Any = None,
    ps_diagnostics: PSDiagnostics | None = None,
) -> PairSetup:
    """Adopt (or choose) the adjustment set, prepare the data, fit propensities and act on trim codes.

    When propensity diagnostics recorded their adjustment decision for this pair in this round,
    the estimator adopts it: one decision, made once (``choose_adjustment`` on the same inputs
    otherwise, e.g. when diagnostics were skipped for a declared design or a continuous treatment).
    """
    design = _design(view_design, frame, profile, domain_knowledge)
    reserved = (
        *view_design.instruments,
        view_design.running_variable,
        view_design.unit_column,
        view_design.time_column,
    )
    adj = shared_adjustment(ps_diagnostics, treatment, outcome, "widen_adjustment_set" in codes) or choose_adjustment(
        frame,
        treatment,
        outcome,
        list(profile.potential_confounders),
        confounder_discovery,
        domain_knowledge,
        widen="widen_adjustment_set" in codes,
        design_columns=reserved,
        stated=view_design.controls,
    )
    levels = frame[treatment].dropna().nunique()
    binary = levels == 2
    if not binary and adj.recipe_choice is None:  # stated controls stand as stated
        _restore_dose_covariates(frame, treatment, adj)
    if not binary and not pd.api.types.is_numeric_dtype(frame[treatment]):
        raise AgentError(
            f"treatment '{treatment}' has {levels} unordered categories; compare two of them (make a binary "
            "treatment column) or give a numeric dose"
        )
    if levels < 2:
        raise AgentError(f"treatment '{treatment}' takes a single value: there is no comparison group")
    complete: dict[str, dict[str, Any]] = {}
    if not any(k in design for k in DESIGN_METHODS):  # design estimators read their own rows
        frame, covariates, complete = complete_case_frame(frame, treatment, outcome, adj.covariates)
        adj.covariates[:] = covariates
    iv = design.get("iv", {})
    extra = [
        c for c in (*iv.get("instruments", [iv.get("instrument")]), design.get("rdd", {}).get("running_variable")) if c
    ]
    prep = prepare(
        frame, treatment, outcome, adj.covariates + [c for c in extra if c not in adj.covariates], binary=binary
    )
    design_cols = [
        c
        for c in prep.X.columns
        if c in {safe_name(e) for e in extra} and c not in {safe_name(a) for a in adj.covariates}
    ]
    prep.X, ols_design = one_block(prep.X, prep.t if binary and not design_cols else None)
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
    setup.cache_dir = cache_dir
    setup._design, setup._design_of = ols_design, prep
    setup.notes.extend(prep.notes)
    if complete:
        setup.design["_complete_cases"] = complete
        setup.notes.append(
            "Estimated on the rows where "
            + ", ".join(f"{c} was measured ({v['share_imputed']:.0%} of rows imputed)" for c, v in complete.items())
            + ": adjusting for a median-filled confounder with its missing indicator adjusts only partly for it."
        )
    setup.design["_design_cols"] = design_cols
    if view_design.cluster and view_design.cluster in frame.columns:
        setup.design["_cluster"] = view_design.cluster
    if not binary:
        setup.notes.append(
            f"'{treatment}' takes {levels} values: its effect is summarised as a slope (per unit of {treatment})."
        )
    if "refit_nuisance" in codes:
        setup.folds = MORE_FOLDS
        setup.changes.append(
            f"refit_nuisance: nuisance models re-chosen by cross-validated loss with {MORE_FOLDS} cross-fitting folds"
        )
    if binary:
        refit_propensity(setup, ps_model)
        if "switch_propensity_model" in codes and not setup.no_covariates and setup.nuisance_failed is None:
            before = setup.ps_model
            refit_propensity(setup, "gbm" if before == "logistic" else "logistic")
            setup.changes.append(
                f"switch_propensity_model: propensity model switched from {before} to {setup.ps_model}"
            )
        if setup.no_covariates and not any(k in design for k in DESIGN_METHODS) and adj.recipe_choice is None:
            _precision(setup, profile, confounder_discovery, reserved)
        if "trim_to_common_support" in codes and setup.nuisance_failed is None:
            _trim(setup)
        if setup.nuisance_failed is not None:
            setup.notes.append(
                f"The propensity and outcome models could not be fitted ({setup.nuisance_failed}): the estimators "
                "that read them are skipped."
            )
    if adj.added:
        setup.changes.append("widen_adjustment_set: added " + ", ".join(adj.added))
    return setup


def _restore_dose_covariates(frame: pd.DataFrame, treatment: str, adj: Adjustment) -> None:
    """Undo "deterministic function of the treatment" for a many-valued treatment unless it truly is one.

    With a continuous treatment every value is unique, so the level-based test in
    ``derived_from_treatment`` flags every continuous covariate; only a near-perfect correlation
    or a treatment with repeated values (each level seen at least twice on average) is evidence.
    """
    per_level = frame[treatment].notna().sum() / max(frame[treatment].nunique(), 1)
    if per_level >= 2:
        return
    t = pd.to_numeric(frame[treatment], errors="coerce")
    for col, reason in list(adj.excluded.items()):
        if not reason.startswith("deterministic function of the treatment (constant"):
            continue
        x = frame[col]
        if pd.api.types.is_numeric_dtype(x) and x.std() > 0 and abs(x.corr(t)) > 0.999:
            continue
        del adj.excluded[col]
        adj.covariates.append(col)


def shared_adjustment(ps: PSDiagnostics | None, treatment: str, outcome: str, widen: bool) -> Adjustment | None:
    """Propensity diagnostics' adjustment decision for this pair and this round's codes, if recorded."""
    decision = ps.adjustment if ps is not None else None
    if decision is None or ps is None or ps.treatment != treatment or ps.outcome != outcome:
        return None
    if decision.widened != widen:
        return None
    return Adjustment(
        covariates=list(decision.covariates),
        excluded=dict(decision.excluded),
        source=decision.source,
        added=list(decision.added),
        caveat=decision.caveat,
        recipe_choice=None if decision.recipe_choice is None else list(decision.recipe_choice),
    )


def one_block(X: pd.DataFrame, t: np.ndarray | None = None) -> tuple[pd.DataFrame, np.ndarray | None]:
    """The float covariates as one block of memory, and with ``t`` the OLS design [1, t, X] in the same block.

    The frame has the same values and labels, and ``X.to_numpy(dtype=float)`` is a view laid out
    as pandas lays out the copy it makes of separate columns (Fortran order), so the nuisance
    fits, the DR-learner and the balance checks read one matrix instead of each copying it
    (137 MB at 1M x 18). The design is the matrix ``np.column_stack([1, t, X])`` makes, the same
    values in the same layout, without its copy. Returns ``(X, None)`` for anything but float columns.
    """
    if X.shape[1] == 0 or not all(d == np.float64 for d in X.dtypes):
        return X, None
    lead = 0 if t is None else 2
    block = np.empty((lead + X.shape[1], len(X)))
    if t is not None:
        block[0] = 1.0
        block[1] = t.astype(int)  # the estimators' treatment column, t.astype(int) as floats
    for j in range(X.shape[1]):
        block[lead + j] = X.iloc[:, j].to_numpy()
    frame = pd.DataFrame(block[lead:].T, index=X.index, columns=X.columns, copy=False)
    return frame, None if t is None else block.T


def refit_propensity(setup: PairSetup, model: str) -> dict[str, Any]:
    """(Re)fit the cross-fitted nuisances (``model`` pins the propensity learner, "auto" picks it by CV loss).

    One fit serves AIPW, the DR-learner, IPW, matching, stratification and the balance checks.
    A fit that fails (a fold whose learner meets non-finite values, a fold without one arm) leaves
    the pair without nuisances and says why in :attr:`PairSetup.nuisance_failed`: the estimators
    that read them fail with that reason, regression adjustment and the contrast still run.
    Returns the overlap summary (empty when the fit failed).
    """
    from whyflow.causal.estimation.nuisance import fit_binary

    X = covariates_of(setup)
    try:
        nu = fit_binary(X, setup.prep.t, setup.prep.y, setup.seed, setup.folds, model, cache_dir=setup.cache_dir)
    except AgentError:
        raise
    except Exception as exc:  # noqa: BLE001 - the estimators that need the fit fail with its reason
        text = " ".join(str(exc).split())[:300] or type(exc).__name__
        setup.nuisance, setup.ps, setup.overlap, setup._dowhy = None, None, None, None
        setup.nuisance_failed = f"{type(exc).__name__}: {text}"
        return {}
    setup.nuisance, setup.nuisance_failed = nu, None
    setup.ps_model = nu.choice["propensity"] if X.shape[1] else model
    assert nu.e is not None
    setup.ps = nu.e
    setup.overlap = (
        P.overlap_summary(setup.ps, setup.prep.t)
        if X.shape[1]
        else {"overlap_ok": True, "outside_support": {"overall": 0.0}}
    )
    setup._dowhy = None
    return setup.overlap


def _precision(setup: PairSetup, profile: Any, cd: ConfounderDiscovery | None, reserved: tuple[Any, ...]) -> None:
    """Pick pre-treatment covariates that may sharpen the difference in means (empty adjustment set)."""
    from whyflow.causal.discovery.rct import describe, precision_covariates

    pool = [
        *(profile.potential_confounders if profile is not None else []),
        *(cd.excluded if cd is not None else {}),
        *(cd.data_associated if cd is not None else []),
    ]
    skip = {setup.treatment, setup.outcome, *[c for c in reserved if c]}
    # With no covariates, prepare() kept exactly the rows where the treatment and outcome are known.
    rows = setup.frame[setup.frame[[setup.treatment, setup.outcome]].notna().all(axis=1)].reset_index(drop=True)
    X, left_out = precision_covariates(rows, setup.prep.t, [str(c) for c in pool], setup.adjustment.excluded, skip)
    setup.precision = X
    setup.notes.append(describe(X, left_out))


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
        None if p.rows is None else p.rows[keep],
        p.collinear,
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
    return P.diagnose(covariates_of(setup), setup.prep.t, setup.ps, setup.estimand)


def run_method(setup: PairSetup, name: str) -> Estimate:
    """Run one method of the menu on the pair; any failure becomes an AgentError naming the method.

    The caller records it as a skip with its reason, so one estimator's failure (a DoWhy check,
    too few rows per stratum, a singular fit) never ends the analysis.
    """
    spec = REGISTRY.get(name)
    if spec is None:
        raise AgentError(f"unknown method '{name}'; choose from {', '.join(REGISTRY)}")
    if spec.needs_binary and not setup.binary:
        raise AgentError(f"{spec.label} needs a binary treatment")
    if spec.is_design and name not in setup.design:
        raise AgentError(f"{spec.label} needs a declared design ({name})")
    if spec.needs_covariates and setup.no_covariates:
        raise AgentError(f"{spec.label} needs covariates and the adjustment set is empty")
    try:
        est = spec.fit(setup)
    except AgentError:
        raise
    except Exception as exc:  # noqa: BLE001 - recorded as a skip with its reason by the caller
        text = " ".join(str(exc).split())[:300] or type(exc).__name__
        raise AgentError(f"{spec.label} failed ({type(exc).__name__}: {text})") from exc
    check_estimate(spec.label, est, setup.prep.y, setup.prep.t, setup.binary)
    cluster = setup.cluster_column
    if cluster is not None and est.details.get("clustered_by") != cluster:
        from whyflow.causal.estimation.clustered import not_clustered

        est.details["cluster_not_applied"] = not_clustered(spec.label, cluster)
    return est


LINEAR_EXCESS = 0.05
"""Held-out loss of the linear outcome model above the best learner's beyond which OLS is not credible."""


def _excess(losses: dict[str, float]) -> float:
    if "linear" not in losses or len(losses) < 2 or min(losses.values()) <= 0:
        return 0.0
    return float(losses["linear"] / min(losses.values()) - 1)


def population(setup: PairSetup) -> str:
    """Which units a trimmed estimate is about, in words ("" when nothing was trimmed)."""
    if not setup.trim:
        return ""
    tr = setup.trim
    total = tr["n_kept"] + tr["n_dropped"]
    return (
        f"the {tr['n_kept']:,} of {total:,} units inside common support (propensity in [{tr['lower']:.3f}, "
        f"{tr['upper']:.3f}]; {tr['n_dropped']:,} with extreme propensity trimmed)"
    )


def mark_credibility(setup: PairSetup, estimates: dict[str, Estimate]) -> None:
    """Mark estimates the critique should not count for agreement (``details["credible"] = False``).

    Regression adjustment is misspecified when its linear outcome model loses clearly, on held-out
    data, to a flexible one; the S-learner shrinks the effect towards zero by design.
    """
    losses: dict[str, float] = {}
    if setup.binary and setup.nuisance is not None:
        losses = setup.nuisance.cv_loss.get("outcome", {})
    elif "dml_plm" in estimates:
        losses = (estimates["dml_plm"].details.get("nuisance_cv_loss") or {}).get("outcome", {})
    excess = _excess(losses)
    if "ols" in estimates and excess > LINEAR_EXCESS:
        estimates["ols"].details["credible"] = False
        estimates["ols"].details["credible_reason"] = (
            f"its linear outcome model's held-out loss is {excess:.0%} above the best learner's: misspecified"
        )
    for key in ("s_learner", "t_learner", "x_learner"):
        if key in estimates:
            estimates[key].details["credible"] = False
            estimates[key].details["credible_reason"] = (
                "a plug-in average of regularised CATE models without bias correction; its analytic SE is optimistic"
            )


_TYPED = frozenset(EstimateDetails.model_fields) - {"extras"}


def _adjusted_for(setup: PairSetup, key: str, est: Estimate) -> list[str]:
    """What the estimate adjusted for: none for a contrast or a discontinuity, the stated controls a DiD took."""
    if key == "did":
        return list(setup.adjustment.covariates) if est.details.get("covariates_used") else []
    return [] if key in ("naive", "rdd", "diff_means") else list(setup.adjustment.covariates)


def to_result(setup: PairSetup, key: str, est: Estimate, round_no: int, changes: list[str]) -> TreatmentEffectResult:
    """The typed TreatmentEffectResult of one estimate (family from the registry entry)."""
    spec = REGISTRY[key]
    reported = {k: v for k, v in est.details.items() if k in _TYPED}
    extras = {k: v for k, v in est.details.items() if k not in _TYPED and k != "naive"}
    if setup.design.get("_complete_cases") and not spec.is_design:
        extras["complete_cases"] = setup.design["_complete_cases"]
    details = EstimateDetails(
        **reported,
        method_key=key,
        family=spec.family,
        n_used=int(est.details.get("n_obs") or len(setup.prep.y)),  # a panel fit reads its own rows
        adjustment_set=_adjusted_for(setup, key, est),
        recipe_adjustment_set=setup.adjustment.recipe_choice,
        excluded_covariates=dict(setup.adjustment.excluded),
        round=round_no,
        changes_applied=[c.split(":", 1)[0] for c in changes],
        treated_value=setup.prep.treated_label,
        propensity_model=setup.ps_model if spec.needs_binary else None,
        trimmed=Trimming(**setup.trim) if setup.trim and not spec.is_design else None,
        population=population(setup) if setup.trim and not spec.is_design else "",
        unverified_assumption=setup.adjustment.caveat or None,
        collinear_dropped=dict(setup.prep.collinear),
        extras=extras,
    )
    return TreatmentEffectResult(
        method=est.method,
        estimand=est.estimand,
        estimate=est.estimate,
        std_error=est.std_error,
        ci_lower=est.ci[0],
        ci_upper=est.ci[1],
        p_value=est.p_value,
        assumptions_tested=list(est.assumptions),
        details=details,
        treatment_variable=setup.treatment,
        outcome_variable=setup.outcome,
    )
