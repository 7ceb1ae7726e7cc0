"""001's evaluate node: interpret the code's output critically, only from what it shows.

Without a model the evaluation states what the numbers themselves say: a test's p-value against
5%, a correlation's strength, a table's size, a truncated result. With a model, 001's evaluation
prompt sees the question, the code and the output (never anything it did not compute).
"""

from __future__ import annotations

from typing import Any

from agents.ask._shared import llm_text, result_text
from agents.base.agent import Agent, AgentContext, AgentParams, AgentResult
from agents.base.ask_state import AskState
from agents.base.state import JobStatus
from agents.base.view import StateView

__all__ = ["ResultEvaluatorAgent", "evaluate_result"]

_PROMPT = """You evaluate the output of data-analysis code and interpret it.
Only discuss what the output shows; never invent data. Be specific with numbers from the output;
name trends, outliers or problems (small groups, truncated output). Keep it short and factual."""


def _strength(r: float) -> str:
    a = abs(r)
    return "very weak" if a < 0.1 else "weak" if a < 0.3 else "moderate" if a < 0.5 else "strong"


def _find(result: Any, *names: str) -> float | None:
    if isinstance(result, dict):
        for key, value in result.items():
            if str(key).lower() in names and isinstance(value, (int, float)) and not isinstance(value, bool):
                return float(value)
        for value in result.values():
            found = _find(value, *names)
            if found is not None:
                return found
    return None


def evaluate_result(result: Any, kind: str, truncated: bool = False) -> str:
    """Plain statements that follow from the result alone."""
    notes: list[str] = []
    p = _find(result, "p_value", "pvalue", "p")
    if p is not None:
        verdict = "below" if p < 0.05 else "not below"
        notes.append(f"p = {p:.3g} is {verdict} 0.05: {'significant' if p < 0.05 else 'not significant'} at the 5% level.")
    r = _find(result, "r", "correlation", "pearson_r", "spearman_rho", "rho")
    if r is not None and -1.0 <= r <= 1.0:
        notes.append(f"A correlation of {r:.3g} is {_strength(r)} ({'positive' if r > 0 else 'negative'}).")
    if kind == "table" and isinstance(result, dict):
        rows = result.get("n_rows") or len(result.get("rows", result.get("data", [])) or [])
        if rows:
            notes.append(f"The table has {rows} rows.")
    if truncated:
        notes.append("The output was truncated; the figures shown are the first part only.")
    return " ".join(notes) or "The code ran and returned the result shown; nothing in it calls for a caveat."


class ResultEvaluatorAgent(Agent):
    """Critically evaluates the result (001's evaluation)."""

    NAME = "result_evaluator"
    DESCRIPTION = "interpret the result: significance, strength, size, truncation"
    STATE_MODEL = AskState
    REQUIRED_STATE_FIELDS = ("question", "execution_result")
    OPTIONAL_STATE_FIELDS = ("code", "plan", "data_summary")
    WRITES_STATE_FIELDS = ("evaluation",)
    JOB_STATUS = JobStatus.CRITIQUE_REVIEW
    PROGRESS_WEIGHT = 0.5

    def run(self, view: StateView, params: AgentParams, ctx: AgentContext) -> AgentResult:
        record = view.execution_result
        text = evaluate_result(record.result, record.result_kind, record.truncated)
        if ctx.llm is not None:
            prompt = f"Question: {view.question}\n\nCode:\n{view.code}\n\nOutput:\n{result_text(record.result)}"
            text = llm_text(ctx.llm, _PROMPT, prompt, purpose="ask_evaluate") or text
        result = AgentResult(updates={"evaluation": text}, summary=text[:120])
        if ctx.llm is not None:
            ctx.llm.annotate(result)
        return result
