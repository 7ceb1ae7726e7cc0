"""The explain step: the answer package (a :class:`FinalOutput`) from what ran.

Every number in the answer comes from the executed code's result (or the causal run's
estimate), formatted as the question asks (rounding, units, ``@name[value]`` tokens). A chart
result is validated as Vega-Lite and rendered under the job's ``charts/``. With a model, its
plain-language explanation is added to the reasoning trace; the answer itself stays the
computed one. A question nothing could answer gets an honest "I can't answer this without a
model" naming the closest worked examples.
"""

from __future__ import annotations

from whyflow.ask._shared import llm_text, result_text
from whyflow.ask.answering import cannot_answer, causal_answer, computed_answer
from whyflow.ask.state import AskPlan, AskState, FinalOutput
from whyflow.ask.view import AskView
from whyflow.core.agent import Agent, AgentContext, AgentParams, AgentResult
from whyflow.core.status import JobStatus
from whyflow.core.view import required
from whyflow.runtime.sandbox.run import ExecutionResult

__all__ = ["ExplainerAgent", "cannot_answer", "causal_answer"]

_PROMPT = """You explain data-analysis findings to a non-technical reader. Answer the question in
plain language from the result and evaluation given; use only numbers that appear there; be brief."""


class ExplainerAgent(Agent[AgentParams]):
    """Writes the explanation and the final answer package."""

    NAME = "explainer"
    DESCRIPTION = "answer the question from the computed result, in the form it asks for"
    STATE_MODEL = AskState
    REQUIRED_STATE_FIELDS = ("question", "plan")
    OPTIONAL_STATE_FIELDS = (
        "execution_result",
        "execution_success",
        "evaluation",
        "code",
        "failed_attempts",
        "causal_result",
        "data_summary",
    )
    WRITES_STATE_FIELDS = ("explanation", "final_output")
    JOB_STATUS = JobStatus.GENERATING_NOTEBOOK
    PROGRESS_WEIGHT = 0.5

    def run(self, view: AskView, params: AgentParams, ctx: AgentContext) -> AgentResult:
        plan: AskPlan = required(view.plan, "plan")
        if plan.route == "causal":
            final = causal_answer(view.causal_result, plan)
        elif view.execution_success and (record := view.execution_result) is not None:
            final = self._answer(view, plan, record, ctx)
        elif plan.route == "conceptual" and (ctx.llm is not None or plan.filled is not None):
            filled = plan.filled
            if filled is not None and plan.mode == "deterministic":
                text = filled.answer_template
            else:
                text = llm_text(ctx.llm, _PROMPT, f"Question: {view.question}", purpose="ask_explain") or ""
            final = (
                cannot_answer(plan, with_model=ctx.llm is not None)
                if not text
                else FinalOutput(
                    answer=text,
                    confidence=0.8 if plan.mode == "deterministic" else 0.5,
                    output_type="explanation",
                    caveats=["a general explanation: nothing was computed from the data"],
                    reasoning_trace=[plan.reasoning],
                    examples=list(plan.closest_examples),
                )
            )
        else:
            final = cannot_answer(plan, with_model=ctx.llm is not None)
        result = AgentResult(
            updates={"explanation": final.answer, "final_output": final},
            summary=final.answer.splitlines()[0][:160] if final.answer else "",
        )
        if ctx.llm is not None:
            ctx.llm.annotate(result)
        return result

    def _answer(self, view: AskView, plan: AskPlan, record: ExecutionResult, ctx: AgentContext) -> FinalOutput:
        question = str(plan.parameters.get("question") or view.question)
        said = None
        if ctx.llm is not None:
            prompt = (
                f"Question: {question}\n\nResult:\n{result_text(record.result)}\n\nEvaluation: {view.evaluation or ''}"
            )
            said = llm_text(ctx.llm, _PROMPT, prompt, purpose="ask_explain")
        return computed_answer(
            question,
            plan,
            record,
            view.code,
            list(view.failed_attempts),
            view.evaluation,
            ctx.job_dir,
            explanation=said,
        )
