"""The ReAct data scientist's runtime: states, guards, artifact memory, counters.

A small pure module: no I/O, no model, no sandbox. The loop asks it before and after every
tool call:

- **states** ``planning → data_fetching → analyzing → presenting → completed`` (and ``error``),
  with only the transitions in :data:`ALLOWED`; an invalid one raises :class:`InvalidStateTransition`
  (code ``invalid_state``) and is recorded; every transition, accepted or not, is in the trace;
- **identical tool calls** (tool + normalised arguments) are skipped with a reason;
- **equivalent artifacts** (the same content hash) are not created twice;
- an **artifact inventory** (id, name, type, created, source call, producer, logical key) and a
  short **data intent summary** after each successful query go into every model call;
- **counters**: ``invalid_state``, ``duplicate_tool_call_skipped``,
  ``duplicate_artifact_prevented``, ``empty_python_payload_retried`` and the retry success rate.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import datetime
from enum import StrEnum
from typing import Any

from whyflow.ask.state import (
    ArtifactRecord,
    RuntimeCounters,
    RuntimeSummary,
    RuntimeTransition,
    ToolCallRecord,
)
from whyflow.core.errors import WhyflowError
from whyflow.core.job import utcnow

__all__ = [
    "ALLOWED",
    "TOOL_STATE",
    "InvalidStateTransition",
    "Runtime",
    "RuntimeState",
    "call_key",
    "content_hash",
    "intent_summary",
]


class RuntimeState(StrEnum):
    """Where a turn stands."""

    PLANNING = "planning"
    DATA_FETCHING = "data_fetching"
    ANALYZING = "analyzing"
    PRESENTING = "presenting"
    COMPLETED = "completed"
    ERROR = "error"


S = RuntimeState
ALLOWED: dict[RuntimeState, frozenset[RuntimeState]] = {
    S.PLANNING: frozenset({S.DATA_FETCHING, S.ANALYZING, S.PRESENTING, S.COMPLETED}),
    S.DATA_FETCHING: frozenset({S.ANALYZING, S.PRESENTING, S.ERROR}),
    S.ANALYZING: frozenset({S.PRESENTING, S.DATA_FETCHING, S.ERROR}),
    S.PRESENTING: frozenset({S.COMPLETED, S.ANALYZING, S.ERROR}),
    S.ERROR: frozenset({S.PLANNING, S.COMPLETED}),
    S.COMPLETED: frozenset(),
}
"""The allowed transitions from each state; staying in a state is no transition."""

TOOL_STATE: dict[str, RuntimeState] = {
    "profile_data": S.DATA_FETCHING,
    "sql_query": S.DATA_FETCHING,
    "write_code": S.ANALYZING,
    "execute_code": S.ANALYZING,
    "validate_results": S.ANALYZING,
    "output_text": S.PRESENTING,
    "output_table": S.PRESENTING,
    "create_plot": S.PRESENTING,
    "explain_findings": S.PRESENTING,
    "finalize": S.COMPLETED,
}
"""The state a tool call runs in."""


class InvalidStateTransition(WhyflowError):
    """A transition :data:`ALLOWED` does not permit (code ``invalid_state``)."""

    code = "invalid_state"

    def __init__(self, source: RuntimeState, target: RuntimeState, cause: str) -> None:
        self.source, self.target, self.cause = source, target, cause
        allowed = ", ".join(sorted(ALLOWED[source])) or "nothing"
        super().__init__(
            f"invalid_state: {cause} cannot move from {source} to {target} (allowed from {source}: {allowed})"
        )


def _canonical(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            str(k): _canonical(v)
            for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))
            if v not in (None, "", [], {})
        }
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def call_key(tool: str, arguments: dict[str, Any]) -> str:
    """Tool name + arguments with keys sorted, whitespace collapsed and empty values dropped."""
    return tool + ":" + json.dumps(_canonical(arguments), sort_keys=True, default=str)


def content_hash(content: Any) -> str:
    """A short SHA-256 of the content as canonical JSON."""
    text = json.dumps(content, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def intent_summary(
    description: str, columns: list[str], column_types: list[str], rows: int, sample: list[list[Any]]
) -> str:
    """A short "data intent summary" after a successful query: what was fetched, its
    dimensions and measures, how many rows and the time scope when a date column shows one."""
    numeric = ("INT", "DOUBLE", "FLOAT", "DECIMAL", "BIGINT", "HUGEINT", "REAL", "SMALLINT", "TINYINT")
    measures = [c for c, t in zip(columns, column_types, strict=False) if any(n in t.upper() for n in numeric)]
    dims = [c for c in columns if c not in measures]
    timed = [i for i, t in enumerate(column_types) if "DATE" in t.upper() or "TIMESTAMP" in t.upper()]
    scope = ""
    if timed and sample:
        values = sorted(str(r[timed[0]]) for r in sample if r[timed[0]] is not None)
        scope = f"; time scope {values[0]} to {values[-1]} (in the rows shown)" if values else ""
    what = description or "a query"
    return (
        f"{what}: {rows} rows; dimensions {', '.join(dims) or 'none'}; measures {', '.join(measures) or 'none'}{scope}"
    )


class Runtime:
    """One turn's state machine, call and artifact memory and counters (no I/O)."""

    def __init__(self, clock: Callable[[], datetime] = utcnow) -> None:
        self.state = RuntimeState.PLANNING
        self.clock = clock
        self.transitions: list[RuntimeTransition] = []
        self.calls: list[ToolCallRecord] = []
        self.artifacts: list[ArtifactRecord] = []
        self.intents: list[str] = []
        self.counters = RuntimeCounters()
        self._seen: dict[str, ToolCallRecord] = {}
        self._retrying_empty = False
        self._retries = 0
        self._retry_successes = 0

    # ---- states --------------------------------------------------------------------------
    def transition(self, target: RuntimeState, cause: str) -> None:
        """Move to ``target``; raise :class:`InvalidStateTransition` (recorded, counted) if not in :data:`ALLOWED`."""
        step = len(self.transitions) + 1
        if target == self.state:
            return
        if target not in ALLOWED[self.state]:
            self.transitions.append(
                RuntimeTransition(
                    step=step,
                    source=self.state,
                    target=target,
                    cause=cause,
                    accepted=False,
                    code=InvalidStateTransition.code,
                )
            )
            self.counters = self.counters.model_copy(update={"invalid_state": self.counters.invalid_state + 1})
            raise InvalidStateTransition(self.state, target, cause)
        self.transitions.append(RuntimeTransition(step=step, source=self.state, target=target, cause=cause))
        self.state = target

    def enter_for(self, tool: str) -> None:
        """Move to the state ``tool`` runs in; after an error, through planning first."""
        target = TOOL_STATE[tool]
        if self.state is RuntimeState.ERROR and target is not RuntimeState.COMPLETED:
            self.transition(RuntimeState.PLANNING, f"recover before {tool}")
        self.transition(target, tool)

    def fail(self, cause: str) -> None:
        """A tool or runtime error: to ``error`` where :data:`ALLOWED` permits it (planning cannot fail into error)."""
        if RuntimeState.ERROR in ALLOWED[self.state]:
            self.transition(RuntimeState.ERROR, cause)

    # ---- calls ---------------------------------------------------------------------------
    def duplicate_of(self, tool: str, arguments: dict[str, Any]) -> ToolCallRecord | None:
        """The earlier identical call, if any (then this one is skipped: counted here)."""
        earlier = self._seen.get(call_key(tool, arguments))
        if earlier is not None:
            self._count("duplicate_tool_call_skipped")
        return earlier

    def record_call(
        self,
        tool: str,
        arguments: dict[str, Any],
        status: str,
        observation: str,
        reason: str | None = None,
        origin: str = "deterministic",
    ) -> ToolCallRecord:
        """Keep a call (``ok``, ``failed``, ``skipped``, ``refused``) with what it returned."""
        record = ToolCallRecord(
            call_id=f"call_{len(self.calls) + 1}",
            tool=tool,
            arguments=arguments,
            status=status,
            reason=reason,
            observation=observation[:2000],
            origin=origin,
        )  # type: ignore[arg-type]
        self.calls.append(record)
        if status in ("ok", "failed"):
            self._seen.setdefault(call_key(tool, arguments), record)
        return record

    def forget_calls(self) -> None:
        """Forget which calls were made (a new path starts; the records and counters stay)."""
        self._seen.clear()

    def next_call_id(self) -> str:
        return f"call_{len(self.calls) + 1}"

    # ---- artifacts -----------------------------------------------------------------------
    def add_artifact(
        self, name: str, type_: str, producer: str, source_call: str, content: Any, logical_key: str | None = None
    ) -> tuple[ArtifactRecord, bool]:
        """Register an artifact; ``(existing, False)`` when an equivalent one (same hash) exists."""
        digest = content_hash(content)
        for art in self.artifacts:
            if art.content_hash == digest and art.type == type_:
                self._count("duplicate_artifact_prevented")
                return art, False
        art = ArtifactRecord(
            id=f"art_{len(self.artifacts) + 1}",
            name=name,
            type=type_,
            created=self.clock(),
            source_call=source_call,
            producer=producer,
            logical_key=logical_key,
            content_hash=digest,
        )
        self.artifacts.append(art)
        return art, True

    def inventory(self) -> str:
        """The artifact inventory for a model call (it goes into every call, so the model always knows what exists)."""
        if not self.artifacts:
            return "Artifacts so far: none."
        lines = ["Artifacts so far (reuse them; do not recreate an equivalent one):"]
        for a in self.artifacts:
            key = f", key {a.logical_key}" if a.logical_key else ""
            lines.append(
                f"- {a.id} {a.name!r} ({a.type}, by {a.producer} in {a.source_call}, "
                f"{a.created.isoformat(timespec='seconds')}{key})"
            )
        return "\n".join(lines)

    def remember(self, earlier: list[ArtifactRecord]) -> None:
        """Artifacts of earlier turns of the conversation: in the inventory, and never recreated."""
        for art in earlier:
            if all(a.content_hash != art.content_hash for a in self.artifacts):
                self.artifacts.append(art.model_copy(update={"id": f"earlier_{len(self.artifacts) + 1}"}))

    def add_intent(self, summary: str) -> None:
        self.intents.append(summary)

    # ---- empty code payloads -------------------------------------------------------------
    def empty_payload(self) -> bool:
        """An empty code payload arrived: True if the one guided retry is still to be given."""
        if self._retrying_empty:
            self._retrying_empty = False
            return False
        self._retrying_empty = True
        self._retries += 1
        self._count("empty_python_payload_retried")
        return True

    def code_arrived(self) -> None:
        """A non-empty code payload arrived; it answers a pending guided retry, if any."""
        if self._retrying_empty:
            self._retrying_empty = False
            self._retry_successes += 1
            self._count("empty_python_payload_recovered")

    # ---- counters and summary ------------------------------------------------------------
    def count(self, name: str, by: int = 1) -> None:
        """Bump one of the counters (the loop's safeguards count here too)."""
        self._count(name, by)

    def _count(self, name: str, by: int = 1) -> None:
        value = int(getattr(self.counters, name)) + by
        self.counters = self.counters.model_copy(update={name: value})

    def summary(self, *, mode: str, complexity: str, budget: int, iterations: int, ended_by: str) -> RuntimeSummary:
        rate = self._retry_successes / self._retries if self._retries else None
        counters = self.counters.model_copy(update={"retry_success_rate": rate})
        return RuntimeSummary(
            mode=mode,
            complexity=complexity,
            budget=budget,
            iterations=iterations,  # type: ignore[arg-type]
            final_state=str(self.state),
            ended_by=ended_by,
            transitions=list(self.transitions),
            tool_calls=list(self.calls),
            artifacts=list(self.artifacts),
            intents=list(self.intents),
            counters=counters,
        )

    def counters_line(self) -> str:
        """The counters in one line (trace summaries and the CLI's run summary)."""
        c = self.counters
        rate = f"{self._retry_successes / self._retries:.0%}" if self._retries else "n/a"
        return (
            f"invalid_state {c.invalid_state}, duplicate_tool_call_skipped {c.duplicate_tool_call_skipped}, "
            f"duplicate_artifact_prevented {c.duplicate_artifact_prevented}, "
            f"empty_python_payload_retried {c.empty_python_payload_retried} (retry success {rate})"
        )
