"""A read-only view of the state, holding its own deep copy, limited to declared reads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from whyflow.core.errors import AgentError, ContractViolation, MissingPair

if TYPE_CHECKING:
    from whyflow.core.job import JobLifecycle

__all__ = ["Pair", "StateView", "required"]

T = TypeVar("T")


def required(value: T | None, field: str) -> T:
    """A field the agent declares required, typed without ``None``.

    The runner dispatches an agent only when its required fields are set, so ``None`` here means
    the agent was called some other way; it fails with the field's name instead of an
    ``AttributeError`` on ``None`` further on.
    """
    if value is None:
        raise AgentError(f"state field '{field}' is empty, but the agent requires it")
    return value


@dataclass(frozen=True)
class Pair:
    """The treatment-outcome pair an agent works on, and how it was found (``note``, "" when set)."""

    treatment: str
    outcome: str
    note: str = ""


class StateView:
    """What an agent sees of the state.

    The view owns a deep copy taken at dispatch, so nothing an agent does to it can reach the
    job's state or a parallel sibling's view. Reading a field the agent did not declare raises
    :class:`ContractViolation`; assigning any attribute raises ``AttributeError``.
    """

    __slots__ = ("_agent", "_readable", "_snapshot")

    def __init__(self, state: JobLifecycle, agent: str, readable: frozenset[str]) -> None:
        object.__setattr__(self, "_snapshot", state.model_copy(deep=True))
        object.__setattr__(self, "_agent", agent)
        object.__setattr__(self, "_readable", readable)

    def __getattr__(self, name: str) -> Any:
        snapshot = object.__getattribute__(self, "_snapshot")
        if name not in type(snapshot).model_fields:
            raise AttributeError(f"{type(snapshot).__name__} has no field '{name}'")
        if name not in object.__getattribute__(self, "_readable"):
            raise ContractViolation(object.__getattribute__(self, "_agent"), name, "read", sorted(self._readable))
        return getattr(snapshot, name)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"the state view is read-only: return '{name}' in the agent's updates instead")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("the state view is read-only")

    def __getstate__(self) -> tuple[Any, str, frozenset[str]]:
        return (self._snapshot, self._agent, self._readable)

    def __setstate__(self, data: tuple[Any, str, frozenset[str]]) -> None:
        snapshot, agent, readable = data
        object.__setattr__(self, "_snapshot", snapshot)
        object.__setattr__(self, "_agent", agent)
        object.__setattr__(self, "_readable", readable)

    # The state's helpers, on the snapshot (pair resolution is the state's single rule).
    def get_primary_pair(self) -> tuple[str | None, str | None]:
        """The primary treatment-outcome pair, resolved by the state's one rule."""
        return self._snapshot.get_primary_pair()

    def pair(self, purpose: str = "") -> Pair:
        """The pair under study by the one rule every agent uses; :class:`MissingPair` if there is none.

        The state's rule first (the user's pair, the first analysed pair, the first estimate's),
        then the proposed DAG's pair and the profile's first candidates, each only when the agent
        declared that field among its reads; ``note`` says when a fallback was used.
        """
        found = self.maybe_pair()
        if found is None:
            raise MissingPair(purpose)
        return found

    def maybe_pair(self) -> Pair | None:
        """:meth:`pair`, or ``None`` when there is none (for agents that can work without one)."""
        t, y = self._snapshot.get_primary_pair()
        if t and y:
            return Pair(t, y)
        readable = object.__getattribute__(self, "_readable")
        dag = getattr(self._snapshot, "proposed_dag", None) if "proposed_dag" in readable else None
        if dag is not None and dag.treatment_variable and dag.outcome_variable:
            return Pair(dag.treatment_variable, dag.outcome_variable, "no pair was set: used the proposed DAG's pair")
        profile = getattr(self._snapshot, "data_profile", None) if "data_profile" in readable else None
        if profile is not None and profile.treatment_candidates and profile.outcome_candidates:
            return Pair(
                profile.treatment_candidates[0],
                profile.outcome_candidates[0],
                "no pair was set: used the profile's first treatment and outcome candidates",
            )
        return None

    def get_all_pairs(self) -> list[tuple[str, str]]:
        """Every distinct pair analysed so far."""
        return self._snapshot.get_all_pairs()

    def should_iterate(self) -> bool:
        """Whether the latest critique asks for another round within budget."""
        self.critique_history  # noqa: B018 - contract check
        return self._snapshot.should_iterate()

    def is_approved(self) -> bool:
        """Whether the latest critique approved."""
        self.critique_history  # noqa: B018 - contract check
        return self._snapshot.is_approved()

    def __repr__(self) -> str:
        return f"StateView(agent={self._agent!r}, job={self._snapshot.job_id!r})"
