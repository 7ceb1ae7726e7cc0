"""Exceptions raised by agents and the state they work on, one class per failure mode."""

from __future__ import annotations

__all__ = [
    "WhyflowError",
    "ContractViolation",
    "MissingStateField",
    "IllegalTransition",
    "AgentRegistrationError",
    "DataError",
    "AgentError",
    "MissingPair",
]


class WhyflowError(Exception):
    """Base class of every error whyflow raises on purpose."""


class ContractViolation(WhyflowError):
    """An agent read or wrote a state field outside its declared contract."""

    def __init__(self, agent: str, field: str, kind: str, allowed: list[str] | tuple[str, ...]) -> None:
        self.agent = agent
        self.field = field
        self.kind = kind
        self.allowed = tuple(allowed)
        verb = "wrote" if kind == "write" else "read"
        super().__init__(
            f"agent '{agent}' {verb} state field '{field}', which is not in its declared "
            f"{'WRITES_STATE_FIELDS' if kind == 'write' else 'reads'} ({', '.join(self.allowed) or 'none'})"
        )


class MissingStateField(WhyflowError):
    """A field an agent requires was empty when the agent was dispatched."""

    def __init__(self, agent: str, field: str) -> None:
        self.agent = agent
        self.field = field
        super().__init__(
            f"agent '{agent}' requires state field '{field}', but it is empty at dispatch (no earlier step wrote it)"
        )


class IllegalTransition(WhyflowError):
    """A job status change that the JobStatus diagram does not allow."""

    def __init__(self, current: str, target: str) -> None:
        self.current = current
        self.target = target
        super().__init__(f"illegal job status transition {current} -> {target}")


class AgentRegistrationError(WhyflowError):
    """An agent class whose declared contract is malformed."""


class DataError(WhyflowError):
    """The input data cannot be used as given (missing file, bad format, wrong column)."""


class AgentError(WhyflowError):
    """An agent could not do its job for a reason it can explain to the user."""


class MissingPair(AgentError):
    """No treatment/outcome pair is set and none can be inferred (the one wording of this error)."""

    def __init__(self, purpose: str = "") -> None:
        what = f" to {purpose}" if purpose else ""
        super().__init__(
            f"no treatment/outcome pair{what}: give --treatment and --outcome (the data profile suggested no candidates)"
        )
