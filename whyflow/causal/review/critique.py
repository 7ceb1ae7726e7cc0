"""Critique: a deterministic review of one round of analysis (APPROVE, ITERATE or REJECT).

The rule engine (:func:`whyflow.causal.review.rules.review`) is a pure function of :class:`ReviewInputs`, so the same state
always gets the same verdict. It scores six dimensions 1-5 (identification, overlap, balance,
agreement, robustness, data_quality), lists issues and coded improvements (docs/agents.md),
and decides:

* REJECT when the data cannot identify the effect: the treatment is constant in the analysed
  sample; the propensity model separates the groups perfectly (no common support); the only
  candidate confounders are post-treatment; confounder discovery found no valid adjustment
  ("identified": false with an estimand saying it is not identifiable; a merely assumed,
  data-driven identification only lowers the score); or an IV estimate has no instrument.
* REJECT when the answer is not trustworthy (rules in :mod:`whyflow.causal.review.verdict`): a degenerate
  interval, an unrepaired failed data expectation on an adjusted-for column, or credible
  estimators that still disagree with the headline once ``refit_nuisance`` was tried or no round
  is left ("inconclusive").
* ITERATE when an improvement has not been tried yet and the budget allows another round
  (``iteration_count + 1 < max_iterations``).
* APPROVE otherwise, with one exception: an untrimmed estimate under poor overlap is never
  approved. With budget left that is an ITERATE with ``trim_to_common_support``; with the budget
  spent it is still ITERATE ("limit reached"): the loop stops because the runner has no budget
  left, the debate entry says ``approved: false, limit_reached: true``, and the report must say
  the analysis was not approved.

A code counts as applied when this round's estimates (``details.changes_applied``),
``ps_diagnostics.changes`` or an earlier debate entry list it; an applied code is never
recommended again.
"""

from __future__ import annotations

import dataclasses

from pydantic import Field

from whyflow.causal.knowledge import DebateEntry
from whyflow.causal.prompts import annotated, critique_llm_review
from whyflow.causal.review.improvements import codes_in
from whyflow.causal.review.rules import (
    BALANCE_SMD,
    OVERLAP_POOR_SHARE,
    Policy,
    Review,
    ReviewInputs,
    is_naive,
    latest_round,
    primary_estimates,
    review,
)
from whyflow.causal.state import AnalysisState, CritiqueDecision, CritiqueFeedback
from whyflow.causal.view import AnalysisView
from whyflow.core.agent import Agent, AgentContext, AgentParams, AgentResult
from whyflow.core.status import JobStatus

__all__ = [
    "BALANCE_SMD",
    "CritiqueParams",
    "OVERLAP_POOR_SHARE",
    "CritiqueAgent",
    "ReviewInputs",
    "Review",
    "review",
    "latest_round",
    "primary_estimates",
    "codes_in",
    "is_naive",
]


class CritiqueParams(AgentParams):
    """The critique's policy (see :class:`whyflow.causal.review.rules.Policy`); each threshold is printed where it applies."""

    overlap_poor_share: float = Field(
        OVERLAP_POOR_SHARE, gt=0, lt=1, description="share outside common support above which overlap is poor"
    )
    balance_smd: float = Field(BALANCE_SMD, gt=0, le=1, description="largest acceptable |SMD| after weighting")
    disagree_z: float = Field(
        Policy.disagree_z, gt=0, le=10, description="combined SEs beyond which a credible estimator disagrees"
    )
    weak_evalue: float = Field(
        Policy.weak_evalue, ge=1, le=10, description="E-value of the CI limit below which confounding is 'weak'"
    )
    fragile_gamma: float = Field(
        Policy.fragile_gamma, ge=1, le=10, description="Rosenbaum Gamma below which a matched effect is fragile"
    )
    max_rows_lost: float = Field(
        Policy.max_rows_lost, ge=0, le=1, description="share of input rows repair may drop before quality loses a point"
    )

    def policy(self) -> Policy:
        """These options as the rule engine's :class:`Policy`."""
        return Policy(**self.model_dump())


class CritiqueAgent(Agent[CritiqueParams]):
    """Deterministic reviewer of one round: scores, issues, coded improvements and a decision."""

    STATE_MODEL = AnalysisState
    NAME = "critique"
    DESCRIPTION = "Scores the analysis and decides APPROVE / ITERATE / REJECT"
    REQUIRED_STATE_FIELDS = ("treatment_effects",)
    OPTIONAL_STATE_FIELDS = (
        "ps_diagnostics",
        "sensitivity_results",
        "eda_result",
        "confounder_discovery",
        "data_profile",
        "data_repairs",
        "critique_history",
        "debate_history",
        "proposed_dag",
    )
    WRITES_STATE_FIELDS = ("critique_history", "debate_history")
    JOB_STATUS = JobStatus.CRITIQUE_REVIEW
    PROGRESS_WEIGHT = 0.5
    IS_CRITIQUE = True

    Params = CritiqueParams

    def run(self, view: AnalysisView, params: CritiqueParams, ctx: AgentContext) -> AgentResult:
        """Gather the inputs, run the rules, append the feedback and the debate entry."""
        inp = dataclasses.replace(self._inputs(view), policy=params.policy())
        rv = review(inp)
        feedback = CritiqueFeedback(
            decision=rv.decision,
            iteration=inp.round,
            scores=rv.scores,
            issues=rv.issues,
            improvements=rv.improvements,
            reasoning=" ".join(rv.reasoning),
            verdict=rv.verdict,
            blockers=rv.blockers,
            limit_reached=rv.limit_reached,
        )
        entry = DebateEntry(
            round=inp.round,
            decision=rv.decision.value,
            scores=rv.scores,
            issues=rv.issues,
            improvements=rv.improvements,
            changes_applied=rv.changes_applied,
            approved=rv.decision is CritiqueDecision.APPROVE,
            limit_reached=rv.limit_reached,
        )
        if ctx.llm is not None:  # advisory points beside the rules' (never the decision)
            entry.llm_review = critique_llm_review(ctx.llm, inp.treatment, inp.outcome, inp.estimates, rv)
        mean = sum(rv.scores.values()) / len(rv.scores)
        codes = sorted(codes_in(rv.improvements))
        return annotated(
            ctx.llm,
            AgentResult(
                updates={
                    "critique_history": [*view.critique_history, feedback],
                    "debate_history": [*view.debate_history, entry],
                },
                summary=f"round {inp.round}: {rv.decision.value} (mean score {mean:.1f}/5"
                + (f"; next: {', '.join(codes)})" if codes else ")"),
                reasoning=feedback.reasoning,
                action=rv.decision.value.lower(),
                outputs={"decision": rv.decision.value, "scores": rv.scores, "improvements": codes, "round": inp.round},
            ),
        )

    @staticmethod
    def _inputs(view: AnalysisView) -> ReviewInputs:
        """Collect the primary pair's latest estimates and every diagnostic the rules use."""
        treatment, outcome, estimates = primary_estimates(view, "review")
        history = view.critique_history
        ps = view.ps_diagnostics
        cd = view.confounder_discovery
        return ReviewInputs(
            treatment=treatment,
            outcome=outcome,
            estimates=estimates,
            round=view.iteration_count + 1,
            max_iterations=view.max_iterations,
            ps=ps if ps is not None and ps.treatment in (None, treatment) else None,
            sensitivity=list(view.sensitivity_results),
            eda=view.eda_result,
            confounders=cd if cd is not None and cd.treatment in (None, treatment) else None,
            profile=view.data_profile,
            repairs=list(view.data_repairs),
            previous_improvements=list(history[-1].improvements) if history else [],
            earlier_applied=[c for d in view.debate_history for c in d.changes_applied],
            instrument=view.design.instrument,
            declared=tuple(
                kind
                for kind, given in (
                    ("iv", view.design.instrument),
                    ("rdd", view.design.running_variable),
                    ("did", view.design.unit_column and view.design.time_column),
                )
                if given
            ),
            n_input_rows=view.dataset_info.n_samples,
        )
