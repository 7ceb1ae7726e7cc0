"""The error step: the code failed on every attempt; say so plainly, keep every attempt."""

from __future__ import annotations

from whyflow.ask.answering import error_answer
from whyflow.ask.state import AskState
from whyflow.ask.view import AskView
from whyflow.core.agent import Agent, AgentContext, AgentParams, AgentResult
from whyflow.core.status import JobStatus

__all__ = ["ErrorReporterAgent"]


class ErrorReporterAgent(Agent[AgentParams]):
    """Writes the error answer after the code loop is exhausted (no model needed)."""

    NAME = "error_reporter"
    DESCRIPTION = "report that the code failed on every attempt, with the last error"
    STATE_MODEL = AskState
    REQUIRED_STATE_FIELDS = ("question",)
    OPTIONAL_STATE_FIELDS = ("attempts", "error", "code", "failed_attempts", "plan")
    WRITES_STATE_FIELDS = ("explanation", "final_output")
    JOB_STATUS = JobStatus.GENERATING_NOTEBOOK
    PROGRESS_WEIGHT = 0.5

    def run(self, view: AskView, params: AgentParams, ctx: AgentContext) -> AgentResult:
        final = error_answer(view.attempts, view.error, view.code, list(view.failed_attempts), view.plan)
        return AgentResult(updates={"explanation": final.answer, "final_output": final}, summary=final.answer[:160])
