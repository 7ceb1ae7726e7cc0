"""Dispatching one agent and applying its update: where contracts are enforced at run time.

:func:`dispatch` checks the agent's required fields, builds its read-only view and runs it;
it touches nothing shared, so it is what a Prefect task (thread, Dask worker or process) runs.
:func:`apply_result` runs in the flow, on the one state object: it rejects fields outside the
agent's WRITES_STATE_FIELDS, applies the rest and records the trace.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from whyflow.core.agent import Agent, AgentContext, AgentParams, AgentResult
from whyflow.core.errors import ContractViolation, MissingStateField
from whyflow.core.job import AgentTrace
from whyflow.core.view import StateView
from whyflow.states import JobState

__all__ = ["dispatch", "apply_result", "run_single_agent", "is_present", "missing_required"]


def is_present(value: Any) -> bool:
    """A field counts as provided when it is neither ``None`` nor an empty collection."""
    if value is None:
        return False
    if isinstance(value, (list, dict, tuple, set, str)):
        return len(value) > 0
    return True


def missing_required(agent_cls: type[Agent], state: JobState) -> list[str]:
    """The agent's required fields that are empty in ``state``."""
    required = agent_cls.REQUIRED_STATE_FIELDS
    return [f for f in required if not is_present(getattr(state, f))]


def dispatch(
    agent_cls: type[Agent],
    state: JobState,
    params: AgentParams | Mapping[str, Any] | None,
    ctx: AgentContext,
) -> AgentResult:
    """Run one agent on a private, read-only view of ``state`` and return its result."""
    missing = missing_required(agent_cls, state)
    if missing:
        raise MissingStateField(agent_cls.NAME, missing[0])
    if not isinstance(params, AgentParams):
        params = agent_cls.Params.model_validate(dict(params or {}))
    view = StateView(state, agent_cls.NAME, agent_cls.reads())
    started = time.perf_counter()
    result = agent_cls().run(view, params, ctx)
    if isinstance(result, Mapping):
        result = AgentResult(updates=dict(result))
    if not isinstance(result, AgentResult):
        raise TypeError(f"agent '{agent_cls.NAME}' returned {type(result).__name__}, not AgentResult")
    result.outputs.setdefault("duration_ms", int((time.perf_counter() - started) * 1000))
    return result


def apply_result(
    state: JobState,
    agent_cls: type[Agent],
    result: AgentResult,
    *,
    writes: frozenset[str] | None = None,
    step: str | None = None,
) -> list[str]:
    """Apply an agent's update to ``state`` after checking it against the contract.

    ``writes`` is the step's narrowed write set (a recipe's ``writes:``); declared fields
    outside it are dropped. Returns the fields applied. Raises :class:`ContractViolation` for a
    field outside WRITES_STATE_FIELDS, before anything is applied.
    """
    declared = frozenset(agent_cls.WRITES_STATE_FIELDS)
    for field in result.updates:
        if field not in declared:
            raise ContractViolation(agent_cls.NAME, field, "write", sorted(declared))
    allowed = declared if writes is None else declared & writes
    applied = [f for f in result.updates if f in allowed]
    if applied:
        # Validate every field first, then assign, so a bad value applies nothing.
        candidate = state.model_validate({**state.model_dump(), **{f: result.updates[f] for f in applied}})
        for f in applied:
            setattr(state, f, getattr(candidate, f))
    duration = int(result.outputs.get("duration_ms", 0))
    state.add_trace(
        AgentTrace(
            agent_name=agent_cls.NAME,
            action=result.action,
            reasoning=result.reasoning or result.summary,
            inputs={"step": step or agent_cls.NAME, "reads": sorted(agent_cls.REQUIRED_STATE_FIELDS)},
            outputs={"summary": result.summary, "fields_written": applied, **result.outputs},
            tools_called=list(result.tools_called),
            duration_ms=duration,
            token_usage=dict(result.token_usage),
        )
    )
    return applied


def run_single_agent(
    name_or_cls: str | type[Agent],
    state: JobState,
    job_dir: str | Path,
    params: Mapping[str, Any] | None = None,
    *,
    seed: int = 0,
) -> AgentResult:
    """Dispatch one agent and apply its update to ``state`` (tests, notebooks, debugging).

    Uses the same contract checks as a recipe run, without Prefect or persistence.
    """
    from whyflow.registry import default_registry

    agent_cls = default_registry().get(name_or_cls) if isinstance(name_or_cls, str) else name_or_cls
    ctx = AgentContext(job_dir=Path(job_dir), step=agent_cls.NAME, seed=seed, iteration=state.iteration_count)
    result = dispatch(agent_cls, state, params, ctx)
    apply_result(state, agent_cls, result)
    return result
