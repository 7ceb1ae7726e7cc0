"""A causal question ("what is the effect of X on Y?") answered by the causal recipe itself.

The planner routes such a question here; this agent runs the built-in ``causal_analysis`` recipe (or
the recipe its ``with: {recipe: ...}`` names) on the same data as a nested job inside this job's
folder, through ``ctx.run_recipe`` (the runner's), and records the headline and caveats.
"""

from __future__ import annotations

from pydantic import Field

from whyflow.ask._shared import CAUSAL_RECIPE
from whyflow.ask.state import AskState, CausalRunResult
from whyflow.ask.view import AskView
from whyflow.core.agent import Agent, AgentContext, AgentParams, AgentResult
from whyflow.core.errors import AgentError
from whyflow.core.status import JobStatus
from whyflow.core.view import required

__all__ = ["CausalRunnerAgent", "CausalRunnerParams"]


class CausalRunnerParams(AgentParams):
    recipe: str | None = Field(
        None, description="recipe answering causal questions, a file or a built-in name (None: causal_analysis)"
    )


class CausalRunnerAgent(Agent[CausalRunnerParams]):
    """Runs the causal recipe on the question's treatment and outcome."""

    NAME = "causal_runner"
    DESCRIPTION = "answer a causal question by running the causal recipe as a nested job"
    STATE_MODEL = AskState
    REQUIRED_STATE_FIELDS = ("plan", "datasets")
    WRITES_STATE_FIELDS = ("causal_result",)
    JOB_STATUS = JobStatus.ESTIMATING_EFFECTS
    PROGRESS_WEIGHT = 5.0

    Params = CausalRunnerParams

    def run(self, view: AskView, params: CausalRunnerParams, ctx: AgentContext) -> AgentResult:
        if ctx.run_recipe is None:
            raise AgentError("this runner cannot start a nested recipe run")
        plan = required(view.plan, "plan")
        recipe = params.recipe or CAUSAL_RECIPE
        data = next(iter(view.datasets.values())).local_path
        result = CausalRunResult.model_validate(
            ctx.run_recipe(recipe, data, str(ctx.job_dir / "causal"), plan.treatment, plan.outcome)
        )
        head = result.headline
        summary = f"{plan.treatment} → {plan.outcome}: " + (f"{head.estimate:.4g}" if head else result.status)
        return AgentResult(updates={"causal_result": result}, summary=summary, tools_called=["run_recipe"])
