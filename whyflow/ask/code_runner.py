"""The code step, second half: run the round's code in the sandbox, record what happened.

Generated code runs only through :func:`whyflow.runtime.sandbox.run.run_code` (a child process with
limits and the best isolation available); each dataset is handed over by path under its view
name, and only data comes back. A failure is recorded as a failed attempt (code + error +
traceback) for the next round's writer; the loop's ``until: execution_success`` decides.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from whyflow.ask.state import AskState, FailedAttempt
from whyflow.ask.tools.analysis import kept_in_state
from whyflow.ask.view import AskView
from whyflow.core.agent import Agent, AgentContext, AgentParams, AgentResult
from whyflow.core.status import JobStatus
from whyflow.core.view import required

__all__ = ["CodeRunnerAgent", "CodeRunnerParams"]


class CodeRunnerParams(AgentParams):
    wall_seconds: float = Field(30.0, gt=0, description="seconds one sandboxed run may take")
    memory_mb: int = Field(2048, ge=256, description="memory of one sandboxed run, in MiB")


class CodeRunnerAgent(Agent[CodeRunnerParams]):
    """Runs the code in the sandbox; records the result or the failure."""

    NAME = "code_runner"
    DESCRIPTION = "run the code in the sandbox and record its result, or the error for the next attempt"
    STATE_MODEL = AskState
    REQUIRED_STATE_FIELDS = ("code", "datasets")
    OPTIONAL_STATE_FIELDS = ("attempts", "failed_attempts")
    WRITES_STATE_FIELDS = ("execution_result", "execution_success", "error", "attempts", "failed_attempts")
    JOB_STATUS = JobStatus.EXPLORATORY_ANALYSIS
    PROGRESS_WEIGHT = 2.0

    Params = CodeRunnerParams

    def run(self, view: AskView, params: CodeRunnerParams, ctx: AgentContext) -> AgentResult:
        from whyflow.runtime.sandbox.run import Limits, run_code

        inputs = {name: Path(ds.local_path) for name, ds in view.datasets.items()}
        limits = _limits(Limits, params)
        outcome = run_code(required(view.code, "code"), inputs, limits, figures_dir=ctx.plots_dir)
        record = kept_in_state(outcome)
        if record.ok and record.result is None and not record.figures:
            # Code that ran but answered nothing is a failed attempt: the next one is told why.
            record = record.model_copy(
                update={"ok": False, "error": "the code ran but set no `result` (assign the answer to `result`)"}
            )
        attempt = int(view.attempts) + 1
        updates: dict[str, Any] = {"execution_result": record, "execution_success": record.ok, "attempts": attempt}
        if record.ok:
            updates["error"] = None
            summary = f"attempt {attempt} ran in {record.wall_seconds:.2f}s: {record.result_kind}"
        else:
            error = record.error or "the code failed"
            detail = f"{error}\n{record.traceback}" if record.traceback else error
            updates["error"] = detail
            updates["failed_attempts"] = [
                *view.failed_attempts,
                FailedAttempt(attempt=attempt, code=view.code, error=detail),
            ]
            summary = f"attempt {attempt} failed: {error.splitlines()[-1] if error else 'error'}"[:200]
        summary += f" (sandbox: {', '.join(record.layers) or 'no layers reported'})"
        return AgentResult(updates=updates, summary=summary, tools_called=["sandbox.run_code"])


def _limits(limits_cls: Any, params: Any) -> Any:
    """The sandbox's Limits with this step's wall clock and memory, its other defaults kept."""
    return limits_cls(wall_seconds=params.wall_seconds, memory_bytes=int(params.memory_mb) * 1024**2)
