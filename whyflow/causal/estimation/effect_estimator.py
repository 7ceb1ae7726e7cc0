"""Effect estimation: a menu of estimators per pair, one clearly-argued headline.

For each pair (the primary first) the agent chooses the adjustment set (never a mediator,
collider, post-treatment variable or a relabelling of the treatment), fits cross-fitted
propensity scores, runs the methods the data and the declared design call for (or those pinned
in ``methods``) and marks exactly one result ``headline`` by the rule in
:func:`whyflow.causal.estimation.headline.choose_headline`. In critique rounds it acts on
``trim_to_common_support``, ``add_doubly_robust``, ``widen_adjustment_set`` and
``switch_propensity_model``.

The costly learners (:data:`whyflow.causal.estimation.common.FAN_OUT_METHODS`) are fitted as parts of one
fan-out, and the nuisance and DR-learner folds inside them as parts too
(:func:`whyflow.runtime.parallel.map_parts`): in a flow run they are Prefect tasks on the recipe's
task runner (threads, or Dask workers); called directly, they run in order. Each part is seeded
by the run's seed, so the estimates are the same either way.
"""

from __future__ import annotations

from typing import Any

from whyflow.causal.discovery.adjustment import critique_codes
from whyflow.causal.estimation.common import (
    ESTIMATOR_OPTIONAL,
    ESTIMATOR_REQUIRED,
    ESTIMATOR_WRITES,
    FAN_OUT_METHODS,
    EffectEstimatorParams,
    finish_pair,
    fit_in_parts,
    resolve_pairs,
    setup_for_pair,
)
from whyflow.causal.state import AnalysisState, TreatmentEffectResult
from whyflow.causal.view import AnalysisView
from whyflow.core.agent import Agent, AgentContext, AgentResult
from whyflow.core.errors import AgentError
from whyflow.core.status import JobStatus
from whyflow.core.view import required
from whyflow.runtime.data import read_table

__all__ = ["EffectEstimatorAgent", "EffectEstimatorParams"]


def _fit_all(setup: Any, methods: list[str], ctx: AgentContext, label: str) -> dict[str, Any]:
    """Every method's Estimate, or the AgentError that skips it: the costly learners as one fan-out
    (:func:`fit_in_parts`, from this thread: its parts go to the task runner), the other methods
    meanwhile on a thread of their own, one after another.

    The fan-out's workers seldom end together (at 100,000 rows one idled 0.45 s) and the other
    methods (regression, weighting, matching, stratification) took about that long after it.
    They read the pair's own setup, the fan-out a copy of it, and every method draws from its own
    seed, so the estimates are those of one method after another.
    """
    import contextvars
    from concurrent.futures import ThreadPoolExecutor

    from whyflow.causal.estimation.pair_analysis import run_method

    def one_by_one() -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in (m for m in methods if m not in FAN_OUT_METHODS):
            ctx.progress(f"{label}: {name}")
            try:
                out[name] = run_method(setup, name)
            except AgentError as exc:
                out[name] = exc
        return out

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="whyflow-estimators") as pool:
        others = pool.submit(contextvars.copy_context().run, one_by_one)
        fanned = fit_in_parts(setup, methods)
        return {**fanned, **others.result()}


class EffectEstimatorAgent(Agent[EffectEstimatorParams]):
    """Estimates each pair's effect with several methods and picks a headline by a fixed rule."""

    STATE_MODEL = AnalysisState
    NAME = "effect_estimator"
    DESCRIPTION = (
        "Treatment effects by regression, weighting, doubly robust, matching, meta-learner and design-based estimators"
    )
    REQUIRED_STATE_FIELDS = ESTIMATOR_REQUIRED
    OPTIONAL_STATE_FIELDS = ESTIMATOR_OPTIONAL
    WRITES_STATE_FIELDS = ESTIMATOR_WRITES
    JOB_STATUS = JobStatus.ESTIMATING_EFFECTS
    PRELOAD_MODULES = ("dowhy", "lightgbm", "causalml.inference.meta", "linearmodels.iv")
    PROGRESS_WEIGHT = 3

    Params = EffectEstimatorParams

    def run(self, view: AnalysisView, params: EffectEstimatorParams, ctx: AgentContext) -> AgentResult:
        """Estimate every pair and return ``treatment_effects`` and ``analyzed_pairs``."""
        from whyflow.causal.estimation.menu import default_methods

        pairs, why = resolve_pairs(view)
        frame = read_table(required(view.dataframe_path, "dataframe_path"))
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
            if len([m for m in methods if m in FAN_OUT_METHODS]) > 1:
                ctx.progress(f"{t} -> {y}: " + ", ".join(m for m in methods if m in FAN_OUT_METHODS))
            fitted = _fit_all(setup, methods, ctx, f"{t} -> {y}")
            for name in methods:
                if isinstance(fitted[name], AgentError):  # run_method turns any estimator failure into one
                    setup.skipped[name] = str(fitted[name])
                else:
                    estimates[name] = fitted[name]
                    setup.skipped.pop(name, None)
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
