"""Resolve a recipe spec into a plan of agent nodes (phase two), collecting every problem.

Agent names resolve through the registry, ``with:`` parameters are validated against each
agent's Params model, and per-step ``reads:``/``writes:`` must agree with (or narrow) the
agent's contract. The node types live in :mod:`whyflow.flows.recipes.nodes` and the graph-wide rules in
:mod:`whyflow.flows.recipes.validate`; :func:`build_plan` resolves the steps, runs those rules and raises one
:class:`RecipeValidationError` listing every problem.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from whyflow.causal.state import AnalysisState
from whyflow.core.agent import Agent, input_fields_of, state_fields_of
from whyflow.core.errors import AgentRegistrationError
from whyflow.core.job import JobLifecycle
from whyflow.flows.errors import RecipeIssue, RecipeValidationError
from whyflow.flows.recipes.builtin import find_recipe
from whyflow.flows.recipes.conditions import Condition, ConditionError, check_condition, parse_condition
from whyflow.flows.recipes.nodes import AgentNode, LoopNode, Node, ParallelNode, Plan
from whyflow.flows.recipes.recipe import (
    AgentStepSpec,
    CritiqueLoopStepSpec,
    LoopStepSpec,
    ParallelStepSpec,
    RecipeSpec,
    Settings,
    issues_from_validation_error,
    load_recipe,
    step_label,
)
from whyflow.flows.recipes.validate import validate_plan
from whyflow.flows.recipes.yamlload import locate
from whyflow.registry import Registry, UnknownAgent, default_registry
from whyflow.states import STATE_MODELS, state_model_name

__all__ = ["build_plan", "load_plan"]


class _Resolver:
    """Turns step specs into nodes while collecting located issues."""

    def __init__(
        self, path: str, document: Any, registry: Registry, state_model: type[JobLifecycle] = AnalysisState
    ) -> None:
        self.path = path
        self.document = document
        self.registry = registry
        self.state_model = state_model
        self.fields = state_fields_of(state_model)
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
        if cls.STATE_MODEL is not self.state_model:
            self.issue(
                (*loc, "agent"),
                f"agent: '{cls.NAME}' works on the {state_model_name(cls.STATE_MODEL)} state, but this recipe "
                f"runs on the {state_model_name(self.state_model)} state (the recipe's 'state:')",
            )
            return None
        reads = self._fields(spec.reads, loc, "reads", cls.reads(), cls)
        writes = self._fields(spec.writes, loc, "writes", frozenset(cls.WRITES_STATE_FIELDS), cls)
        if spec.reads is not None:
            for required in cls.REQUIRED_STATE_FIELDS:
                if required not in reads:
                    self.issue((*loc, "reads"), f"reads: must include '{required}', which agent '{cls.NAME}' requires")
        retries = spec.retries if spec.retries is not None else settings.retries
        return AgentNode(spec.key, cls, params, reads, writes, retries, loc, self.condition(spec.when, (*loc, "when")))

    def condition(self, text: str | None, loc: tuple[Any, ...]) -> Condition | None:
        """Parse and check a ``when:``/``until:`` expression against the state model."""
        if text is None:
            return None
        try:
            condition = parse_condition(text)
            check_condition(condition, self.state_model)
        except ConditionError as exc:
            self.issue(loc, f"{loc[-1]}: {exc}")
            return None
        return condition

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
            if name not in self.fields:
                close = difflib.get_close_matches(name, sorted(self.fields), n=1)
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
        if isinstance(spec, LoopStepSpec):
            return self.loop(spec, loc, settings)
        assert isinstance(spec, CritiqueLoopStepSpec)
        body = spec.critique_loop
        inner = [self.step(s, (*loc, "critique_loop", "steps", i), settings) for i, s in enumerate(body.steps)]
        if any(n is None for n in inner):
            return None
        limit = body.max_iterations or settings.max_iterations
        return LoopNode(tuple(n for n in inner if isinstance(n, (AgentNode, ParallelNode))), limit, loc)

    def loop(self, spec: LoopStepSpec, loc: tuple[Any, ...], settings: Settings) -> LoopNode | None:
        """A general ``loop:`` with its exit condition, limit and optional ``on_exhausted`` step."""
        body = spec.loop
        inner = [self.step(s, (*loc, "loop", "steps", i), settings) for i, s in enumerate(body.steps)]
        until = self.condition(body.until, (*loc, "loop", "until"))
        when = self.condition(body.when, (*loc, "loop", "when"))
        exhausted = None
        if body.on_exhausted is not None:
            exhausted = self.agent(body.on_exhausted, (*loc, "loop", "on_exhausted"), settings)
            if exhausted is None:
                return None
        if any(n is None for n in inner) or until is None or (body.when is not None and when is None):
            return None
        limit = body.max_iterations or settings.max_iterations
        steps = tuple(n for n in inner if isinstance(n, (AgentNode, ParallelNode)))
        return LoopNode(steps, limit, loc, until, exhausted, "loop", when)


def build_plan(spec: RecipeSpec, document: Any, path: str | Path, registry: Registry | None = None) -> Plan:
    """Resolve and validate ``spec``; raise :class:`RecipeValidationError` with every problem."""
    p = str(path)
    model = STATE_MODELS[spec.state]
    resolver = _Resolver(p, document, registry or default_registry(), model)
    declared = spec.inputs if "inputs" in spec.model_fields_set or model is AnalysisState else ()
    for i, name in enumerate(declared):
        if name not in resolver.fields:
            close = difflib.get_close_matches(name, sorted(resolver.fields), n=1)
            resolver.issue(
                ("inputs", i),
                f"inputs: '{name}' is not a state field" + (f" (did you mean '{close[0]}'?)" if close else ""),
            )
    nodes = [resolver.step(s, ("steps", i), spec.settings) for i, s in enumerate(spec.steps)]
    plan = Plan(
        name=spec.name,
        description=spec.description,
        source=p,
        inputs=frozenset(declared) | input_fields_of(model),
        settings=spec.settings,
        steps=tuple(n for n in nodes if n is not None),
        spec=spec,
        state_model=model,
    )
    if None not in nodes:
        validate_plan(plan, resolver.issue)
    if resolver.issues:
        raise RecipeValidationError(p, resolver.issues)
    return plan


def _step_issues(path: str, document: Any, registry: Registry) -> list[RecipeIssue]:
    """Resolve each step that is well-formed on its own, to report its agent problems too."""
    from pydantic import TypeAdapter

    from whyflow.flows.recipes.recipe import Step

    state = document.get("state") if isinstance(document, dict) else None
    model = STATE_MODELS.get(state, AnalysisState) if isinstance(state, str) else AnalysisState
    resolver = _Resolver(path, document, registry, model)
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
    """Load, resolve and validate a recipe (a file, or a built-in recipe by name) into a :class:`Plan`.

    When the recipe's shape is wrong, the agent-level problems of its well-formed steps are
    reported in the same error, so one `whyflow validate` shows everything.
    """
    path = find_recipe(path)
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
