"""The ask family's state: one question about one or more datasets.

:class:`AskState` holds the question, the datasets, a data summary, the conversation so far, the
plan, the code and its execution result, the failed attempts, the evaluation, the explanation
and the final output, on top of the lifecycle every job shares
(:class:`~whyflow.core.job.JobLifecycle`: id, status, timestamps, progress, completed steps, loop
rounds, traces, error). Contracts are enforced exactly as for the analysis state: agents declare
``STATE_MODEL = AskState`` and get a read-only view of their declared fields; the runner is the
only writer.

Ask agents use the analysis's status phases, so ``whyflow status``, ``resume`` and ``cancel``
work unchanged: planning = PROFILING, writing and running code = EXPLORATORY_ANALYSIS, a causal
sub-run = ESTIMATING_EFFECTS, evaluating = CRITIQUE_REVIEW, explaining or reporting an error =
GENERATING_NOTEBOOK.

A recipe runs on it with ``state: ask`` (see :mod:`whyflow.states`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from whyflow.ask.tools.retrieval import FilledPlan
from whyflow.core.job import JOB_CONFIG, JobLifecycle
from whyflow.runtime.sandbox.run import ExecutionResult

__all__ = [
    "ArtifactRecord",
    "AskDataset",
    "AskPlan",
    "AskState",
    "CausalRunResult",
    "ChatMessage",
    "FailedAttempt",
    "FinalOutput",
    "NestedHeadline",
    "RuntimeCounters",
    "RuntimeSummary",
    "RuntimeTransition",
    "ToolCallRecord",
]

_CONFIG = JOB_CONFIG


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
    aliases: dict[str, list[str]] = {}
    """What the dataset's description (``--describe``, ``--metadata``) calls each column it describes."""


class ChatMessage(_Model):
    """One turn of the conversation (a ``--session`` carries them between questions)."""

    role: Literal["user", "assistant", "system"]
    content: str
    data: dict[str, Any] = {}


class AskPlan(_Model):
    """What the planner decided: whether code, evaluation and explanation are needed, and how the question maps to the tools."""

    needs_code: bool = True
    needs_evaluation: bool = False
    needs_explanation: bool = True
    reasoning: str = ""
    route: Literal["code", "causal", "conceptual", "unanswerable"] = "code"
    mode: Literal["deterministic", "model"] = "deterministic"
    example_id: str | None = None
    filled: FilledPlan | None = None
    """The worked example filled from the question: the code to run and how to word the answer."""
    parameters: dict[str, Any] = {}
    """The question as planned (``question``, a follow-up rewritten in full) and the planner's notes
    (``error``: why a named column or method cannot run; ``complete``: every requested value has a
    routine of its own; ``control_column``: the column a causal question asks whether to adjust for)."""
    closest_examples: list[str] = []
    treatment: str | None = None
    outcome: str | None = None


class FailedAttempt(_Model):
    """One failed round of the code loop: the code, its error, and when."""

    attempt: int
    code: str
    error: str


class FinalOutput(_Model):
    """The answer package: answer, confidence, output type, result, figure, code and caveats; ``answer.json`` holds it."""

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
    """One state change of the ReAct runtime; a rejected one carries ``invalid_state``."""

    step: int
    source: str
    target: str
    cause: str
    accepted: bool = True
    code: str | None = None


class ArtifactRecord(_Model):
    """One thing a tool produced, as every model call sees it in the artifact inventory."""

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
    """The ReAct runtime's reliability and safeguard counters, in the trace and the run summary."""

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


class NestedHeadline(_Model):
    """The headline estimate of a nested causal run."""

    method: str
    estimand: str = "ATE"
    estimate: float
    ci_lower: float
    ci_upper: float
    p_value: float | None = None


class NestedLeftOut(_Model):
    """A column the nested causal run left out of its adjustment set: its role, why, and whether the column's
    values themselves show that role (``whyflow.causal.dataprep.column_names.read_from_values``)."""

    column: str
    role: str
    reason: str
    from_values: bool = False


class CausalRunResult(_Model):
    """A causal question's nested run of the causal recipe: its headline, verdict and caveats."""

    job_dir: str
    status: str
    error: str | None = None
    treatment: str | None = None
    outcome: str | None = None
    headline: NestedHeadline | None = None
    critique: str | None = None
    caveats: list[str] = []
    summary: list[str] = []
    adjusted_for: list[str] = []
    left_out: list[NestedLeftOut] = []


class AskState(JobLifecycle):
    """The state of one question's job; written only by the runner."""

    INPUT_FIELDS: ClassVar[frozenset[str]] = frozenset({"job_id", "question", "datasets", "data_summary", "messages"})
    ALWAYS_READABLE: ClassVar[frozenset[str]] = frozenset(
        {"job_id", "question", "datasets", "data_summary", "messages", "iteration_count", "max_iterations"}
    )

    kind: Literal["ask"] = "ask"
    # The question, the data it is about, and what answering it produced.
    question: str
    datasets: dict[str, AskDataset] = {}
    data_summary: str = ""
    messages: list[ChatMessage] = []
    plan: AskPlan | None = None
    code: str | None = None
    # The sandbox's result of the latest run, its stdout and stderr cut to their ends.
    execution_result: ExecutionResult | None = None
    execution_success: bool = False
    error: str | None = None
    attempts: int = 0
    failed_attempts: list[FailedAttempt] = []
    evaluation: str | None = None
    explanation: str | None = None
    final_output: FinalOutput | None = None
    # A causal question's nested run of whyflow/recipes/causal_analysis.yaml.
    causal_result: CausalRunResult | None = None
    # The ReAct data scientist's runtime summary, and the session title a first analysis gives.
    runtime: RuntimeSummary | None = None
    session_title: str | None = None
