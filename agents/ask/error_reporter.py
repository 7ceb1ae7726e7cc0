"""001's error node: the code failed on every attempt; say so plainly, keep every attempt."""

from __future__ import annotations

from agents.base.agent import Agent, AgentContext, AgentParams, AgentResult
from agents.base.ask_state import AskState, FinalOutput
from agents.base.state import JobStatus
from agents.base.view import StateView

__all__ = ["ErrorReporterAgent"]


class ErrorReporterAgent(Agent):
    """Writes the error answer after the code loop is exhausted (no model needed)."""

    NAME = "error_reporter"
    DESCRIPTION = "report that the code failed on every attempt, with the last error"
    STATE_MODEL = AskState
    REQUIRED_STATE_FIELDS = ("question",)
    OPTIONAL_STATE_FIELDS = ("attempts", "error", "code", "failed_attempts", "plan")
    WRITES_STATE_FIELDS = ("explanation", "final_output")
    JOB_STATUS = JobStatus.GENERATING_NOTEBOOK
    PROGRESS_WEIGHT = 0.5

    def run(self, view: StateView, params: AgentParams, ctx: AgentContext) -> AgentResult:
        error = (view.error or "unknown error").strip()
        last = error.splitlines()[0] if error else "unknown error"
        answer = f"Code execution failed after {view.attempts} attempts. Final error: {last}"
        final = FinalOutput(
            answer=answer,
            confidence=0.0,
            output_type="error",
            result={"error": error, "failed_attempts": [a.model_dump() for a in view.failed_attempts]},
            code=view.code,
            caveats=["no answer was computed; nothing here is a result"],
            reasoning_trace=[f"attempt {a.attempt}: {a.error.splitlines()[0][:200]}" for a in view.failed_attempts],
            examples=list(view.plan.closest_examples) if view.plan else [],
        )
        return AgentResult(updates={"explanation": answer, "final_output": final}, summary=answer[:160])
