"""What the critique's rules read and write: the round's inputs, the verdict, and the findings.

:class:`ReviewInputs` is gathered from the state by the critique agent (:func:`primary_estimates`
picks the pair's latest round); :func:`whyflow.causal.review.rules.review` collects :class:`Findings`
while it scores and returns a :class:`Review`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from whyflow.causal.diagnostics import ConfounderDiscovery, DataRepairEntry, PSDiagnostics
from whyflow.causal.queries import pair_estimates
from whyflow.causal.review.policy import Policy
from whyflow.causal.state import CritiqueDecision, DataProfile, EDAResult, SensitivityResult, TreatmentEffectResult
from whyflow.causal.view import AnalysisView
from whyflow.core.errors import AgentError

__all__ = ["Findings", "Review", "ReviewInputs", "is_naive", "primary_estimates"]


def is_naive(e: TreatmentEffectResult) -> bool:
    """Whether an estimate is an unadjusted comparison (its family is ``naive``)."""
    return e.details.is_naive


def primary_estimates(view: AnalysisView, purpose: str) -> tuple[str, str, list[TreatmentEffectResult]]:
    """The primary pair and its latest round of estimates; ``purpose`` words the error."""
    pair = view.pair(purpose)
    treatment, outcome = pair.treatment, pair.outcome
    _, estimates = pair_estimates(view.treatment_effects, treatment, outcome)
    if not estimates:
        raise AgentError(f"no estimate of {treatment} -> {outcome} to {purpose}")
    return treatment, outcome, estimates


@dataclass(frozen=True)
class ReviewInputs:
    """Everything the rules look at, gathered from the state by the agent."""

    treatment: str
    outcome: str
    estimates: list[TreatmentEffectResult]
    round: int
    max_iterations: int
    ps: PSDiagnostics | None = None
    sensitivity: list[SensitivityResult] = field(default_factory=list)
    eda: EDAResult | None = None
    confounders: ConfounderDiscovery | None = None
    profile: DataProfile | None = None
    repairs: list[DataRepairEntry] = field(default_factory=list)
    previous_improvements: list[str] = field(default_factory=list)
    earlier_applied: list[str] = field(default_factory=list)
    instrument: str | None = None
    declared: tuple[str, ...] = ()
    """The designs the user stated ("iv", "rdd", "did"): their estimator must be the headline."""
    n_input_rows: int | None = None
    policy: Policy = field(default_factory=Policy)


@dataclass
class Review:
    """The verdict of :func:`review`."""

    decision: CritiqueDecision
    scores: dict[str, int]
    issues: list[str]
    improvements: list[str]
    reasoning: list[str]
    changes_applied: list[str]
    limit_reached: bool = False
    blockers: list[str] = field(default_factory=list)
    """Why the answer cannot be trusted whatever the budget (not identifiable, degenerate, unrepaired data)."""
    verdict: str = ""
    """The decision in one sentence (the first reason)."""


@dataclass
class Findings:
    """Issues, improvements, reasons and blockers collected while scoring."""

    issues: list[str] = field(default_factory=list)
    improvements: dict[str, str] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    impossible: list[str] = field(default_factory=list)
    must_trim: bool = False
    blockers: list[str] = field(
        default_factory=list
    )  # not trustworthy whatever the budget (whyflow.causal.review.verdict)
    disagree: bool = False
    doubts: list[str] = field(default_factory=list)
    """Open questions that block approval: approval needs them settled, not a spent budget."""
