"""Graph-wide checks of a resolved plan, one small function per rule, run before any flow.

Each check reports through ``report(loc, message)`` so that every problem is collected and
raised once, located in the recipe and named in the user's terms.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from whyflow.core.status import JobStatus, is_legal_transition
from whyflow.flows.recipes.nodes import AgentNode, LoopNode, ParallelNode, Plan

__all__ = ["validate_plan"]

Report = Callable[[tuple[Any, ...], str], None]


def validate_plan(plan: Plan, report: Report) -> None:
    """Run every graph rule on ``plan``."""
    _validate_unique_names(plan, report)
    _validate_reads_provided(plan, report)
    _validate_parallel_groups(plan, report)
    _validate_loops_have_critique(plan, report)
    _validate_status_order(plan, report)


def _validate_unique_names(plan: Plan, report: Report) -> None:
    seen: dict[str, AgentNode] = {}
    for node in plan.agent_nodes():
        if node.key in seen:
            report(
                (*node.loc, "agent"),
                f"step name '{node.key}' is used twice; give one of them a distinct 'name:' "
                f"(needed to resume and to report progress)",
            )
        else:
            seen[node.key] = node


def _writers_of(field: str) -> list[str]:
    from whyflow.registry import default_registry

    names = []
    registry = default_registry()
    for name in registry.names():
        try:
            cls = registry.get(name)
        except Exception:  # noqa: BLE001 - a broken plug-in must not hide the real error
            continue
        if field in cls.WRITES_STATE_FIELDS:
            names.append(name)
    return names


def _require(node: AgentNode, available: set[str], report: Report, sibling_writes: dict[str, str]) -> None:
    for field in node.agent_cls.REQUIRED_STATE_FIELDS:
        if field in available:
            continue
        if field in sibling_writes:
            report(
                (*node.loc, "agent"),
                f"requires '{field}', which parallel sibling '{sibling_writes[field]}' writes at the same time; "
                f"move '{node.key}' after the parallel group",
            )
            continue
        writers = _writers_of(field)
        hint = f"; add a step with agent {' or '.join(repr(w) for w in writers)} before it" if writers else ""
        report((*node.loc, "agent"), f"requires '{field}', which no earlier step writes and no input provides{hint}")


def _validate_reads_provided(plan: Plan, report: Report) -> None:
    available: set[str] = set(plan.inputs)

    def walk(step: AgentNode | ParallelNode | LoopNode) -> None:
        if isinstance(step, AgentNode):
            _require(step, available, report, {})
            available.update(step.writes)
        elif isinstance(step, ParallelNode):
            writes = {f: n.key for n in step.nodes for f in n.writes}
            for n in step.nodes:
                own = {f: k for f, k in writes.items() if k != n.key}
                _require(n, available, report, own)
            for n in step.nodes:
                available.update(n.writes)
        else:
            for inner in step.steps:
                walk(inner)
            if step.on_exhausted is not None:
                walk(step.on_exhausted)

    for step in plan.steps:
        walk(step)


def _parallel_groups(plan: Plan) -> list[ParallelNode]:
    groups = []
    for step in plan.steps:
        if isinstance(step, ParallelNode):
            groups.append(step)
        elif isinstance(step, LoopNode):
            groups.extend(s for s in step.steps if isinstance(s, ParallelNode))
    return groups


def _validate_parallel_groups(plan: Plan, report: Report) -> None:
    for group in _parallel_groups(plan):
        owner: dict[str, str] = {}
        for node in group.nodes:
            for field in sorted(node.writes):
                if field in owner:
                    report(
                        (*node.loc, "agent"),
                        f"writes '{field}', which parallel sibling '{owner[field]}' also writes; "
                        f"parallel steps must write disjoint fields (run them one after the other)",
                    )
                else:
                    owner[field] = node.key


def _validate_loops_have_critique(plan: Plan, report: Report) -> None:
    for step in plan.steps:
        if not isinstance(step, LoopNode) or step.kind != "critique_loop":
            continue
        members = [n for s in step.steps for n in ((s,) if isinstance(s, AgentNode) else s.nodes)]
        if not any(n.agent_cls.IS_CRITIQUE or "critique_history" in n.writes for n in members):
            report(
                (*step.loc, "critique_loop"),
                "critique_loop: has no critique agent, so it could never decide to stop or iterate",
            )


def _validate_status_order(plan: Plan, report: Report) -> None:
    current = JobStatus.FETCHING_DATA

    def move(step: AgentNode | ParallelNode, state: JobStatus) -> JobStatus:
        target = step.status
        if target != state and not is_legal_transition(state, target):
            where = step.loc if isinstance(step, ParallelNode) else (*step.loc, "agent")
            report(
                where,
                f"runs in phase {target.name} after a step in phase {state.name}; the job's phases only move "
                f"forward (see JobStatus), so move this step earlier",
            )
            return state
        return target

    for step in plan.steps:
        if isinstance(step, LoopNode):
            for inner in step.steps:
                current = move(inner, current)
            if step.steps and current == JobStatus.CRITIQUE_REVIEW:
                first = step.steps[0]
                if not is_legal_transition(JobStatus.ITERATING, first.status):
                    report(first.loc, f"a critique loop cannot restart in phase {first.status.name}")
            elif (
                step.steps
                and current != step.steps[0].status
                and not is_legal_transition(current, step.steps[0].status)
            ):
                report(step.steps[0].loc, f"a loop cannot restart in phase {step.steps[0].status.name}")
            if step.on_exhausted is not None:
                move(step.on_exhausted, current)  # the run ends after it: the phase goes no further
        else:
            current = move(step, current)
