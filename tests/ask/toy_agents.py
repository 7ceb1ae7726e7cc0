"""Small real agents on AskState, to drive the spine's conditions and loops without the sandbox.

Registered in a registry of the test's own (:func:`registry`), not as plug-ins.
"""

from __future__ import annotations

from pydantic import Field

from whyflow.ask.state import AskPlan, AskState, FinalOutput
from whyflow.core.agent import Agent, AgentContext, AgentParams, AgentResult
from whyflow.core.status import JobStatus
from whyflow.core.view import StateView
from whyflow.registry import Registry


class ToyAskPlannerParams(AgentParams):
    needs_code: bool = Field(True, description="whether the plan needs code")


class ToyAskPlanner(Agent[ToyAskPlannerParams]):
    """Writes a plan whose flags come from the step's parameters."""

    NAME = "toy_ask_planner"
    STATE_MODEL = AskState
    REQUIRED_STATE_FIELDS = ("question",)
    WRITES_STATE_FIELDS = ("plan",)
    JOB_STATUS = JobStatus.PROFILING

    Params = ToyAskPlannerParams

    def run(self, view: StateView, params: ToyAskPlannerParams, ctx: AgentContext) -> AgentResult:
        return AgentResult(updates={"plan": AskPlan(needs_code=params.needs_code)})


class ToyFlakyRunner(Agent):
    """Fails until attempt ``succeed_at`` (0: never), like code that needs fixing."""

    NAME = "toy_flaky_runner"
    STATE_MODEL = AskState
    REQUIRED_STATE_FIELDS = ("plan",)
    OPTIONAL_STATE_FIELDS = ("attempts",)
    WRITES_STATE_FIELDS = ("attempts", "execution_success", "error")
    JOB_STATUS = JobStatus.EXPLORATORY_ANALYSIS

    class Params(AgentParams):
        succeed_at: int = Field(2, ge=0, description="the attempt that succeeds (0: never)")

    def run(self, view, params, ctx):  # type: ignore[no-untyped-def]
        attempt = view.attempts + 1
        ok = params.succeed_at > 0 and attempt >= params.succeed_at
        return AgentResult(
            updates={"attempts": attempt, "execution_success": ok, "error": None if ok else f"boom {attempt}"}
        )


class ToyAskReporter(Agent):
    """The error node: says how many attempts failed."""

    NAME = "toy_ask_reporter"
    STATE_MODEL = AskState
    REQUIRED_STATE_FIELDS = ("question",)
    OPTIONAL_STATE_FIELDS = ("attempts", "error")
    WRITES_STATE_FIELDS = ("final_output",)
    JOB_STATUS = JobStatus.GENERATING_NOTEBOOK

    def run(self, view, params, ctx):  # type: ignore[no-untyped-def]
        text = f"failed after {view.attempts} attempts: {view.error}"
        return AgentResult(updates={"final_output": FinalOutput(answer=text, output_type="error")})


class ToyAskExplainer(Agent):
    """The explain node: an answer naming the attempt that succeeded."""

    NAME = "toy_ask_explainer"
    STATE_MODEL = AskState
    REQUIRED_STATE_FIELDS = ("question",)
    OPTIONAL_STATE_FIELDS = ("attempts",)
    WRITES_STATE_FIELDS = ("final_output", "explanation")
    JOB_STATUS = JobStatus.GENERATING_NOTEBOOK

    def run(self, view, params, ctx):  # type: ignore[no-untyped-def]
        text = f"answered after {view.attempts} attempt(s)"
        return AgentResult(
            updates={"final_output": FinalOutput(answer=text, output_type="analysis"), "explanation": text}
        )


def registry() -> Registry:
    """The built-ins, the plug-ins, and these toys."""
    reg = Registry()
    for cls in (ToyAskPlanner, ToyFlakyRunner, ToyAskReporter, ToyAskExplainer):
        reg.register(cls)
    return reg
