"""The second state model: one question about one or more datasets (seed 001's AgentState).

:class:`AskState` holds 001's fields (question, datasets, data summary, messages, plan, code,
execution result and success, error, attempts, failed attempts, evaluation, explanation, final
output) plus the fields the runner keeps for every job (id, status, timestamps, progress,
completed steps, loop rounds, traces, error). Contracts are enforced exactly as for
:class:`~agents.base.state.AnalysisState`: agents declare ``STATE_MODEL = AskState`` and get a
read-only view of their declared fields; the runner is the only writer.

The job lifecycle (status transitions, traces, persistence) follows the same rules and the same
:class:`~agents.base.state.JobStatus` phases as the analysis state, so ``whyflow status``,
``resume`` and ``cancel`` work unchanged. Ask agents use these phases:
planning = PROFILING, writing and running code = EXPLORATORY_ANALYSIS, a causal sub-run =
ESTIMATING_EFFECTS, evaluating = CRITIQUE_REVIEW, explaining or reporting an error =
GENERATING_NOTEBOOK.

:data:`STATE_MODELS` names the state models a recipe may run on (``state: ask``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from agents.base.errors import IllegalTransition
from agents.base.state import (
    MAX_TRACE_OUTPUT_LEN,
    MAX_TRACE_REASONING_LEN,
    MAX_TRACES,
    RUNNER_FIELDS,
    AgentTrace,
    AnalysisState,
    JobStatus,
    is_legal_transition,
    utcnow,
)

__all__ = [
    "ArtifactRecord",
    "AskDataset",
    "AskPlan",
    "AskState",
    "ChatMessage",
    "ExecutionRecord",
    "FailedAttempt",
    "FinalOutput",
    "STATE_MODELS",
    "JobState",
    "RuntimeCounters",
    "RuntimeSummary",
    "RuntimeTransition",
    "ToolCallRecord",
    "state_model_name",
]

_CONFIG = ConfigDict(extra="forbid", validate_assignment=True, ser_json_inf_nan="constants")


class _Model(BaseModel):
    model_config = _CONFIG


class AskDataset(_Model):
    """One input file, queried as the DuckDB view ``name`` (``data`` for the first file)."""

    name: str
    source: str
    local_path: str
    rows: int
    columns: list[str]
    dtypes: dict[str, str] = {}
    sha256: str = ""


class ChatMessage(_Model):
    """One turn of the conversation (a ``--session`` carries them between questions)."""

    role: Literal["user", "assistant", "system"]
    content: str
    data: dict[str, Any] = {}


class AskPlan(_Model):
    """What the planner decided (001's plan, plus how the question maps to the tools)."""

    needs_code: bool = True
    needs_evaluation: bool = False
    needs_explanation: bool = True
    reasoning: str = ""
    route: Literal["code", "causal", "conceptual", "unanswerable"] = "code"
    mode: Literal["deterministic", "model"] = "deterministic"
    example_id: str | None = None
    parameters: dict[str, Any] = {}
    closest_examples: list[str] = []
    answer_format: dict[str, Any] = {}
    treatment: str | None = None
    outcome: str | None = None


class ExecutionRecord(_Model):
    """What crossed back from the sandbox: data only, never pickles."""

    ok: bool
    result: Any = None
    result_kind: Literal["none", "scalar", "list", "dict", "table"] = "none"
    figures: list[Any] = []
    stdout: str = ""
    stderr: str = ""
    truncated: bool = False
    error: str | None = None
    traceback: str | None = None
    wall_seconds: float = 0.0
    cpu_seconds: float = 0.0
    timed_out: bool = False
    layers: list[str] = []
    """The sandbox's isolation layers that were active for this run (``whyflow doctor`` explains each)."""


class FailedAttempt(_Model):
    """One failed round of the code loop (001's failed_attempts entry)."""

    attempt: int
    code: str
    error: str


class FinalOutput(_Model):
    """The answer package (seed 002's FinalOutput); ``answer.json`` holds it."""

    answer: str
    confidence: float = Field(0.5, ge=0.0, le=1.0)
    output_type: Literal["analysis", "visualization", "explanation", "error"]
    result: Any = None
    figure: dict[str, Any] | None = None
    code: str | None = None
    caveats: list[str] = []
    reasoning_trace: list[str] = []
    charts: list[str] = []
    examples: list[str] = []


class RuntimeTransition(_Model):
    """One state change of the ReAct runtime (seed 003); a rejected one carries ``invalid_state``."""

    step: int
    source: str
    target: str
    cause: str
    accepted: bool = True
    code: str | None = None


class ArtifactRecord(_Model):
    """One thing a tool produced, as every model call sees it (seed 003's artifact inventory)."""

    id: str
    name: str
    type: str
    created: datetime
    source_call: str
    producer: str
    logical_key: str | None = None
    content_hash: str


class ToolCallRecord(_Model):
    """One tool call of the ReAct loop and what became of it."""

    call_id: str
    tool: str
    arguments: dict[str, Any] = {}
    status: Literal["ok", "failed", "skipped", "refused"]
    reason: str | None = None
    observation: str = ""
    origin: Literal["model", "deterministic", "runtime"] = "deterministic"


class RuntimeCounters(_Model):
    """Seed 003's reliability counters (and 002's safeguards), in the trace and the run summary."""

    invalid_state: int = 0
    duplicate_tool_call_skipped: int = 0
    duplicate_artifact_prevented: int = 0
    empty_python_payload_retried: int = 0
    empty_python_payload_recovered: int = 0
    retry_success_rate: float | None = None
    code_failures: int = 0
    validation_failures: int = 0
    forced_validations: int = 0
    loop_detections: int = 0
    corrective_turns: int = 0
    model_calls: int = 0


class RuntimeSummary(_Model):
    """How the ReAct data scientist's run went: mode, budget, states, calls, artifacts, counters."""

    mode: Literal["deterministic", "model", "model_fallback"]
    complexity: Literal["simple", "standard", "complex"]
    budget: int
    iterations: int = 0
    final_state: str
    ended_by: str
    transitions: list[RuntimeTransition] = []
    tool_calls: list[ToolCallRecord] = []
    artifacts: list[ArtifactRecord] = []
    intents: list[str] = []
    counters: RuntimeCounters = RuntimeCounters()


class AskState(BaseModel):
    """The state of one question's job; written only by the runner."""

    model_config = _CONFIG

    RUNNER_FIELDS: ClassVar[frozenset[str]] = RUNNER_FIELDS | {"kind"}
    INPUT_FIELDS: ClassVar[frozenset[str]] = frozenset({"job_id", "question", "datasets", "data_summary", "messages"})
    ALWAYS_READABLE: ClassVar[frozenset[str]] = frozenset(
        {"job_id", "question", "datasets", "data_summary", "messages", "iteration_count", "max_iterations"}
    )

    kind: Literal["ask"] = "ask"
    job_id: str
    status: JobStatus = JobStatus.PENDING
    # 001's AgentState
    question: str
    datasets: dict[str, AskDataset] = {}
    data_summary: str = ""
    messages: list[ChatMessage] = []
    plan: AskPlan | None = None
    code: str | None = None
    execution_result: ExecutionRecord | None = None
    execution_success: bool = False
    error: str | None = None
    attempts: int = 0
    failed_attempts: list[FailedAttempt] = []
    evaluation: str | None = None
    explanation: str | None = None
    final_output: FinalOutput | None = None
    # A causal question's nested run of pipelines/causal_analysis.yaml.
    causal_result: dict[str, Any] | None = None
    # The ReAct data scientist's runtime (seeds 002/003) and an initial analysis' title (004).
    runtime: RuntimeSummary | None = None
    session_title: str | None = None
    # Kept by the runner, as in AnalysisState.
    iteration_count: int = 0
    max_iterations: int = 3
    agent_traces: list[AgentTrace] = []
    error_message: str | None = None
    error_agent: str | None = None
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    completed_at: datetime | None = None
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

    # ---- status (the same rules as AnalysisState) -------------------------------------------
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

    def should_iterate(self) -> bool:
        """Ask jobs have no critique: a loop's ``until:`` decides (kept for the runner's protocol)."""
        return False

    # ---- traces -----------------------------------------------------------------------------
    def add_trace(self, trace: AgentTrace) -> None:
        """Append a trace (full copy to the sink first), truncating long outputs in the state."""
        if self._trace_sink is not None:
            self._trace_sink(trace)
        outputs = {k: _truncate(v, MAX_TRACE_OUTPUT_LEN) for k, v in trace.outputs.items()}
        reasoning = trace.reasoning
        if len(reasoning) > MAX_TRACE_REASONING_LEN:
            reasoning = reasoning[:MAX_TRACE_REASONING_LEN] + "... [truncated]"
        traces = [*self.agent_traces, trace.model_copy(update={"outputs": outputs, "reasoning": reasoning})]
        self.agent_traces = traces[-2 * MAX_TRACES :]

    # ---- persistence ------------------------------------------------------------------------
    def to_json(self) -> str:
        """The state as indented JSON (what ``state.json`` holds)."""
        return self.model_dump_json(indent=2)

    @classmethod
    def from_json(cls, text: str) -> AskState:
        """Parse a state written by :meth:`to_json`."""
        return cls.model_validate_json(text)


def _truncate(value: Any, limit: int) -> Any:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return value if len(text) <= limit else text[:limit] + f"... [truncated, {len(text)} chars]"


JobState = AnalysisState | AskState
"""Any state the runner can run a recipe on."""

STATE_MODELS: dict[str, type[BaseModel]] = {"analysis": AnalysisState, "ask": AskState}
"""The state models a recipe's ``state:`` may name."""


def state_model_name(model: type[BaseModel]) -> str:
    """The recipe name of a state model (``analysis``, ``ask``)."""
    for name, cls in STATE_MODELS.items():
        if cls is model:
            return name
    return model.__name__
