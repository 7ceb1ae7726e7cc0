"""Resolve a recipe spec into a plan of agent nodes (phase two), collecting every problem.

Agent names resolve through the registry, ``with:`` parameters are validated against each
agent's Params model, and per-step ``reads:``/``writes:`` must agree with (or narrow) the
agent's contract. Graph-wide rules live in :mod:`flows.validate`; :func:`build_plan` runs both
and raises one :class:`RecipeValidationError` listing every problem.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agents.base.agent import STATE_FIELDS, Agent, AgentParams
from agents.base.errors import AgentRegistrationError
from agents.base.registry import Registry, UnknownAgent, default_registry
from agents.base.state import JobStatus
from flows.errors import RecipeIssue, RecipeValidationError
from flows.recipe import (
    AgentStepSpec,
    CritiqueLoopStepSpec,
    ParallelStepSpec,
    RecipeSpec,
    Settings,
    issues_from_validation_error,
    load_recipe,
    step_label,
)
from flows.yamlload import locate

__all__ = ["AgentNode", "ParallelNode", "LoopNode", "Plan", "build_plan", "load_plan"]


@dataclass(frozen=True)
class AgentNode:
    """One resolved agent step."""

    key: str
    agent_cls: type[Agent]
    params: AgentParams
    reads: frozenset[str]
    writes: frozenset[str]
    retries: int
    loc: tuple[Any, ...]

    @property
    def name(self) -> str:
        """The agent's registered name (the Prefect task name)."""
        return self.agent_cls.NAME

    @property
    def status(self) -> JobStatus:
        """The job status while this agent runs."""
        return self.agent_cls.JOB_STATUS

    @property
    def weight(self) -> float:
        """The agent's share of the run's progress."""
        return float(self.agent_cls.PROGRESS_WEIGHT)


@dataclass(frozen=True)
class ParallelNode:
    """Agents dispatched concurrently on independent views."""

    nodes: tuple[AgentNode, ...]
    loc: tuple[Any, ...]

    @property
    def status(self) -> JobStatus:
        """The latest phase among the members (the job is in all of them at once)."""
        order = list(JobStatus)
        return max((n.status for n in self.nodes), key=order.index)


@dataclass(frozen=True)
class LoopNode:
    """A critique loop: its steps repeat until APPROVE, REJECT or ``max_iterations`` rounds."""

    steps: tuple[AgentNode | ParallelNode, ...]
    max_iterations: int
    loc: tuple[Any, ...]


Node = AgentNode | ParallelNode | LoopNode


@dataclass(frozen=True)
class Plan:
    """A validated recipe, ready to compile into a Prefect flow."""

    name: str
    description: str
    source: str
    inputs: frozenset[str]
    settings: Settings
    steps: tuple[Node, ...]
    spec: RecipeSpec = field(repr=False)

    def agent_nodes(self) -> list[AgentNode]:
        """Every agent node in order, flattening groups and loops."""
        out: list[AgentNode] = []
        for step in self.steps:
            out.extend(_flatten(step))
        return out

    @property
    def total_weight(self) -> float:
        """The sum of PROGRESS_WEIGHT over the plan (loop steps counted once)."""
        return sum(n.weight for n in self.agent_nodes())


def _flatten(node: Node) -> list[AgentNode]:
    if isinstance(node, AgentNode):
        return [node]
    if isinstance(node, ParallelNode):
        return list(node.nodes)
    return [n for s in node.steps for n in _flatten(s)]


class _Resolver:
    """Turns step specs into nodes while collecting located issues."""

    def __init__(self, path: str, document: Any, registry: Registry) -> None:
        self.path = path
        self.document = document
        self.registry = registry
        self.issues: list[RecipeIssue] = []

    def issue(self, loc: tuple[Any, ...], message: str) -> None:
        pos = locate(self.document, loc)
        self.issues.append(
            RecipeIssue(
                self.path, pos[0] if pos else None, pos[1] if pos else None, step_label(self.document, loc), message
            )
        )

    def agent(self, spec: AgentStepSpec, loc: tuple[Any, ...], settings: Settings) -> AgentNode | None:
        try:
            cls = self.registry.get(spec.agent)
        except UnknownAgent as exc:
            self.issue((*loc, "agent"), f"agent: {exc}")
            return None
        except AgentRegistrationError as exc:
            self.issue((*loc, "agent"), f"agent: {exc}")
            return None
        try:
            params = cls.Params.model_validate(spec.with_)
        except ValidationError as exc:
            known = sorted(cls.Params.model_fields)
            for issue in issues_from_validation_error(self.path, self.document, exc, (*loc, "with"), known):
                self.issues.append(
                    RecipeIssue(issue.path, issue.line, issue.column, issue.where, f"with.{issue.message}")
                )
            params = cls.Params.model_construct()
        reads = self._fields(spec.reads, loc, "reads", cls.reads(), cls)
        writes = self._fields(spec.writes, loc, "writes", frozenset(cls.WRITES_STATE_FIELDS), cls)
        if spec.reads is not None:
            for required in cls.REQUIRED_STATE_FIELDS:
                if required not in reads:
                    self.issue((*loc, "reads"), f"reads: must include '{required}', which agent '{cls.NAME}' requires")
        retries = spec.retries if spec.retries is not None else settings.retries
        return AgentNode(spec.key, cls, params, reads, writes, retries, loc)

    def _fields(
        self,
        declared: tuple[str, ...] | None,
        loc: tuple[Any, ...],
        key: str,
        allowed: frozenset[str],
        cls: type[Agent],
    ) -> frozenset[str]:
        if declared is None:
            return allowed
        good = set()
        for i, name in enumerate(declared):
            if name not in STATE_FIELDS:
                close = difflib.get_close_matches(name, sorted(STATE_FIELDS), n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
                self.issue((*loc, key, i), f"{key}: '{name}' is not a state field{hint}")
            elif name not in allowed:
                contract = "WRITES_STATE_FIELDS" if key == "writes" else "reads"
                self.issue(
                    (*loc, key, i),
                    f"{key}: '{name}' is not in agent '{cls.NAME}' {contract} ({', '.join(sorted(allowed - {'job_id'}))}); "
                    f"a step may only narrow its agent's contract",
                )
            else:
                good.add(name)
        return frozenset(good)

    def step(self, spec: Any, loc: tuple[Any, ...], settings: Settings) -> Node | None:
        if isinstance(spec, AgentStepSpec):
            return self.agent(spec, loc, settings)
        if isinstance(spec, ParallelStepSpec):
            members = [self.agent(s, (*loc, "parallel", i), settings) for i, s in enumerate(spec.parallel)]
            if any(m is None for m in members):
                return None
            return ParallelNode(tuple(m for m in members if m is not None), loc)
        assert isinstance(spec, CritiqueLoopStepSpec)
        body = spec.critique_loop
        inner = [self.step(s, (*loc, "critique_loop", "steps", i), settings) for i, s in enumerate(body.steps)]
        if any(n is None for n in inner):
            return None
        limit = body.max_iterations or settings.max_iterations
        return LoopNode(tuple(n for n in inner if isinstance(n, (AgentNode, ParallelNode))), limit, loc)


def build_plan(spec: RecipeSpec, document: Any, path: str | Path, registry: Registry | None = None) -> Plan:
    """Resolve and validate ``spec``; raise :class:`RecipeValidationError` with every problem."""
    from flows.validate import validate_plan

    p = str(path)
    resolver = _Resolver(p, document, registry or default_registry())
    for i, name in enumerate(spec.inputs):
        if name not in STATE_FIELDS:
            close = difflib.get_close_matches(name, sorted(STATE_FIELDS), n=1)
            resolver.issue(
                ("inputs", i),
                f"inputs: '{name}' is not a state field" + (f" (did you mean '{close[0]}'?)" if close else ""),
            )
    nodes = [resolver.step(s, ("steps", i), spec.settings) for i, s in enumerate(spec.steps)]
    plan = Plan(
        name=spec.name,
        description=spec.description,
        source=p,
        inputs=frozenset(spec.inputs) | {"job_id", "dataset_info"},
        settings=spec.settings,
        steps=tuple(n for n in nodes if n is not None),
        spec=spec,
    )
    if None not in nodes:
        validate_plan(plan, resolver.issue)
    if resolver.issues:
        raise RecipeValidationError(p, resolver.issues)
    return plan


def _step_issues(path: str, document: Any, registry: Registry) -> list[RecipeIssue]:
    """Resolve each step that is well-formed on its own, to report its agent problems too."""
    from pydantic import TypeAdapter

    from flows.recipe import Step

    resolver = _Resolver(path, document, registry)
    steps = document.get("steps") if isinstance(document, dict) else None
    if not isinstance(steps, list):
        return []
    settings = Settings()
    adapter: TypeAdapter[Any] = TypeAdapter(Step)
    for i, raw in enumerate(steps):
        try:
            spec = adapter.validate_python(raw)
        except ValidationError:
            continue
        resolver.step(spec, ("steps", i), settings)
    return resolver.issues


def load_plan(path: str | Path, overrides: dict[str, str] | None = None, registry: Registry | None = None) -> Plan:
    """Load, resolve and validate a recipe file into a :class:`Plan`.

    When the recipe's shape is wrong, the agent-level problems of its well-formed steps are
    reported in the same error, so one `whyflow validate` shows everything.
    """
    try:
        spec, document = load_recipe(path, overrides)
    except RecipeValidationError as exc:
        if exc.document is not None:
            extra = _step_issues(str(path), exc.document, registry or default_registry())
            known = {(i.line, i.message) for i in exc.issues}
            merged = exc.issues + [i for i in extra if (i.line, i.message) not in known]
            merged.sort(key=lambda i: (i.line or 0, i.column or 0))
            raise RecipeValidationError(exc.path, merged) from exc
        raise
    return build_plan(spec, document, path, registry)
