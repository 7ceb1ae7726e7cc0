"""The shared analysis state: every field, model and helper of the state schema.

Fields, types and defaults follow the state schema reference (shared seed 000). Its six known
issues are fixed here and in the runner:

1. Contracts are enforced: agents never receive this object, only a read-only
   :class:`~agents.base.view.StateView`; the runner is the only writer and rejects any update
   outside an agent's WRITES_STATE_FIELDS.
2. Parallel agents never share mutable state: each view holds its own deep copy.
3. Trace compression never loses a trace: :meth:`AnalysisState.add_trace` hands every full,
   untruncated trace to a sink (the job store appends it to ``traces.jsonl``) before it
   truncates or compresses the in-state copy.
4. ``progress_percentage`` is a real field, computed by the runner from each completed agent's
   PROGRESS_WEIGHT.
5. ``updated_at`` moves on every assignment to a field (``__setattr__``), not only in helpers.
6. One pair-resolution function, :func:`resolve_primary_pair`, used by every agent.

Additions to the schema (each needed by a fix or by the recipe runner): ``progress_percentage``,
``completed_steps`` (for resume), ``design`` (the study-design facts the user states).

Job status transitions follow the schema's diagram, read as a pipeline of phases. Legal:
staying in the same working phase (several agents share one); moving forward to a later
working phase (a recipe may have no agent for a phase in between); CRITIQUE_REVIEW ->
ITERATING and ITERATING -> any working phase a critique loop starts with; PENDING ->
FETCHING_DATA or CANCELLED; any working phase -> FAILED or CANCELLING (the diagram forgets
cancelling late phases; a user may cancel at any time); CANCELLING -> CANCELLED; a working phase
-> COMPLETED. Terminal states leave only through :meth:`AnalysisState.reopen` (``whyflow resume``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from agents.base.errors import IllegalTransition
from agents.base.estimates import EstimateDetails, SensitivityDetails
from agents.base.status import JobStatus, is_legal_transition

__all__ = [
    "MAX_TRACES",
    "MAX_TRACE_OUTPUT_LEN",
    "MAX_TRACE_REASONING_LEN",
    "RUNNER_FIELDS",
    "AgentTrace",
    "AnalysisState",
    "CausalDAG",
    "CausalEdge",
    "CausalPair",
    "CritiqueDecision",
    "CritiqueFeedback",
    "DataProfile",
    "DatasetInfo",
    "EDAResult",
    "JobStatus",
    "SensitivityResult",
    "StudyDesign",
    "TreatmentEffectResult",
    "is_legal_transition",
    "resolve_primary_pair",
    "utcnow",
]

MAX_TRACES = 50
MAX_TRACE_OUTPUT_LEN = 500
MAX_TRACE_REASONING_LEN = 1000


def utcnow() -> datetime:
    """The current time in UTC, timezone-aware."""
    return datetime.now(UTC)


# NaN and infinities (a p-value of a constant column, an unbounded VIF) are written as JSON's
# NaN/Infinity constants, which Python, pandas and pydantic read back; writing them as null
# would make the saved state fail validation when it is loaded again.
_CONFIG = ConfigDict(extra="forbid", validate_assignment=True, ser_json_inf_nan="constants")


class _Model(BaseModel):
    model_config = _CONFIG


class DatasetInfo(_Model):
    """The input dataset as the job received it."""

    url: str
    name: str | None = None
    local_path: str | None = None
    n_samples: int | None = None
    n_features: int | None = None
    kaggle_description: str | None = None
    kaggle_column_descriptions: dict[str, str] = {}
    kaggle_tags: list[str] = []
    kaggle_domain: str | None = None
    metadata_quality: str = "unknown"


class DataProfile(_Model):
    """Statistical summary and causal classification of the dataset's columns."""

    n_samples: int
    n_features: int
    feature_names: list[str]
    feature_types: dict[str, str]
    missing_values: dict[str, int]
    numeric_stats: dict[str, dict[str, float]]
    categorical_stats: dict[str, dict[str, int]]
    treatment_candidates: list[str] = []
    outcome_candidates: list[str] = []
    potential_confounders: list[str] = []
    potential_instruments: list[str] = []
    has_time_dimension: bool = False
    time_column: str | None = None
    discontinuity_candidates: list[str] = []
    duplicate_rows: int = 0
    """Rows of the input file that repeat an earlier row exactly (``agents.stats.frame_checks.duplicate_verdict``)."""
    duplicates_dropped: bool = False
    """True when they were copies, dropped from the analysis data (``n_samples`` counts what is left)."""
    duplicates_note: str = ""
    """What was found and done about them, in one sentence ("" when no row repeats)."""


class CausalPair(_Model):
    """A treatment-outcome pair; priority 1 is primary, 2 secondary, 3 exploratory."""

    treatment: str
    outcome: str
    rationale: str = ""
    priority: int = 1


class CausalEdge(_Model):
    """One edge of a causal graph."""

    source: str
    target: str
    edge_type: str = "directed"
    confidence: float = 1.0


class CausalDAG(_Model):
    """A causal graph proposed by discovery and refined by the DAG expert."""

    nodes: list[str]
    edges: list[CausalEdge]
    discovery_method: str
    treatment_variable: str | None = None
    outcome_variable: str | None = None
    interpretation: str = ""


class TreatmentEffectResult(_Model):
    """One estimate from one method for one treatment-outcome pair."""

    method: str
    estimand: str
    estimate: float
    std_error: float
    ci_lower: float
    ci_upper: float
    p_value: float | None = None
    assumptions_tested: list[str] = []
    details: EstimateDetails
    treatment_variable: str | None = None
    outcome_variable: str | None = None


class SensitivityResult(_Model):
    """One sensitivity analysis of the primary estimate."""

    method: str
    robustness_value: float
    interpretation: str
    details: SensitivityDetails = Field(default_factory=SensitivityDetails)


class EDAResult(_Model):
    """Distributions, correlations, outliers, collinearity, balance and data quality."""

    correlation_matrix: dict[str, dict[str, float]] = {}
    high_correlations: list[dict[str, Any]] = []
    distribution_stats: dict[str, dict[str, Any]] = {}
    outliers: dict[str, dict[str, Any]] = {}
    vif_scores: dict[str, float] = {}
    multicollinearity_warnings: list[str] = []
    covariate_balance: dict[str, dict[str, float]] = {}
    balance_summary: str = ""
    data_quality_score: float = 0.0
    data_quality_issues: list[str] = []
    plot_paths: dict[str, str] = {}
    summary_table: dict[str, dict[str, Any]] = {}


class CritiqueDecision(StrEnum):
    """What the critique decided about a round of analysis."""

    APPROVE = "APPROVE"
    ITERATE = "ITERATE"
    REJECT = "REJECT"


class CritiqueFeedback(_Model):
    """One critique evaluation; entries accumulate across iterations."""

    decision: CritiqueDecision
    iteration: int
    scores: dict[str, int]
    issues: list[str]
    improvements: list[str]
    reasoning: str
    verdict: str = ""
    """The decision in one sentence (what the orchestrator and the summary quote)."""
    blockers: list[str] = []
    """Why the answer cannot be trusted whatever the budget (empty unless rejected for it)."""
    limit_reached: bool = False
    """True when the loop stopped unapproved because the iteration budget was spent."""


class AgentTrace(_Model):
    """A record of one agent action, for observability and debugging."""

    agent_name: str
    timestamp: datetime = Field(default_factory=utcnow)
    action: str
    reasoning: str
    inputs: dict[str, Any] = {}
    outputs: dict[str, Any] = {}
    tools_called: list[str] = []
    duration_ms: int = 0
    token_usage: dict[str, int] = {}


class StudyDesign(_Model):
    """Design facts the analyst states (CLI flags or recipe); ``None`` means use the profile."""

    estimand: str = "ATE"
    instrument: str | None = None
    running_variable: str | None = None
    cutoff: float | None = None
    unit_column: str | None = None
    time_column: str | None = None
    metadata_path: str | None = None


RUNNER_FIELDS = frozenset(
    {
        "job_id",
        "status",
        "agent_traces",
        "error_message",
        "error_agent",
        "created_at",
        "updated_at",
        "completed_at",
        "progress_percentage",
        "completed_steps",
        "iteration_count",
        "max_iterations",
    }
)
"""Fields only the runner writes; no agent may declare them in WRITES_STATE_FIELDS."""


def _truncate(value: Any, limit: int) -> Any:
    text = value if isinstance(value, str) else None
    if text is None:
        try:
            text = json.dumps(value, default=str)
        except (TypeError, ValueError):
            text = str(value)
        if len(text) <= limit:
            return value
    if len(text) <= limit:
        return value
    return text[:limit] + f"... [truncated, {len(text)} chars]"


class AnalysisState(BaseModel):
    """The state one job's agents share; written only by the runner."""

    model_config = _CONFIG

    job_id: str
    dataset_info: DatasetInfo
    status: JobStatus = JobStatus.PENDING
    treatment_variable: str | None = None
    outcome_variable: str | None = None
    raw_metadata: dict[str, Any] | None = None
    domain_knowledge: dict[str, Any] | None = None
    data_profile: DataProfile | None = None
    dataframe_path: str | None = None
    eda_result: EDAResult | None = None
    proposed_dag: CausalDAG | None = None
    treatment_effects: list[TreatmentEffectResult] = []
    analyzed_pairs: list[CausalPair] = []
    sensitivity_results: list[SensitivityResult] = []
    confounder_discovery: dict[str, Any] | None = None
    ps_diagnostics: dict[str, Any] | None = None
    data_repairs: list[dict[str, Any]] = []
    debate_history: list[dict[str, Any]] = []
    critique_history: list[CritiqueFeedback] = []
    iteration_count: int = 0
    max_iterations: int = 3
    notebook_path: str | None = None
    recommendations: list[str] = []
    agent_traces: list[AgentTrace] = []
    error_message: str | None = None
    error_agent: str | None = None
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    completed_at: datetime | None = None
    # Additions (see module docstring).
    design: StudyDesign = Field(default_factory=StudyDesign)
    progress_percentage: float = 0.0
    completed_steps: list[str] = []

    _trace_sink: Callable[[AgentTrace], None] | None = PrivateAttr(default=None)

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name != "updated_at" and not name.startswith("_"):
            super().__setattr__("updated_at", utcnow())

    def set_trace_sink(self, sink: Callable[[AgentTrace], None] | None) -> None:
        """Receive every full trace before truncation (the job store keeps them all)."""
        self._trace_sink = sink

    # ---- status ---------------------------------------------------------------------------
    def transition(self, target: JobStatus) -> None:
        """Move to ``target``, raising :class:`IllegalTransition` when the diagram forbids it."""
        target = JobStatus(target)
        if target == self.status:
            if self.status.is_terminal:
                raise IllegalTransition(self.status.value, target.value)
            return
        if not is_legal_transition(self.status, target):
            raise IllegalTransition(self.status.value, target.value)
        self.status = target

    def mark_failed(self, error: str, agent: str) -> None:
        """Set FAILED and record the error and the agent that raised it."""
        self.transition(JobStatus.FAILED)
        self.error_message = error
        self.error_agent = agent

    def mark_completed(self) -> None:
        """Set COMPLETED and record when."""
        self.transition(JobStatus.COMPLETED)
        self.completed_at = utcnow()
        self.progress_percentage = 100.0

    def mark_cancelling(self) -> None:
        """Set CANCELLING: a graceful stop is under way."""
        self.transition(JobStatus.CANCELLING)

    def mark_cancelled(self, reason: str = "Cancelled by user") -> None:
        """Set CANCELLED and record the reason in ``error_message``."""
        if self.status not in (JobStatus.PENDING, JobStatus.CANCELLING):
            self.mark_cancelling()
        self.transition(JobStatus.CANCELLED)
        self.error_message = reason

    def reopen(self) -> None:
        """Return a failed, cancelled or interrupted job to PENDING so it can be resumed."""
        if self.status is JobStatus.COMPLETED:
            raise IllegalTransition(self.status.value, JobStatus.PENDING.value)
        self.status = JobStatus.PENDING
        self.error_message = None
        self.error_agent = None

    # ---- traces ---------------------------------------------------------------------------
    def add_trace(self, trace: AgentTrace) -> None:
        """Append a trace, truncating long outputs and reasoning and compressing old traces.

        The full trace goes to the trace sink first, so compression loses nothing on disk.
        """
        if self._trace_sink is not None:
            self._trace_sink(trace)
        outputs = {k: _truncate(v, MAX_TRACE_OUTPUT_LEN) for k, v in trace.outputs.items()}
        reasoning = trace.reasoning
        if len(reasoning) > MAX_TRACE_REASONING_LEN:
            reasoning = reasoning[:MAX_TRACE_REASONING_LEN] + "... [truncated]"
        traces = [*self.agent_traces, trace.model_copy(update={"outputs": outputs, "reasoning": reasoning})]
        if len(traces) > 2 * MAX_TRACES:
            traces = [_compress(traces[:-25]), *traces[-25:]]
        self.agent_traces = traces

    # ---- critique -------------------------------------------------------------------------
    def should_iterate(self) -> bool:
        """True if the latest critique says ITERATE and the iteration budget is not spent."""
        return (
            bool(self.critique_history)
            and self.critique_history[-1].decision is CritiqueDecision.ITERATE
            and self.iteration_count < self.max_iterations
        )

    def is_approved(self) -> bool:
        """True if the latest critique says APPROVE."""
        return bool(self.critique_history) and self.critique_history[-1].decision is CritiqueDecision.APPROVE

    # ---- pairs ----------------------------------------------------------------------------
    def get_primary_pair(self) -> tuple[str | None, str | None]:
        """The primary treatment-outcome pair (see :func:`resolve_primary_pair`)."""
        return resolve_primary_pair(self)

    def get_effects_for_pair(self, treatment: str, outcome: str) -> list[TreatmentEffectResult]:
        """The estimates for one treatment-outcome pair."""
        return [
            e for e in self.treatment_effects if e.treatment_variable == treatment and e.outcome_variable == outcome
        ]

    def get_all_pairs(self) -> list[tuple[str, str]]:
        """Every distinct pair: from ``analyzed_pairs`` if any, else from the estimates."""
        if self.analyzed_pairs:
            pairs = [(p.treatment, p.outcome) for p in sorted(self.analyzed_pairs, key=lambda p: p.priority)]
        else:
            pairs = [
                (e.treatment_variable, e.outcome_variable)
                for e in self.treatment_effects
                if e.treatment_variable and e.outcome_variable
            ]
        return list(dict.fromkeys(pairs))

    # ---- persistence ----------------------------------------------------------------------
    def to_json(self) -> str:
        """The state as indented JSON (what ``state.json`` holds)."""
        return self.model_dump_json(indent=2)

    @classmethod
    def from_json(cls, text: str) -> AnalysisState:
        """Parse a state written by :meth:`to_json`."""
        return cls.model_validate_json(text)


def resolve_primary_pair(state: AnalysisState) -> tuple[str | None, str | None]:
    """The one pair-resolution rule every agent uses.

    Priority: the user's treatment and outcome; the first (highest-priority) analyzed pair;
    the variables of the first estimate; ``(None, None)``.
    """
    if state.treatment_variable and state.outcome_variable:
        return state.treatment_variable, state.outcome_variable
    if state.analyzed_pairs:
        first = min(state.analyzed_pairs, key=lambda p: p.priority)
        return first.treatment, first.outcome
    for effect in state.treatment_effects:
        if effect.treatment_variable and effect.outcome_variable:
            return effect.treatment_variable, effect.outcome_variable
    return None, None


def _compress(traces: list[AgentTrace]) -> AgentTrace:
    counts: Counter[str] = Counter()
    n = 0
    for t in traces:
        if t.agent_name == "trace_compressor":
            counts.update(t.outputs.get("action_counts", {}))
            n += int(t.outputs.get("n_compressed", 0))
        else:
            counts[f"{t.agent_name}:{t.action}"] += 1
            n += 1
    return AgentTrace(
        agent_name="trace_compressor",
        timestamp=traces[-1].timestamp,
        action="compressed_traces",
        reasoning=f"{n} older traces compressed; the full traces are in the job's traces.jsonl",
        outputs={"action_counts": dict(counts), "n_compressed": n},
    )
