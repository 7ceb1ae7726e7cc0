"""Effect estimation: a menu of estimators per pair, one clearly-argued headline.

For each pair (the primary first) the agent chooses the adjustment set (never a mediator,
collider, post-treatment variable or a relabelling of the treatment), fits cross-fitted
propensity scores, runs the methods the data and the declared design call for (or those pinned
in ``methods``) and marks exactly one result ``headline`` by the rule in
:func:`agents.stats.pair_analysis.choose_headline`. In critique rounds it acts on
``trim_to_common_support``, ``add_doubly_robust``, ``widen_adjustment_set`` and
``switch_propensity_model``.
"""

from __future__ import annotations

import difflib
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field
from pydantic_core import PydanticCustomError

from agents.base.agent import Agent, AgentContext, AgentParams, AgentResult
from agents.base.data import check_columns, read_table
from agents.base.errors import AgentError
from agents.base.state import JobStatus, TreatmentEffectResult
from agents.base.view import StateView
from agents.stats.adjustment import critique_codes
from agents.stats.menu import METHODS

__all__ = ["EffectEstimatorAgent", "EffectEstimatorParams", "resolve_pairs", "setup_for_pair", "finish_pair"]


def known_method(key: str) -> str:
    """A ``methods:`` entry must be a key of the estimator menu (:data:`agents.stats.menu.METHODS`)."""
    if key in METHODS:
        return key
    close = difflib.get_close_matches(key, list(METHODS), n=1)
    raise PydanticCustomError(
        "unknown_method",
        "unknown method '{method}'{hint}; choose from {keys}",
        {"method": key, "hint": f" (did you mean '{close[0]}'?)" if close else "", "keys": ", ".join(METHODS)},
    )


MethodKey = Annotated[str, AfterValidator(known_method), Field(json_schema_extra={"enum": list(METHODS)})]
"""An estimator's key, checked when the recipe loads (editors complete it from the schema's enum)."""


class EffectEstimatorParams(AgentParams):
    """``methods`` pins the menu (keys of :data:`agents.stats.menu.METHODS`); ``bootstrap`` resamples.

    ``propensity_model``: "auto" picks logistic or boosting by cross-validated log loss.
    """

    methods: list[MethodKey] | None = Field(
        None, description="estimators to run, by key (None: chosen from the data and the design)"
    )
    bootstrap: int = Field(
        200, ge=10, description="bootstrap resamples of the matching and stratification SEs (under 10 give none)"
    )
    propensity_model: Literal["auto", "logistic", "gbm"] = Field("auto", description="propensity score model")


class EffectEstimatorAgent(Agent[EffectEstimatorParams]):
    """Estimates each pair's effect with several methods and picks a headline by a fixed rule."""

    NAME = "effect_estimator"
    DESCRIPTION = (
        "Treatment effects by regression, weighting, doubly robust, matching, meta-learner and design-based estimators"
    )
    REQUIRED_STATE_FIELDS = ("data_profile", "dataframe_path")
    OPTIONAL_STATE_FIELDS = (
        "confounder_discovery",
        "ps_diagnostics",
        "proposed_dag",
        "domain_knowledge",
        "critique_history",
        "eda_result",
    )
    WRITES_STATE_FIELDS = ("treatment_effects", "analyzed_pairs")
    JOB_STATUS = JobStatus.ESTIMATING_EFFECTS
    PRELOAD_MODULES = ("dowhy", "lightgbm", "causalml.inference.meta", "linearmodels.iv")
    PROGRESS_WEIGHT = 3

    Params = EffectEstimatorParams

    def run(self, view: StateView, params: EffectEstimatorParams, ctx: AgentContext) -> AgentResult:
        """Estimate every pair and return ``treatment_effects`` and ``analyzed_pairs``."""
        from agents.stats.pair_analysis import METHODS, default_methods, run_method

        bad = [m for m in params.methods or [] if m not in METHODS]
        if bad:
            raise AgentError(f"unknown method(s) {bad}; choose from {', '.join(METHODS)}")
        pairs, why = resolve_pairs(view)
        frame = read_table(view.dataframe_path)
        codes = critique_codes(view.critique_history)
        round_no = view.iteration_count + 1
        results: list[TreatmentEffectResult] = []
        outputs: dict[str, Any] = {"round": round_no, "codes": codes, "pairs": {}}
        for pair in pairs:
            t, y = pair["treatment"], pair["outcome"]
            ctx.progress(f"estimating {t} -> {y}")
            setup = setup_for_pair(
                view, frame, t, y, codes, params.propensity_model, ctx.seed, params.bootstrap, cache_dir=ctx.data_dir
            )
            if params.methods:
                methods = list(params.methods) + (
                    ["aipw"] if "add_doubly_robust" in codes and "aipw" not in params.methods else []
                )
                reasons = ["Methods pinned by the recipe: " + ", ".join(params.methods) + "."]
            else:
                methods, reasons = default_methods(setup, codes)
            if "add_doubly_robust" in codes and setup.binary:
                setup.changes.append("add_doubly_robust: AIPW (doubly robust) included")
            estimates = {}
            for name in methods:
                ctx.progress(f"{t} -> {y}: {name}")
                try:
                    estimates[name] = run_method(setup, name)
                    setup.skipped.pop(name, None)
                except AgentError as exc:  # run_method turns any estimator failure into one
                    setup.skipped[name] = str(exc)
            if setup.skipped:
                reasons.append("Skipped: " + "; ".join(f"{k} ({v})" for k, v in setup.skipped.items()) + ".")
            if not estimates:
                raise AgentError(
                    f"no estimator could be run for {t} -> {y}: "
                    + "; ".join(f"{k}: {v}" for k, v in setup.skipped.items())
                )
            rows, text, headline = finish_pair(view, setup, estimates, round_no)
            results.extend(rows)
            why.append(f"[{t} -> {y}] " + " ".join(reasons) + " " + text)
            outputs["pairs"][f"{t}->{y}"] = {
                "headline": headline,
                "n_methods": len(estimates),
                "changes": setup.changes,
                "skipped": dict(setup.skipped),
            }
        head = next(r for r in results if r.details.headline)
        summary = (
            f"{len(results)} estimates for {len(pairs)} pair(s); headline {head.method} "
            f"{head.estimate:.4g} [{head.ci_lower:.4g}, {head.ci_upper:.4g}] for {head.treatment_variable} -> {head.outcome_variable}"
        )
        skipped = sorted({k for p in outputs["pairs"].values() for k in p["skipped"]})
        if skipped:
            summary += f"; skipped {', '.join(skipped)} (reasons in the trace)"
        if head.details.unverified_assumption:
            summary += " (assumes every covariate precedes the treatment: no graph or timing metadata)"
        return AgentResult(
            updates={"treatment_effects": results, "analyzed_pairs": [p for p in pairs]},
            summary=summary,
            reasoning=" ".join(why),
            outputs=outputs,
            tools_called=sorted({r.details.method_key for r in results}),
        )


def resolve_pairs(view: StateView) -> tuple[list[dict[str, Any]], list[str]]:
    """The pairs to analyse, primary first, as CausalPair dicts, and how they were chosen."""
    pair = view.pair("estimate")
    treatment, outcome = pair.treatment, pair.outcome
    why = [f"{pair.note[0].upper()}{pair.note[1:]}: {treatment} -> {outcome}."] if pair.note else []
    rationale = pair.note or "the study's primary pair"
    pairs = [{"treatment": treatment, "outcome": outcome, "rationale": rationale, "priority": 1}]
    for p in sorted(view.analyzed_pairs, key=lambda p: p.priority):
        if (p.treatment, p.outcome) != (treatment, outcome):
            pairs.append(
                {
                    "treatment": p.treatment,
                    "outcome": p.outcome,
                    "rationale": p.rationale,
                    "priority": max(p.priority, 2),
                }
            )
    return pairs, why


def setup_for_pair(
    view: StateView,
    frame: Any,
    treatment: str,
    outcome: str,
    codes: list[str],
    model: str,
    seed: int,
    bootstrap: int,
    cache_dir: Any = None,
) -> Any:
    """Check the columns and build the pair's PairSetup from the view.

    ``cache_dir`` (the run's data folder) lets the estimator reuse the propensity fit that
    ps_diagnostics stored for the same covariates, rows and seed.
    """
    from agents.stats.pair_analysis import setup_pair

    check_columns(frame, {"treatment": treatment, "outcome": outcome}, "the analysis data")
    return setup_pair(
        frame,
        treatment,
        outcome,
        profile=view.data_profile,
        view_design=view.design,
        confounder_discovery=view.confounder_discovery,
        domain_knowledge=view.domain_knowledge,
        codes=codes,
        ps_model=model,
        seed=seed,
        bootstrap=bootstrap,
        cache_dir=cache_dir,
    )


def finish_pair(
    view: StateView, setup: Any, estimates: dict[str, Any], round_no: int
) -> tuple[list[TreatmentEffectResult], str, str]:
    """Typed results with exactly one headline, plus the reasoning text for the pair."""
    from agents.stats.pair_analysis import choose_headline, mark_credibility, to_result

    mark_credibility(setup, estimates)
    head, reason = choose_headline(setup, estimates, view.ps_diagnostics)
    rows = []
    for key, est in estimates.items():
        row = to_result(setup, key, est, round_no, setup.changes)
        if key == head:
            population = row.details.population
            if population:
                reason_text = f"{reason} Population: the estimate describes {population}, not the whole sample."
            else:
                reason_text = reason
            row.details = row.details.model_copy(
                update={"headline": True, "headline_reason": reason_text, "skipped_methods": dict(setup.skipped)}
            )
        rows.append(row)
    adj = setup.adjustment
    text = [
        f"Adjustment set ({adj.source}): {', '.join(adj.covariates) or 'none'}.",
        *([adj.caveat] if adj.caveat else []),
        ("Excluded: " + "; ".join(f"{c} ({r})" for c, r in adj.excluded.items()) + ".")
        if adj.excluded
        else "Nothing excluded.",
        *setup.notes,
    ]
    if setup.nuisance is not None and setup.nuisance.cv_loss:
        text.append(setup.nuisance.describe() + ".")
    if setup.overlap and setup.binary:
        o = setup.overlap
        text.append(
            f"Propensity ({setup.ps_model}): {o['outside_support']['overall']:.1%} outside common support, overlap "
            f"{'adequate' if o['overlap_ok'] else 'poor'}."
        )
    text.extend(setup.changes)
    text.append(f"Headline: {reason}")
    text.append(
        "Estimates: "
        + "; ".join(f"{e.method} {e.estimate:.4g} [{e.ci[0]:.4g}, {e.ci[1]:.4g}]" for e in estimates.values())
        + "."
    )
    return rows, " ".join(text), head
