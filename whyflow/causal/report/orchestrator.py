"""Orchestrator: plain-language next steps for the analyst, specific to this analysis.

It reads the headline estimate, the critique's verdict and scores, the sensitivity results,
the overlap/balance diagnostics, the adjustment set and the causal graph, and writes
``recommendations``: whether to trust the headline (and why), which assumption to check,
which variable to collect, and whether more data would help. Every sentence names the
variables and numbers it is about; nothing generic is written when the state has no evidence.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import Field

from whyflow.causal.diagnostics import ConfounderDiscovery, PSDiagnostics
from whyflow.causal.knowledge import DomainKnowledge
from whyflow.causal.prompts import annotated, orchestrator_summary
from whyflow.causal.queries import evalue_of_limit, headline_evalue, headline_of, refuter_tally
from whyflow.causal.review.rules import BALANCE_SMD, OVERLAP_POOR_SHARE, primary_estimates
from whyflow.causal.state import AnalysisState, CritiqueFeedback, SensitivityResult, TreatmentEffectResult
from whyflow.causal.view import AnalysisView
from whyflow.core.agent import Agent, AgentContext, AgentParams, AgentResult
from whyflow.core.numbers import fmt_number as _fmt
from whyflow.core.status import JobStatus

__all__ = ["OrchestratorAgent", "OrchestratorParams"]


def _find(results: list[SensitivityResult], method: str) -> SensitivityResult | None:
    """The first sensitivity result of a method (the headline's comes first)."""
    return next((r for r in results if r.method == method), None)


class OrchestratorParams(AgentParams):
    """Thresholds for what counts as weak."""

    small_evalue: float = Field(2.0, ge=1, description="E-value (of the CI) below which the estimate is fragile")
    weak_edge_confidence: float = Field(0.7, ge=0, le=1, description="edge confidence below which an edge is weak")
    max_recommendations: int = Field(8, ge=0, description="recommendations at most")


class OrchestratorAgent(Agent[OrchestratorParams]):
    """Turns the finished analysis into specific, prioritised recommendations."""

    STATE_MODEL = AnalysisState
    NAME = "orchestrator"
    DESCRIPTION = "Plain-language next steps: trust, assumptions to check, data to collect"
    REQUIRED_STATE_FIELDS = ("treatment_effects",)
    OPTIONAL_STATE_FIELDS = (
        "sensitivity_results",
        "critique_history",
        "debate_history",
        "ps_diagnostics",
        "confounder_discovery",
        "proposed_dag",
        "domain_knowledge",
        "data_profile",
        "eda_result",
        "data_repairs",
    )
    WRITES_STATE_FIELDS = ("recommendations",)
    JOB_STATUS = JobStatus.CRITIQUE_REVIEW
    PROGRESS_WEIGHT = 0.5

    Params = OrchestratorParams

    def run(self, view: AnalysisView, params: OrchestratorParams, ctx: AgentContext) -> AgentResult:
        """Build the recommendations, most important first."""
        treatment, outcome, estimates = primary_estimates(view, "recommend on")
        head = headline_of(estimates) or estimates[0]
        sens = list(view.sensitivity_results)
        critique = view.critique_history[-1] if view.critique_history else None
        cd = view.confounder_discovery or ConfounderDiscovery()
        recs = [self._trust(head, critique, sens, treatment, outcome)]
        recs += self._unmeasured(sens, cd, view.domain_knowledge, treatment, outcome, params)
        recs += self._overlap_balance(view.ps_diagnostics, treatment)
        recs += self._graph(view.proposed_dag, cd, treatment, outcome, params)
        recs += self._assumed_identification(cd, treatment, outcome)
        recs += self._excluded(cd, treatment)
        recs += self._agreement(estimates, head)
        recs += self._precision(head, view.data_profile, treatment, outcome)
        recs += self._refuters(sens)
        recs = list(dict.fromkeys(r for r in recs if r))[: params.max_recommendations]
        if ctx.llm is not None:  # a marked, model-written summary; numbers not in the state are dropped
            recs += orchestrator_summary(ctx.llm, treatment, outcome, estimates, critique, recs, view.domain_knowledge)
        return annotated(
            ctx.llm,
            AgentResult(
                updates={"recommendations": recs},
                summary=f"{len(recs)} recommendations; headline {head.method} {_fmt(head.estimate)}"
                + (f" ({critique.decision.value})" if critique else " (not reviewed)"),
                reasoning="Recommendations ordered: trust verdict, unmeasured confounding, overlap/balance, graph "
                "assumptions, exclusions, estimator agreement, precision, refuters.",
                outputs={"n_recommendations": len(recs)},
            ),
        )

    # ---- pieces --------------------------------------------------------------------------
    @staticmethod
    def _trust(
        head: TreatmentEffectResult,
        critique: CritiqueFeedback | None,
        sens: list[SensitivityResult],
        treatment: str,
        outcome: str,
    ) -> str:
        """The verdict on the headline, with the reasons."""
        null = "; the interval includes no effect" if head.ci_lower <= 0 <= head.ci_upper else ""
        est = (
            f"{head.method} estimate of the effect of {treatment} on {outcome}: {_fmt(head.estimate)} "
            f"(95% CI {_fmt(head.ci_lower)} to {_fmt(head.ci_upper)}{null})"
        )
        if head.details.population:  # a trimmed sample: say which units the number is about
            est += f" for {head.details.population}"
        ev = headline_evalue(sens)
        ev_text = f", E-value {ev.robustness_value:.2f} (CI limit {evalue_of_limit(ev):.2f})" if ev else ""
        passed, total = refuter_tally(sens)
        ref_text = f", {passed}/{total} refuters passed" if total else ""
        if critique is None:
            return f"Treat the {est} as provisional: no critique reviewed it{ev_text}{ref_text}."
        low = sorted((k for k, v in critique.scores.items() if v <= 2), key=lambda k: critique.scores[k])
        scores = ", ".join(f"{k} {v}/5" for k, v in critique.scores.items())
        if critique.decision.value == "REJECT":
            why = (critique.verdict or critique.reasoning).rstrip(".")
            return f"Do not use the {est}: the critique rejected it in round {critique.iteration} ({why})."
        if critique.decision.value == "ITERATE":
            weak = f"; weakest: {', '.join(low)}" if low else ""
            return (
                f"Do not rely on the {est} yet: the critique did not approve it after round {critique.iteration} "
                f"(scores {scores}{weak}){ev_text}{ref_text}."
            )
        if critique.scores.get("identification", 5) <= 3:
            first = critique.issues[0] if critique.issues else "the adjustment set is weakly supported"
            return (
                f"Treat the {est} with suspicion: the estimators pass their checks, but identification scored "
                f"{critique.scores['identification']}/5 — {first}"
            )
        strong = ev is not None and evalue_of_limit(ev) >= 2
        level = "with confidence" if not low and strong else "with caution"
        weak = f" (weak points: {', '.join(low)})" if low else ""
        return f"Trust the {est} {level}: approved in round {critique.iteration} (scores {scores}){weak}{ev_text}{ref_text}."

    @staticmethod
    def _unmeasured(
        sens: list[SensitivityResult],
        cd: ConfounderDiscovery,
        dk: DomainKnowledge | None,
        treatment: str,
        outcome: str,
        params: OrchestratorParams,
    ) -> list[str]:
        """When the E-value is small, say which confounders to measure."""
        ev = headline_evalue(sens)
        if ev is None:
            return []
        e_ci = evalue_of_limit(ev)
        if e_ci >= params.small_evalue:
            return []
        adjusted = cd.adjustment_set
        roles = dk.roles if dk else {}
        known = [c for c, r in roles.items() if r == "confounder" and c not in adjusted]
        hint = (
            f" Domain knowledge names {', '.join(known)} as confounder(s) not in the adjustment set: collect or add them."
            if known
            else f" Think of causes of both {treatment} and {outcome} missing from the data "
            f"(adjusted so far: {', '.join(adjusted) or 'nothing'}) and collect the strongest."
        )
        if ev.details.ci_crosses_null:
            lead = f"The confidence interval for {treatment} -> {outcome} already includes no effect (E-value of the limit 1)."
        else:
            lead = (
                f"An unmeasured confounder associated with both {treatment} and {outcome} by a risk ratio of "
                f"{e_ci:.2f} (point estimate: {ev.robustness_value:.2f}) would make the interval include no effect."
            )
        return [lead + hint]

    @staticmethod
    def _overlap_balance(ps: PSDiagnostics | None, treatment: str) -> list[str]:
        """Poor overlap or imbalance: what it means and what to do."""
        out: list[str] = []
        if ps is None:
            return out
        outside = float(ps.outside_support.overall if ps.outside_support is not None else 0.0)
        if ps.overlap_ok is False or outside > OVERLAP_POOR_SHARE:
            lo, hi = (ps.common_support or [0.0, 1.0])[:2]
            trimmed = "The sample was trimmed, so" if ps.trimmed else "Until the sample is trimmed,"
            out.append(
                f"Overlap is poor: {outside:.0%} of units have propensity scores for {treatment} outside the common "
                f"support [{lo:.3f}, {hi:.3f}]. {trimmed} the estimate describes only units comparable across groups; "
                f"collect more {treatment} = 0 units with high propensity and {treatment} = 1 units with low propensity."
            )
        smd = ps.max_smd_after
        if smd is not None and abs(float(smd)) > BALANCE_SMD:
            balance = ps.balance or {}
            worst = max(balance, key=lambda c: abs(balance[c].smd_after), default="a covariate")
            out.append(
                f"Covariates remain imbalanced after weighting (max |SMD| {abs(float(smd)):.2f}, worst {worst}): "
                f"check the functional form of {worst} in the propensity and outcome models."
            )
        return out

    @staticmethod
    def _graph(
        dag: Any, cd: ConfounderDiscovery, treatment: str, outcome: str, params: OrchestratorParams
    ) -> list[str]:
        """Identification that rests on uncertain edges of the causal graph."""
        if dag is None:
            return []
        key = {treatment, outcome, *cd.adjustment_set, *cd.mediators}
        weak = [
            e for e in dag.edges if e.confidence < params.weak_edge_confidence and (e.source in key or e.target in key)
        ]
        out = []
        for e in sorted(weak, key=lambda e: e.confidence)[:3]:
            arrow = "—" if e.edge_type != "directed" else "->"
            out.append(
                f"Check the graph edge {e.source} {arrow} {e.target} (confidence {e.confidence:.2f}): the adjustment set "
                f"for {treatment} -> {outcome} depends on it; if it is reversed or absent, {e.source if e.target == treatment else e.target} "
                "may change role (confounder vs mediator) and the estimate with it."
            )
        return out

    @staticmethod
    def _assumed_identification(cd: ConfounderDiscovery, treatment: str, outcome: str) -> list[str]:
        """An adjustment set picked from data associations: its timing must be confirmed."""
        ident = cd.identification
        adjustment = cd.adjustment_set
        if ident is None or ident.identified is not False or not adjustment:
            return []
        return [
            f"The adjustment set ({', '.join(adjustment)}) was chosen from data associations, not from a causal "
            f"graph: confirm that each of them is measured before {treatment} and is not caused by it (a mediator "
            f"in the set would bias the effect on {outcome} toward zero), e.g. by supplying a metadata file with "
            "temporal_order or post_treatment."
        ]

    @staticmethod
    def _excluded(cd: ConfounderDiscovery, treatment: str) -> list[str]:
        """Exclusions that rest on timing: the analyst should confirm them."""
        post = [c for c in [*cd.mediators, *cd.derived_from_treatment] if c not in cd.adjustment_set]
        if not post:
            return []
        return [
            f"Confirm that {', '.join(post)} {'is' if len(post) == 1 else 'are'} measured after {treatment}: "
            f"{'it was' if len(post) == 1 else 'they were'} left out of the adjustment set as post-treatment; "
            "if measured before, adjust for them and re-run."
        ]

    @staticmethod
    def _agreement(estimates: list[TreatmentEffectResult], head: TreatmentEffectResult) -> list[str]:
        """Estimators whose intervals do not overlap the headline's."""
        off = [
            e
            for e in estimates
            if e is not head and not e.details.is_naive and (e.ci_upper < head.ci_lower or e.ci_lower > head.ci_upper)
        ]
        credible = [e for e in off if e.details.credible]
        not_credible = [e for e in off if not e.details.credible]  # verdict.credible_others leaves them out
        out = []
        if credible:
            out.append(
                f"Estimators disagree with the headline {head.method} {_fmt(head.estimate)}: {_listed(credible)}. "
                "Find which modelling assumption (outcome model form, propensity model, estimand) drives the gap."
            )
        if not_credible:
            one = len(not_credible) == 1
            reasons = sorted({e.details.credible_reason for e in not_credible if e.details.credible_reason})
            out.append(
                f"{_listed(not_credible)} {'differs' if one else 'differ'} from the headline {head.method} "
                f"{_fmt(head.estimate)}, but the estimator marked {'it' if one else 'them'} not credible for the "
                f"average effect{' (' + '; '.join(reasons) + ')' if reasons else ''}, so the critique's agreement "
                f"leaves {'it' if one else 'them'} out."
            )
        return out

    @staticmethod
    def _precision(head: TreatmentEffectResult, profile: Any, treatment: str, outcome: str) -> list[str]:
        """A wide interval: how much more data would make the effect distinguishable from zero."""
        n = head.details.n_used or (profile.n_samples if profile is not None else None)
        se = head.std_error
        crosses = head.ci_lower <= 0 <= head.ci_upper
        rel = (head.ci_upper - head.ci_lower) / abs(head.estimate) if head.estimate else math.inf
        if not (crosses or rel > 1) or not se or not n:
            return []
        if head.estimate == 0:
            return [
                f"The estimate of {treatment} on {outcome} is zero with CI width {_fmt(head.ci_upper - head.ci_lower)}."
            ]
        ci = f"95% CI {_fmt(head.ci_lower)} to {_fmt(head.ci_upper)} with n = {int(n):,}"
        if not crosses:
            return [
                f"The estimate of {treatment} on {outcome} is imprecise ({ci}, wider than the estimate itself): "
                f"about {4 * int(n):,} units would halve the interval."
            ]
        mde = 2.8 * se  # 80% power at the 5% level
        text = (
            f"The estimate is imprecise ({ci}): the smallest effect of {treatment} on {outcome} this sample can "
            f"reliably detect is about {_fmt(mde)} (2.8 standard errors)"
        )
        if abs(head.estimate) >= se:
            needed = math.ceil((1.96 * se / abs(head.estimate)) ** 2 * n)
            text += (
                f"; if the true effect equals the estimate ({_fmt(head.estimate)}), about {needed:,} units would be "
                "needed for the interval to exclude zero"
            )
        return [text + ". Collect more data before acting on it."]

    @staticmethod
    def _refuters(sens: list[SensitivityResult]) -> list[str]:
        """Failed refuters: what each failure suggests."""
        failed = [r for r in sens if r.details.kind == "refuter" and r.details.passed is False]
        return [f"Refuter {r.method} failed: {r.interpretation} Review the model specification." for r in failed]


def _listed(estimates: list[TreatmentEffectResult]) -> str:
    """Estimates as ``method estimate [lower, upper]``, separated by semicolons."""
    return "; ".join(f"{e.method} {_fmt(e.estimate)} [{_fmt(e.ci_lower)}, {_fmt(e.ci_upper)}]" for e in estimates)
