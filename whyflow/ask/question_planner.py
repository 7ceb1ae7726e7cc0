"""The planner: decide whether the question needs code, evaluation and explanation.

Deterministic order: a follow-up is first rewritten against the conversation ("now by year");
a causal question ("what is the effect of X on Y?") is routed to the causal recipe; otherwise
the best worked example whose slots the question fills becomes the plan. With a model, the
model decides the plan's flags (the planning prompt), grounded by the closest examples; a
reply it cannot parse falls back to the deterministic plan.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from whyflow.ask._shared import first_aliases, first_frame, llm_json
from whyflow.ask.planning import plan_question
from whyflow.ask.state import AskPlan, AskState
from whyflow.ask.view import AskView
from whyflow.core.agent import Agent, AgentContext, AgentParams, AgentResult
from whyflow.core.status import JobStatus

__all__ = ["QuestionPlannerAgent", "QuestionPlannerParams"]

_PLAN_PROMPT = """You plan how to answer a question about a dataset.
Steps: CODE (write Python that computes the answer from the data), EVALUATION (interpret the
code's output critically), EXPLANATION (answer the user in plain language).
Rules: EVALUATION only runs if CODE runs; data questions always need CODE (never guess numbers);
conceptual questions ("what is correlation?") skip CODE and EVALUATION.
Return {"needs_code": bool, "needs_evaluation": bool, "needs_explanation": bool, "reasoning": str}."""


class PlanReply(BaseModel):
    """The model's plan: which steps the question needs, and why."""

    needs_code: bool
    needs_evaluation: bool = False
    needs_explanation: bool = True
    reasoning: str = ""


class QuestionPlannerParams(AgentParams):
    min_score: float = Field(
        0.0, ge=0, le=1, description="similarity floor for a worked example, on top of the library's (0: the library's)"
    )


class QuestionPlannerAgent(Agent[QuestionPlannerParams]):
    """Turns the question into a plan: a filled worked example, a causal run, or a model's plan."""

    NAME = "question_planner"
    DESCRIPTION = "decide how to answer: code (from a worked example or the model), a causal run, or not at all"
    STATE_MODEL = AskState
    REQUIRED_STATE_FIELDS = ("question", "datasets")
    OPTIONAL_STATE_FIELDS = ("data_summary", "messages")
    WRITES_STATE_FIELDS = ("plan",)
    JOB_STATUS = JobStatus.PROFILING
    PROGRESS_WEIGHT = 1.0

    Params = QuestionPlannerParams

    def run(self, view: AskView, params: QuestionPlannerParams, ctx: AgentContext) -> AgentResult:
        frame = first_frame(view.datasets)
        aliases = first_aliases(view.datasets)
        plan, nearest = plan_question(view.question, list(view.messages), frame, params.min_score, aliases)
        if plan.route == "causal":
            return AgentResult(updates={"plan": plan}, summary=f"causal: {plan.treatment} → {plan.outcome}")
        question = str(plan.parameters["question"])
        complete = bool(plan.parameters.get("complete"))  # every requested value has its own routine
        if ctx.llm is not None and plan.route != "conceptual" and not complete:  # a worked concept needs no model
            plan = self._with_model(ctx, question, view.data_summary, plan, nearest)
        what = plan.example_id or plan.route
        result = AgentResult(updates={"plan": plan}, summary=f"{plan.mode} plan: {what}", reasoning=plan.reasoning)
        if ctx.llm is not None:
            ctx.llm.annotate(result, changed=["plan"] if plan.mode == "model" else [])
        return result

    @staticmethod
    def _with_model(ctx: AgentContext, question: str, summary: str, plan: AskPlan, nearest: list[Any]) -> AskPlan:
        from whyflow.runtime.llm import data_block

        examples = "\n".join(f"- {m.title} ({m.kind})" for m in nearest)
        reply = llm_json(
            ctx.llm,
            _PLAN_PROMPT,
            f"Question: {question}\n\n{data_block('data summary', summary[:4000])}\n\nSimilar worked examples:\n{examples}",
            PlanReply,
            purpose="ask_plan",
        )
        if reply is None:
            return plan
        if plan.needs_code and not reply.needs_code:
            # A worked example computes this from the data: "no code" would answer it with prose
            # and no number from the data, so a data question always gets code.
            note = f"The model planned no code, but '{plan.example_id}' computes the answer from the data; code runs."
            return plan.model_copy(update={"reasoning": f"{plan.reasoning} {note}".strip()})
        return plan.model_copy(
            update={
                "mode": "model",
                "needs_code": reply.needs_code,
                "needs_evaluation": reply.needs_code and reply.needs_evaluation,
                "needs_explanation": reply.needs_explanation,
                "route": "code" if reply.needs_code else "conceptual",
                "reasoning": reply.reasoning or plan.reasoning,
            }
        )
