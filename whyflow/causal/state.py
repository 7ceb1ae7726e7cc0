"""The causal analysis's state: every field and model the analysis agents exchange.

Fields, types and defaults follow the analysis state schema; the lifecycle every job shares
(status, traces, progress, resume) is :class:`~whyflow.core.job.JobLifecycle`. On top of the
schema:

1. Contracts are enforced: agents never receive this object, only a read-only
   :class:`~whyflow.core.view.StateView`; the runner is the only writer and rejects any update
   outside an agent's WRITES_STATE_FIELDS.
2. Parallel agents never share mutable state: each view holds its own deep copy.
3. ``progress_percentage`` is a real field, computed by the runner from each completed agent's
   PROGRESS_WEIGHT, and ``completed_steps`` lets a job resume.
4. One pair-resolution function, :func:`resolve_primary_pair`, used by every agent.
5. ``design`` holds the study-design facts the user states.

Job status transitions follow the schema's diagram, read as a pipeline of phases. Legal:
staying in the same working phase (several agents share one); moving forward to a later
working phase (a recipe may have no agent for a phase in between); CRITIQUE_REVIEW ->
ITERATING and ITERATING -> any working phase a critique loop starts with; PENDING ->
FETCHING_DATA or CANCELLED; any working phase -> FAILED or CANCELLING (the diagram forgets
cancelling late phases; a user may cancel at any time); CANCELLING -> CANCELLED; a working phase
-> COMPLETED. Terminal states leave only through :meth:`JobLifecycle.reopen` (``whyflow resume``).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from whyflow.causal.diagnostics import ConfounderDiscovery, DataRepairEntry, PSDiagnostics
from whyflow.causal.estimates import EstimateDetails, SensitivityDetails
from whyflow.causal.knowledge import DebateEntry, DomainKnowledge, Metadata
from whyflow.core.job import (
    JOB_CONFIG,
    JobLifecycle,
)

__all__ = [
    "AnalysisState",
    "CausalDAG",
    "CausalEdge",
    "CausalPair",
    "CritiqueDecision",
    "CritiqueFeedback",
    "DataProfile",
    "DatasetInfo",
    "EDAResult",
    "SensitivityResult",
    "StudyDesign",
    "TreatmentEffectResult",
    "resolve_primary_pair",
]

_CONFIG = JOB_CONFIG


class _Model(BaseModel):
    model_config = _CONFIG


class DatasetInfo(_Model):
    """The input dataset as the job received it."""

    url: str
    name: str | None = None
    local_path: str | None = None
    n_samples: int | None = None
    n_features: int | None = None
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
    """Rows of the input file that repeat an earlier row exactly (``whyflow.causal.dataprep.frame_checks.duplicate_verdict``)."""
    duplicates_dropped: bool = False
    """True when they were copies, dropped from the analysis data (``n_samples`` counts what is left)."""
    duplicates_note: str = ""
    """What was found and done about them, in one sentence ("" when no row repeats)."""
    subgroup: str = ""
    """The stated subgroup (``--where``) and its size, in words ("" when every row is analysed)."""


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


class StudyDesign(_Model):
    """Design facts the analyst states (CLI flags or recipe); ``None`` means use the profile."""

    estimand: str = "ATE"
    instrument: str | None = None
    running_variable: str | None = None
    cutoff: float | None = None
    unit_column: str | None = None
    time_column: str | None = None
    metadata_path: str | None = None
    # ---- the analyst's specification: once stated, a contract the run keeps ----------------
    controls: list[str] | None = None
    """The adjustment set every estimator uses, exactly (``[]``: no controls); ``None``: the recipe chooses.
    The recipe's own choice is still computed and recorded beside it (``recipe_adjustment_set``)."""
    cluster: str | None = None
    """Column whose values are clusters: the estimators that can give cluster-robust errors on it."""
    where: str | None = None
    """A subgroup (``whyflow.causal.dataprep.subgroup`` syntax): the analysis reads only its rows."""
    # -- repeated cross-sections (--group/--period) --
    repeated_cross_section: bool = False
    """True when ``--group``/``--period`` named the difference-in-differences' columns (kept in
    ``unit_column``/``time_column``): rows are individuals drawn within groups and periods, not units followed."""
    # -- a fuzzy discontinuity (--fuzzy) --
    fuzzy: bool = False
    """True when ``--fuzzy`` states that take-up does not follow the cutoff exactly. The form is read from the
    data either way (fuzzy whenever a row's take-up disagrees with its side); stated, a take-up that follows
    the cutoff exactly is said beside the answer, whose sharp form is then the fuzzy one."""
    # -- several instruments (--instrument A,B) --
    extra_instruments: list[str] = []
    """The instruments after the first (``instrument``) when ``--instrument`` names several, in their order."""

    @property
    def instruments(self) -> list[str]:
        """Every stated instrument, the first one first (empty when none was stated)."""
        return [self.instrument, *self.extra_instruments] if self.instrument else []


class AnalysisState(JobLifecycle):
    """The state one job's agents share; written only by the runner."""

    ALWAYS_READABLE: ClassVar[frozenset[str]] = frozenset(
        {
            "job_id",
            "dataset_info",
            "treatment_variable",
            "outcome_variable",
            "design",
            "iteration_count",
            "max_iterations",
            "analyzed_pairs",
        }
    )
    """Context every agent may read without declaring it (the job, the question and the round)."""

    kind: Literal["analysis"] = "analysis"
    dataset_info: DatasetInfo
    treatment_variable: str | None = None
    outcome_variable: str | None = None
    raw_metadata: Metadata | None = None
    domain_knowledge: DomainKnowledge | None = None
    data_profile: DataProfile | None = None
    dataframe_path: str | None = None
    eda_result: EDAResult | None = None
    proposed_dag: CausalDAG | None = None
    treatment_effects: list[TreatmentEffectResult] = []
    analyzed_pairs: list[CausalPair] = []
    sensitivity_results: list[SensitivityResult] = []
    confounder_discovery: ConfounderDiscovery | None = None
    ps_diagnostics: PSDiagnostics | None = None
    data_repairs: list[DataRepairEntry] = []
    debate_history: list[DebateEntry] = []
    critique_history: list[CritiqueFeedback] = []
    notebook_path: str | None = None
    recommendations: list[str] = []
    # Additions (see module docstring).
    design: StudyDesign = Field(default_factory=StudyDesign)

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
