"""The state every agent shares and the contract every agent follows."""

from agents.base.agent import Agent, AgentContext, AgentParams, AgentResult
from agents.base.errors import AgentError, ContractViolation, DataError, MissingStateField
from agents.base.state import AnalysisState, JobStatus
from agents.base.view import StateView

__all__ = [
    "Agent",
    "AgentContext",
    "AgentError",
    "AgentParams",
    "AgentResult",
    "AnalysisState",
    "ContractViolation",
    "DataError",
    "JobStatus",
    "MissingStateField",
    "StateView",
]
