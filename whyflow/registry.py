"""Agent name -> class: the built-in agents plus the ``whyflow.agents`` entry-point group.

Built-ins are listed by import path and imported only when looked up, so listing names or
validating a recipe never imports the statistics stack. A third-party package registers an
agent with::

    [project.entry-points."whyflow.agents"]
    my_agent = "my_package.agents:MyAgent"

Every class's contract is checked when it is registered (:func:`whyflow.core.agent.check_contract`).
"""

from __future__ import annotations

import difflib
import importlib
from importlib.metadata import entry_points
from typing import TYPE_CHECKING

from whyflow.core.errors import AgentRegistrationError

if TYPE_CHECKING:
    from whyflow.core.agent import Agent

__all__ = ["BUILTIN_AGENTS", "ENTRY_POINT_GROUP", "Registry", "UnknownAgent", "default_registry"]

ENTRY_POINT_GROUP = "whyflow.agents"

BUILTIN_AGENTS: dict[str, str] = {
    "data_profiler": "whyflow.causal.dataprep.data_profiler:DataProfilerAgent",
    "domain_knowledge": "whyflow.causal.dataprep.domain_knowledge:DomainKnowledgeAgent",
    "data_repair": "whyflow.causal.dataprep.data_repair:DataRepairAgent",
    "eda_agent": "whyflow.causal.dataprep.eda_agent:EDAAgent",
    "causal_discovery": "whyflow.causal.discovery.causal_discovery:CausalDiscoveryAgent",
    "dag_expert": "whyflow.causal.discovery.dag_expert:DAGExpertAgent",
    "confounder_discovery": "whyflow.causal.discovery.confounder_discovery:ConfounderDiscoveryAgent",
    "ps_diagnostics": "whyflow.causal.estimation.ps_diagnostics:PSDiagnosticsAgent",
    "effect_estimator": "whyflow.causal.estimation.effect_estimator:EffectEstimatorAgent",
    "effect_estimator_react": "whyflow.causal.estimation.effect_estimator_react:EffectEstimatorReActAgent",
    "sensitivity_analyst": "whyflow.causal.review.sensitivity_analyst:SensitivityAnalystAgent",
    "critique": "whyflow.causal.review.critique:CritiqueAgent",
    "orchestrator": "whyflow.causal.report.orchestrator:OrchestratorAgent",
    "notebook_generator": "whyflow.causal.report.notebook_generator:NotebookGeneratorAgent",
    # Ask the data, on AskState.
    "question_planner": "whyflow.ask.question_planner:QuestionPlannerAgent",
    "code_writer": "whyflow.ask.code_writer:CodeWriterAgent",
    "code_runner": "whyflow.ask.code_runner:CodeRunnerAgent",
    "result_evaluator": "whyflow.ask.result_evaluator:ResultEvaluatorAgent",
    "explainer": "whyflow.ask.explainer:ExplainerAgent",
    "error_reporter": "whyflow.ask.error_reporter:ErrorReporterAgent",
    "causal_runner": "whyflow.ask.causal_runner:CausalRunnerAgent",
    # Ask the data with a ReAct loop (seeds 002-004), on AskState.
    "data_scientist": "whyflow.ask.data_scientist:DataScientistAgent",
    "auto_analyst": "whyflow.ask.auto_analyst:AutoAnalystAgent",
}


class UnknownAgent(AgentRegistrationError):
    """A recipe named an agent that no built-in or plug-in provides."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.suggestions = difflib.get_close_matches(name, known, n=1)
        hint = f" (did you mean '{self.suggestions[0]}'?)" if self.suggestions else ""
        super().__init__(f"unknown agent '{name}'{hint}")


def _load(target: str) -> type[Agent]:
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attr)  # type: ignore[no-any-return]


class Registry:
    """Resolves agent names to checked agent classes; lazy for built-ins and entry points."""

    def __init__(self, targets: dict[str, str] | None = None, *, use_entry_points: bool = True) -> None:
        self._targets: dict[str, str] = dict(BUILTIN_AGENTS if targets is None else targets)
        self._classes: dict[str, type[Agent]] = {}
        if use_entry_points:
            for ep in entry_points(group=ENTRY_POINT_GROUP):
                self._targets.setdefault(ep.name, ep.value)

    def names(self) -> list[str]:
        """Every registered agent name, sorted."""
        return sorted(set(self._targets) | set(self._classes))

    def register(self, cls: type[Agent]) -> type[Agent]:
        """Register a class directly (checks its contract); usable as a decorator."""
        from whyflow.core.agent import check_contract

        check_contract(cls)
        self._classes[cls.NAME] = cls
        return cls

    def __contains__(self, name: object) -> bool:
        return name in self._targets or name in self._classes

    def get(self, name: str) -> type[Agent]:
        """The agent class for ``name``; raises :class:`UnknownAgent` or a registration error."""
        if name in self._classes:
            return self._classes[name]
        if name not in self._targets:
            raise UnknownAgent(name, self.names())
        target = self._targets[name]
        try:
            cls = _load(target)
        except (ImportError, AttributeError) as exc:
            raise AgentRegistrationError(
                f"agent '{name}' points at '{target}', which cannot be imported: {exc}"
            ) from exc
        from whyflow.core.agent import check_contract

        check_contract(cls)
        if cls.NAME != name:
            raise AgentRegistrationError(f"agent registered as '{name}' declares NAME = '{cls.NAME}'")
        self._classes[name] = cls
        return cls


_DEFAULT: Registry | None = None


def default_registry() -> Registry:
    """The process-wide registry of built-ins and installed plug-ins (built once)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Registry()
    return _DEFAULT
