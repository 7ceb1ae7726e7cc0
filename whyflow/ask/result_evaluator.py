"""The evaluate step: interpret the code's output critically, only from what it shows.

Without a model the evaluation states what the numbers themselves say: a test's p-value against
5%, a correlation's strength, a table's size, a truncated result. With a model, the evaluation
prompt sees the question, the code and the output (never anything it did not compute).
"""

from __future__ import annotations

from whyflow.ask._shared import llm_text, result_text
from whyflow.ask.state import AskState
from whyflow.ask.tools.analysis import evaluate_result
from whyflow.ask.view import AskView
from whyflow.core.agent import Agent, AgentContext, AgentParams, AgentResult
from whyflow.core.status import JobStatus
from whyflow.core.view import required

__all__ = ["ResultEvaluatorAgent", "evaluate_result"]

_PROMPT = """You evaluate the output of data-analysis code and interpret it.
Only discuss what the output shows; never invent data. Be specific with numbers from the output;
name trends, outliers or problems (small groups, truncated output). Keep it short and factual."""


class ResultEvaluatorAgent(Agent[AgentParams]):
    """Critically evaluates the result from what the output shows."""

    NAME = "result_evaluator"
    DESCRIPTION = "interpret the result: significance, strength, size, truncation"
    STATE_MODEL = AskState
    REQUIRED_STATE_FIELDS = ("question", "execution_result")
    OPTIONAL_STATE_FIELDS = ("code", "plan", "data_summary")
    WRITES_STATE_FIELDS = ("evaluation",)
    JOB_STATUS = JobStatus.CRITIQUE_REVIEW
    PROGRESS_WEIGHT = 0.5

    def run(self, view: AskView, params: AgentParams, ctx: AgentContext) -> AgentResult:
        record = required(view.execution_result, "execution_result")
        text = evaluate_result(record.result, record.result_kind, record.truncated)
        if ctx.llm is not None:
            prompt = f"Question: {view.question}\n\nCode:\n{view.code}\n\nOutput:\n{result_text(record.result)}"
            text = llm_text(ctx.llm, _PROMPT, prompt, purpose="ask_evaluate") or text
        result = AgentResult(updates={"evaluation": text}, summary=text[:120])
        if ctx.llm is not None:
            ctx.llm.annotate(result)
        return result
