"""The resolved plan of a recipe: agent, parallel and loop nodes, and the :class:`Plan` itself.

These are the objects phase two (:mod:`whyflow.flows.recipes.plan`) builds, the graph rules
(:mod:`whyflow.flows.recipes.validate`) check, and the runner executes. They live apart from the resolver so
that the checks can be imported by it without importing it back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from whyflow.causal.state import AnalysisState
from whyflow.core.agent import Agent, AgentParams
from whyflow.core.status import JobStatus
from whyflow.flows.recipes.conditions import Condition, parse_condition
from whyflow.flows.recipes.recipe import RecipeSpec, Settings

__all__ = ["AgentNode", "ParallelNode", "LoopNode", "Node", "Plan", "CRITIQUE_UNTIL"]


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
    when: Condition | None = None

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


CRITIQUE_UNTIL = 'critique_history[-1].decision != "ITERATE"'
"""A critique loop's exit: the latest critique did not ask for another round."""


@dataclass(frozen=True)
class LoopNode:
    """Steps repeated until ``until`` holds or ``max_iterations`` rounds have run.

    A ``critique_loop:`` is the case ``until = CRITIQUE_UNTIL`` (APPROVE or REJECT ends it). A
    ``loop:`` names its own condition and may name an ``on_exhausted`` step, which runs when the
    rounds are spent with the condition still false, and ends the run.
    """

    steps: tuple[AgentNode | ParallelNode, ...]
    max_iterations: int
    loc: tuple[Any, ...]
    until: Condition = field(default_factory=lambda: parse_condition(CRITIQUE_UNTIL))
    on_exhausted: AgentNode | None = None
    kind: str = "critique_loop"
    when: Condition | None = None


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
    state_model: type[BaseModel] = AnalysisState

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
    exhausted = [node.on_exhausted] if node.on_exhausted is not None else []
    return [n for s in node.steps for n in _flatten(s)] + exhausted
