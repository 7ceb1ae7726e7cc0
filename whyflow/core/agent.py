"""The agent contract: declared reads, writes, status, progress weight and typed parameters.

An agent is a small class. It never sees the job's state (its family's model); it gets a read-only
:class:`StateView` of the fields it declared, its validated parameters and an
:class:`AgentContext`, and returns an :class:`AgentResult` whose ``updates`` may name only its
WRITES_STATE_FIELDS. The runner checks, applies and persists the update.

Example::

    class MyParams(AgentParams):
        limit: int = Field(3, ge=1, description="recommendations at most")

    class MyAgent(Agent[MyParams]):
        STATE_MODEL = AnalysisState
        NAME = "my_agent"
        REQUIRED_STATE_FIELDS = ("data_profile",)
        WRITES_STATE_FIELDS = ("recommendations",)
        JOB_STATUS = JobStatus.CRITIQUE_REVIEW
        Params = MyParams

        def run(self, view: StateView, params: MyParams, ctx: AgentContext) -> AgentResult:
            return AgentResult(updates={"recommendations": ["..."]}, summary="1 recommendation")

``Agent`` is generic over its parameters, so ``run`` sees the agent's own model (no casts); the
runner validates the step's ``with:`` against ``Params`` when the recipe loads. Every numeric
option carries a bound (``Field(ge=..., le=...)``) so a nonsensical value is a load-time error.
A plug-in may subclass plain ``Agent`` (its ``run`` then takes any ``AgentParams``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar, get_args, get_origin

from pydantic import BaseModel, ConfigDict

from whyflow.core.errors import AgentRegistrationError
from whyflow.core.job import JobLifecycle
from whyflow.core.status import JobStatus

__all__ = [
    "Agent",
    "AgentContext",
    "AgentParams",
    "AgentResult",
    "check_contract",
    "always_readable_of",
    "input_fields_of",
    "params_model_of",
    "runner_fields_of",
    "state_fields_of",
]


def state_fields_of(model: type[BaseModel]) -> frozenset[str]:
    """Every field of a state model (AnalysisState, AskState)."""
    return frozenset(model.model_fields)


def runner_fields_of(model: type[JobLifecycle]) -> frozenset[str]:
    """The fields of a state model only the runner writes."""
    return model.RUNNER_FIELDS


def always_readable_of(model: type[JobLifecycle]) -> frozenset[str]:
    """Context every agent on this state model may read without declaring it."""
    return model.ALWAYS_READABLE


def input_fields_of(model: type[JobLifecycle]) -> frozenset[str]:
    """Fields a new job of this state model starts with (besides a recipe's ``inputs``)."""
    return model.INPUT_FIELDS


class AgentParams(BaseModel):
    """Base of an agent's ``with:`` parameters: unknown keys are errors, values are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True)
class AgentContext:
    """What an agent may use besides the state: its folders, seed, logger and LLM client."""

    job_dir: Path
    step: str
    seed: int = 0
    iteration: int = 0
    logger: logging.Logger = field(default_factory=lambda: logging.getLogger("whyflow.agent"))
    llm: Any = None
    run_recipe: Any = None
    """``run_recipe(recipe, data, output, treatment=None, outcome=None) -> dict``: run another recipe
    as a nested job (set by the runner; agents cannot import flows). The ask agents use it to
    answer a causal question with whyflow/recipes/causal_analysis.yaml."""

    @property
    def data_dir(self) -> Path:
        """Folder for derived data (the user's file is never written)."""
        path = self.job_dir / "data"
        path.mkdir(parents=True, exist_ok=True)
        return path

    @property
    def plots_dir(self) -> Path:
        """Folder for figures."""
        path = self.job_dir / "plots"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def progress(self, message: str) -> None:
        """Report progress on long work (shown in the CLI and the Prefect logs)."""
        self.logger.info("%s: %s", self.step, message)


@dataclass
class AgentResult:
    """What an agent returns: field updates plus what its trace should say."""

    updates: dict[str, Any]
    summary: str = ""
    reasoning: str = ""
    action: str = "run"
    outputs: dict[str, Any] = field(default_factory=dict)
    tools_called: list[str] = field(default_factory=list)
    token_usage: dict[str, int] = field(default_factory=dict)


P = TypeVar("P", bound=AgentParams)
"""An agent's parameter model: ``class MyAgent(Agent[MyParams])`` types ``run``'s ``params``."""


class Agent(Generic[P]):
    """Base class of every agent; subclasses declare their contract as class attributes.

    ``Params`` is the model the step's ``with:`` is validated against (the same class as ``P``).
    """

    NAME: ClassVar[str] = ""
    DESCRIPTION: ClassVar[str] = ""
    REQUIRED_STATE_FIELDS: ClassVar[tuple[str, ...]] = ()
    OPTIONAL_STATE_FIELDS: ClassVar[tuple[str, ...]] = ()
    WRITES_STATE_FIELDS: ClassVar[tuple[str, ...]] = ()
    JOB_STATUS: ClassVar[JobStatus] = JobStatus.PROFILING
    PROGRESS_WEIGHT: ClassVar[float] = 1.0
    IS_CRITIQUE: ClassVar[bool] = False
    STATE_MODEL: ClassVar[type[JobLifecycle]]
    """The state the agent works on: its family's model (``whyflow.causal.state.AnalysisState``,
    ``whyflow.ask.state.AskState``). Every agent names it; the contract check says so when one does not."""
    PRELOAD_MODULES: ClassVar[tuple[str, ...]] = ()
    """Heavy modules the runner imports in the flow's thread before a parallel group starts:
    two threads importing the same library for the first time can deadlock on its module locks."""
    Params: ClassVar[type[AgentParams]] = AgentParams

    @classmethod
    def reads(cls) -> frozenset[str]:
        """Every field the agent may read: required, optional and the always-readable context."""
        always = always_readable_of(cls.STATE_MODEL)
        return frozenset(cls.REQUIRED_STATE_FIELDS) | frozenset(cls.OPTIONAL_STATE_FIELDS) | always

    @classmethod
    def warm_up(cls, params: P, job_dir: Path) -> Callable[[], None] | None:
        """Start, when the run starts, slow preparation that does not depend on the state.

        For example the notebook's kernel, which then boots on a core the analysis leaves idle.
        Returns what releases it if the agent never uses it (the runner calls that when the run
        ends), or ``None`` for nothing started. Default: nothing.
        """
        return None

    def run(self, view: Any, params: P, ctx: AgentContext) -> AgentResult:
        """Do the agent's work and return the update; never mutate ``view``.

        ``view`` is a :class:`StateView`. An agent annotates it with its family's typed view
        (``whyflow.causal.view.AnalysisView``, ``whyflow.ask.view.AskView``), so the type checker
        knows the type of every field it reads.
        """
        raise NotImplementedError


def params_model_of(cls: type[Agent[Any]]) -> type[AgentParams] | None:
    """The model an agent class is generic over (``Agent[P]``), or None for a plain ``Agent``."""
    for klass in cls.__mro__:
        for base in getattr(klass, "__orig_bases__", ()):
            if get_origin(base) is Agent:
                arg = get_args(base)[0]
                return arg if isinstance(arg, type) and issubclass(arg, AgentParams) else None
    return None


def check_contract(cls: type[Agent[Any]]) -> None:
    """Raise :class:`AgentRegistrationError` listing every problem in an agent's declaration."""
    problems: list[str] = []
    name = getattr(cls, "NAME", "") or cls.__name__
    if not (isinstance(cls, type) and issubclass(cls, Agent)):
        raise AgentRegistrationError(f"{cls!r} is not a subclass of whyflow.core.agent.Agent")
    if not cls.NAME or not cls.NAME.isidentifier():
        problems.append(f"NAME must be a non-empty identifier, got {cls.NAME!r}")
    model = getattr(cls, "STATE_MODEL", None)
    if not (isinstance(model, type) and issubclass(model, JobLifecycle)):
        problems.append(
            "STATE_MODEL must name the state the agent works on (whyflow.causal.state.AnalysisState or "
            f"whyflow.ask.state.AskState), got {model!r}"
        )
        model = None
    fields = state_fields_of(model) if model is not None else None
    runner = runner_fields_of(model) if model is not None else frozenset()
    for attr in ("REQUIRED_STATE_FIELDS", "OPTIONAL_STATE_FIELDS", "WRITES_STATE_FIELDS"):
        value = getattr(cls, attr)
        if not isinstance(value, (tuple, list, frozenset, set)):
            problems.append(f"{attr} must be a tuple of field names")
            continue
        for f in value:
            if model is not None and fields is not None and f not in fields:
                problems.append(f"{attr} names '{f}', which is not an {model.__name__} field")
    for f in cls.WRITES_STATE_FIELDS:
        if f in runner:
            problems.append(f"WRITES_STATE_FIELDS names '{f}', which only the runner may write")
    if not cls.WRITES_STATE_FIELDS:
        problems.append("WRITES_STATE_FIELDS is empty: an agent must write something")
    if (
        not isinstance(cls.JOB_STATUS, JobStatus)
        or cls.JOB_STATUS.is_terminal
        or cls.JOB_STATUS
        in (
            JobStatus.PENDING,
            JobStatus.CANCELLING,
            JobStatus.ITERATING,
        )
    ):
        problems.append(f"JOB_STATUS must be a working JobStatus, got {cls.JOB_STATUS!r}")
    if not isinstance(cls.PROGRESS_WEIGHT, (int, float)) or cls.PROGRESS_WEIGHT <= 0:
        problems.append(f"PROGRESS_WEIGHT must be a positive number, got {cls.PROGRESS_WEIGHT!r}")
    if not all(isinstance(m, str) for m in cls.PRELOAD_MODULES):
        problems.append("PRELOAD_MODULES must be a tuple of module names")
    if not (isinstance(cls.Params, type) and issubclass(cls.Params, AgentParams)):
        problems.append("Params must subclass whyflow.core.agent.AgentParams")
    elif (generic := params_model_of(cls)) is not None and not issubclass(cls.Params, generic):
        problems.append(
            f"Params is {cls.Params.__name__} but the class is Agent[{generic.__name__}]: set Params = {generic.__name__}"
        )
    if problems:
        raise AgentRegistrationError(f"agent '{name}' ({cls.__module__}.{cls.__qualname__}): " + "; ".join(problems))
