"""Propensity-score diagnostics: can the treated and control groups be compared at all?

Fits P(treated | covariates) (logistic by default, or a regularised cross-fitted LightGBM),
then reports the model's AUC, overlap and common support, a Crump et al. trimming suggestion,
covariate balance before and after inverse-probability weighting, effective sample sizes and
two figures. In a critique round it acts on ``trim_to_common_support`` (diagnostics then
describe the trimmed sample) and ``switch_propensity_model``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from whyflow.causal.diagnostics import AdjustmentDecision, PSDiagnostics
from whyflow.causal.discovery.adjustment import choose_adjustment, critique_codes, prepare
from whyflow.causal.estimation.nuisance import FOLDS, MORE_FOLDS, choose_propensity
from whyflow.causal.state import AnalysisState
from whyflow.causal.view import AnalysisView
from whyflow.core.agent import Agent, AgentContext, AgentParams, AgentResult
from whyflow.core.status import JobStatus
from whyflow.core.view import required
from whyflow.runtime import figures
from whyflow.runtime.data import check_columns, read_table

__all__ = ["PSDiagnosticsAgent", "PSDiagnosticsParams"]


class PSDiagnosticsParams(AgentParams):
    """``model``: "auto" (default) picks logistic regression or a regularised LightGBM by cross-validated
    log loss, exactly as the estimators do; "logistic" or "gbm" pins one."""

    model: Literal["auto", "logistic", "gbm"] = Field("auto", description="propensity score model")


class PSDiagnosticsAgent(Agent[PSDiagnosticsParams]):
    """Propensity model, overlap, trimming suggestion, balance and effective sample sizes."""

    STATE_MODEL = AnalysisState
    NAME = "ps_diagnostics"
    DESCRIPTION = "Propensity score overlap, common support, trimming and covariate balance"
    REQUIRED_STATE_FIELDS = ("data_profile", "dataframe_path")
    OPTIONAL_STATE_FIELDS = ("confounder_discovery", "critique_history", "domain_knowledge")
    WRITES_STATE_FIELDS = ("ps_diagnostics",)
    JOB_STATUS = JobStatus.ESTIMATING_EFFECTS
    PRELOAD_MODULES = ("lightgbm", "sklearn.metrics")
    PROGRESS_WEIGHT = 1

    @classmethod
    def warm_up(cls, params: PSDiagnosticsParams, job_dir: Path) -> Callable[[], None] | None:
        """Start the figure worker (:mod:`whyflow.runtime.figures`): the overlap and love plots are drawn there."""
        return figures.start_worker(("whyflow.causal.estimation.propensity",))

    Params = PSDiagnosticsParams

    def run(self, view: AnalysisView, params: PSDiagnosticsParams, ctx: AgentContext) -> AgentResult:
        """Diagnose the primary pair's propensity scores and write ``ps_diagnostics``."""
        from whyflow.causal.estimation import propensity as P

        profile = required(view.data_profile, "data_profile")
        pair = view.pair("diagnose")
        treatment, outcome = pair.treatment, pair.outcome
        why: list[str] = [f"{pair.note[0].upper()}{pair.note[1:]}: {treatment} -> {outcome}."] if pair.note else []
        frame = read_table(required(view.dataframe_path, "dataframe_path"))
        check_columns(frame, {"treatment": treatment, "outcome": outcome}, "the analysis data")
        design = view.design
        skip = _skip_reason(frame, treatment, design)
        if skip:
            return _skipped(treatment, outcome, skip, why)
        codes = critique_codes(view.critique_history)
        model: str = params.model
        changes: list[str] = []
        folds = MORE_FOLDS if "refit_nuisance" in codes else FOLDS
        if "refit_nuisance" in codes:
            changes.append(f"refit_nuisance: propensity re-chosen by cross-validated loss with {folds} folds")
        adj = choose_adjustment(
            frame,
            treatment,
            outcome,
            profile.potential_confounders,
            view.confounder_discovery,
            view.domain_knowledge,
            widen="widen_adjustment_set" in codes,
            design_columns=(*design.instruments, design.running_variable, design.unit_column, design.time_column),
            stated=design.controls,
        )
        why.append(f"Covariates from the {adj.source}: {', '.join(adj.covariates) or 'none'}.")
        if adj.excluded:
            why.append("Excluded: " + "; ".join(f"{c} ({r})" for c, r in adj.excluded.items()) + ".")
        decision = _decision(adj, "widen_adjustment_set" in codes)
        prep = prepare(frame, treatment, outcome, adj.covariates)
        why.extend(prep.notes)
        if prep.X.shape[1] == 0:
            return _no_covariates(treatment, outcome, model, prep.t, adj.excluded, changes, why, decision)
        model, ps, cv_loss = choose_propensity(prep.X, prep.t, ctx.seed, folds, model, ctx.data_dir)
        if "switch_propensity_model" in codes:
            before = model
            model, ps, cv_loss = choose_propensity(
                prep.X, prep.t, ctx.seed, folds, "gbm" if model == "logistic" else "logistic", ctx.data_dir
            )
            changes.append(f"switch_propensity_model: propensity model switched from {before} to {model}")
        X, t, trimmed, trim_applied = prep.X, prep.t, False, None
        keep, (lo, hi) = P.trim_mask(ps) if "trim_to_common_support" in codes else (None, (0.0, 1.0))
        if keep is not None and min(int(t[keep].sum()), int((1 - t[keep]).sum())) < 2:
            why.append(
                f"Trimming to [{lo:.3f}, {hi:.3f}] would leave fewer than two units in an arm: not trimmed (the arms "
                "do not overlap)."
            )
            keep = None
        if keep is not None:
            trim_applied = {"lower": round(lo, 4), "upper": round(hi, 4), "n_dropped": int((~keep).sum())}
            X, t = X[keep].reset_index(drop=True), t[keep]
            model, ps, cv_loss = choose_propensity(X, t, ctx.seed, folds, model, ctx.data_dir)
            trimmed = True
            changes.append(
                f"trim_to_common_support: dropped {trim_applied['n_dropped']} units with propensity outside "
                f"[{lo:.3f}, {hi:.3f}] and refitted the propensity model on the rest"
            )
        diag = P.diagnose(X, t, ps, design.estimand if design.estimand in ("ATE", "ATT") else "ATE")
        title = f"Propensity of {treatment} ({model}{', trimmed' if trimmed else ''})"
        plots = {
            "overlap": str(ctx.plots_dir / "propensity_overlap.png"),
            "love_plot": str(ctx.plots_dir / "love_plot.png"),
        }
        figures.draw(P.plot_overlap, ps, t, diag["common_support"], plots["overlap"], title)  # in the figure worker
        figures.draw(P.plot_love, diag["balance"], plots["love_plot"], f"Covariate balance for {treatment}")
        result = PSDiagnostics.model_validate(
            {
                "treatment": treatment,
                "outcome": outcome,
                "model": model,
                "model_detail": _model_detail(model, folds),
                "model_cv_loss": cv_loss,
                "model_choice": "pinned by the recipe"
                if params.model != "auto"
                else "chosen by cross-validated log loss (logistic vs gradient boosting)",
                "covariates": list(X.columns),
                "excluded": adj.excluded,
                "adjustment": decision,
                **diag,
                "trimmed": trimmed,
                "trim_applied": trim_applied,
                "n_used": int(len(t)),
                "plots": plots,
                "changes": changes,
            }
        )
        why.extend(_explain(diag))
        summary = (
            f"{model} propensity for {treatment}: AUC {diag['auc']}, "
            f"{diag['outside_support']['overall']:.1%} outside common support, overlap {'ok' if diag['overlap_ok'] else 'POOR'}, "
            f"max |SMD| {diag['max_smd_before']:.2f} -> {diag['max_smd_after']:.2f}"
            + (f" (trimmed {trim_applied['n_dropped']})" if trim_applied else "")
        )
        outputs = {
            "auc": diag["auc"],
            "overlap_ok": diag["overlap_ok"],
            "outside_support": diag["outside_support"]["overall"],
            "balance_ok": diag["balance_ok"],
            "n_used": int(len(t)),
            "changes": changes,
        }
        return AgentResult(
            updates={"ps_diagnostics": result}, summary=summary, reasoning=" ".join(why), outputs=outputs
        )


def _model_detail(model: str, folds: int) -> str:
    if model == "gbm":
        return f"LightGBM, 150 shallow trees (depth 3, >= 50 units a leaf, shrinkage 0.05), {folds}-fold cross-fitted"
    return f"logistic regression on standardised covariates (light L2), {folds}-fold cross-fitted"


def _skip_reason(frame: Any, treatment: str, design: Any) -> str:
    """Why propensity diagnostics do not apply to this design ("" when they do)."""
    levels = frame[treatment].dropna().nunique()
    if design.instrument and design.instrument in frame.columns:
        return (
            f"an instrument ('{design.instrument}') is declared: the 2SLS estimate does not rest on propensity "
            "overlap, so propensity diagnostics do not apply"
        )
    if design.running_variable and design.running_variable in frame.columns:
        return (
            f"a regression discontinuity in '{design.running_variable}' is declared: treatment is assigned by the "
            "cutoff, so the arms do not overlap by design and propensity diagnostics do not apply"
        )
    if design.unit_column and design.time_column:
        return (
            f"a panel ('{design.unit_column}' by '{design.time_column}') is declared: difference in differences "
            "compares changes over time, not units matched on covariates, so propensity diagnostics do not apply"
        )
    if levels != 2:
        return (
            f"treatment '{treatment}' takes {levels} values: propensity scores and overlap are defined for a binary "
            "treatment; the effect is estimated as a slope instead"
        )
    return ""


def _decision(adj: Any, widened: bool) -> AdjustmentDecision:
    """The adjustment decision as the state records it: the estimator adopts it for the same pair."""
    return AdjustmentDecision(
        covariates=list(adj.covariates),
        excluded=dict(adj.excluded),
        source=adj.source,
        added=list(adj.added),
        caveat=adj.caveat,
        widened=widened,
        **({"recipe_choice": list(adj.recipe_choice)} if adj.recipe_choice is not None else {}),
    )


def _skipped(treatment: str, outcome: str, reason: str, why: list[str]) -> AgentResult:
    """A recorded skip: the state says what was not done and why; the run goes on."""
    why.append(f"Propensity diagnostics skipped: {reason}.")
    result = PSDiagnostics(treatment=treatment, outcome=outcome, skipped=reason, covariates=[], changes=[])
    return AgentResult(
        updates={"ps_diagnostics": result},
        summary=f"skipped: {reason}",
        reasoning=" ".join(why),
        outputs={"skipped": reason},
    )


def _explain(d: dict[str, Any]) -> list[str]:
    """The diagnosis (:func:`~whyflow.causal.estimation.propensity.diagnose`'s dict) in sentences."""
    out = [
        f"AUC {d['auc']}: {'strong' if (d['auc'] or 0) > 0.8 else 'moderate' if (d['auc'] or 0) > 0.65 else 'weak'} "
        "separation of the arms by the covariates.",
        f"Common support [{d['common_support'][0]:.3f}, {d['common_support'][1]:.3f}]; "
        f"{d['outside_support']['treated']:.1%} of treated and {d['outside_support']['control']:.1%} of controls lie outside; "
        f"{d['extreme_share']:.1%} have scores below 0.02 or above 0.98. Overlap judged "
        f"{'adequate' if d['overlap_ok'] else 'poor'} (rule: <= 10% outside support and <= 10% extreme scores).",
        f"Trim suggestion: {d['trim_suggestion']['reason']} ({d['trim_suggestion']['n_dropped']} units).",
        f"Weighting moves the largest |SMD| from {d['max_smd_before']:.3f} to {d['max_smd_after']:.3f} "
        f"({'balanced' if d['balance_ok'] else 'NOT balanced'} at the 0.1 threshold); effective sample sizes "
        f"treated {d['ess']['treated']}, control {d['ess']['control']}.",
    ]
    return out


def _no_covariates(
    treatment: str,
    outcome: str,
    model: str,
    t: Any,
    excluded: dict[str, str],
    changes: list[str],
    why: list[str],
    decision: AdjustmentDecision,
) -> AgentResult:
    """Diagnostics when nothing is adjusted for: the propensity is the treated share for everyone.

    Happens with a declared design whose only other columns are design columns (a panel's unit
    and time, an instrument): there is no covariate to balance and no overlap to lose.
    """
    share = float(t.mean())
    n1, n0 = int(t.sum()), int(len(t) - t.sum())
    why.append(
        f"No covariates are adjusted for, so the propensity of {treatment} is the treated share ({share:.1%}) for "
        "every unit: overlap and balance hold trivially; the design's own assumptions carry the identification."
    )
    result = PSDiagnostics.model_validate(
        {
            "treatment": treatment,
            "outcome": outcome,
            "model": model,
            "covariates": [],
            "excluded": excluded,
            "auc": 0.5,
            "propensity_range": {"treated": [share, share], "control": [share, share]},
            "common_support": [share, share],
            "outside_support": {"treated": 0.0, "control": 0.0, "overall": 0.0},
            "overlap_ok": True,
            "trim_suggestion": None,
            "trimmed": False,
            "trim_applied": None,
            "n_used": int(len(t)),
            "balance": {},
            "max_smd_before": 0.0,
            "max_smd_after": 0.0,
            "balance_ok": True,
            "ess": {"treated": float(n1), "control": float(n0)},
            "plots": {},
            "changes": changes,
            "note": "no covariates to adjust for",
            "adjustment": decision,
        }
    )
    return AgentResult(
        updates={"ps_diagnostics": result},
        summary=f"no covariates to adjust for: propensity of {treatment} is the treated share {share:.1%}",
        reasoning=" ".join(why),
        outputs={"auc": 0.5, "overlap_ok": True, "n_covariates": 0},
    )
