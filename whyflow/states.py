"""Every family's state model, by the name a recipe's ``state:`` gives it.

The one place that knows both families' states: the runner and the recipe loader use it; the
families themselves never import each other.
"""

from __future__ import annotations

from whyflow.ask.state import AskState
from whyflow.causal.state import AnalysisState
from whyflow.core.job import JobLifecycle

__all__ = ["STATE_MODELS", "JobState", "state_model_name"]

JobState = AnalysisState | AskState
"""Any state the runner can run a recipe on."""

STATE_MODELS: dict[str, type[JobLifecycle]] = {"analysis": AnalysisState, "ask": AskState}
"""The state models a recipe's ``state:`` may name."""


def state_model_name(model: type[JobLifecycle]) -> str:
    """The recipe name of a state model (``analysis``, ``ask``)."""
    for name, cls in STATE_MODELS.items():
        if cls is model:
            return name
    return model.__name__
