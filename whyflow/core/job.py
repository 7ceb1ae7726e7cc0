"""What every job state has, whatever its family: identity, status, traces, progress, resume.

:class:`JobLifecycle` is the one lifecycle both state models share (the causal analysis's
:class:`~whyflow.causal.state.AnalysisState` and the ask family's state): the status and its legal
transitions, the runner's bookkeeping fields, the agents' traces and the JSON the job store
saves. Only the runner writes these fields (:data:`RUNNER_FIELDS`).

- ``updated_at`` moves on every assignment to a field (``__setattr__``), not only in helpers.
- Trace compression never loses a trace: :meth:`JobLifecycle.add_trace` hands every full,
  untruncated trace to a sink (the job store appends it to ``traces.jsonl``) before it
  truncates or compresses the copy kept in the state.
- Terminal states leave only through :meth:`JobLifecycle.reopen` (``whyflow resume``).
- ``state.json`` says which version of the state it is (``schema_version``) and which family's
  (``kind``); :mod:`whyflow.versions` reads every earlier version.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from whyflow.core.errors import IllegalTransition
from whyflow.core.status import JobStatus, is_legal_transition

__all__ = [
    "JOB_CONFIG",
    "STATE_SCHEMA_VERSION",
    "MAX_TRACES",
    "MAX_TRACE_OUTPUT_LEN",
    "MAX_TRACE_REASONING_LEN",
    "RUNNER_FIELDS",
    "AgentTrace",
    "JobLifecycle",
    "utcnow",
]

STATE_SCHEMA_VERSION = 1
"""The version of ``state.json`` this release writes (:mod:`whyflow.versions` lists what each changed)."""

MAX_TRACES = 50
MAX_TRACE_OUTPUT_LEN = 500
MAX_TRACE_REASONING_LEN = 1000
_KEEP_RECENT = 25  # traces kept whole when older ones are compressed


def utcnow() -> datetime:
    """The current time in UTC, timezone-aware."""
    return datetime.now(UTC)


# NaN and infinities (a p-value of a constant column, an unbounded VIF) are written as JSON's
# NaN/Infinity constants, which Python, pandas and pydantic read back; writing them as null
# would make the saved state fail validation when it is loaded again.
JOB_CONFIG = ConfigDict(extra="forbid", validate_assignment=True, ser_json_inf_nan="constants")


class AgentTrace(BaseModel):
    """A record of one agent action, for observability and debugging."""

    model_config = JOB_CONFIG

    agent_name: str
    timestamp: datetime = Field(default_factory=utcnow)
    action: str
    reasoning: str
    inputs: dict[str, Any] = {}
    outputs: dict[str, Any] = {}
    tools_called: list[str] = []
    duration_ms: int = 0
    token_usage: dict[str, int] = {}


RUNNER_FIELDS = frozenset(
    {
        "schema_version",
        "kind",
        "job_dir",
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


class JobLifecycle(BaseModel):
    """The fields and status rules every job state shares; each family adds its own fields."""

    model_config = JOB_CONFIG

    RUNNER_FIELDS: ClassVar[frozenset[str]] = RUNNER_FIELDS
    """Fields only the runner writes."""
    INPUT_FIELDS: ClassVar[frozenset[str]] = frozenset({"job_id", "dataset_info"})
    """Fields a new job starts with (besides a recipe's ``inputs``)."""
    ALWAYS_READABLE: ClassVar[frozenset[str]] = frozenset({"job_id"})
    """Context every agent on this state may read without declaring it."""

    schema_version: int = STATE_SCHEMA_VERSION
    """The version of the state's layout: a newer one is refused, an older one upgraded on read."""
    kind: str
    """Which family's state this is (each family narrows it to its own name)."""
    job_dir: str | None = None
    """The folder the state was last saved in: a folder moved since has its paths rebased on read."""
    job_id: str
    status: JobStatus = JobStatus.PENDING
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

    def should_iterate(self) -> bool:
        """Whether a critique loop runs another round; a family with a critique overrides this."""
        return False

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
            traces = [_compress(traces[:-_KEEP_RECENT]), *traces[-_KEEP_RECENT:]]
        self.agent_traces = traces

    # ---- persistence ----------------------------------------------------------------------
    def to_json(self) -> str:
        """The state as indented JSON (what ``state.json`` holds)."""
        return self.model_dump_json(indent=2)

    @classmethod
    def from_json(cls, text: str) -> Self:
        """Parse a state this release wrote with :meth:`to_json` (a file of any version: :mod:`whyflow.versions`)."""
        return cls.model_validate_json(text)


def _truncate(value: Any, limit: int) -> Any:
    """``value`` itself when its text fits in ``limit`` characters, else the text cut there."""
    text = value if isinstance(value, str) else None
    if text is None:
        try:
            text = json.dumps(value, default=str)
        except (TypeError, ValueError):
            text = str(value)
    if len(text) <= limit:
        return value
    return text[:limit] + f"... [truncated, {len(text)} chars]"


def _compress(traces: list[AgentTrace]) -> AgentTrace:
    """One trace counting the actions of ``traces`` (earlier compressions included)."""
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
