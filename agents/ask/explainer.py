"""001's explain node: the answer package (002's FinalOutput) from what ran.

Every number in the answer comes from the executed code's result (or the causal run's
estimate), formatted as the question asks (rounding, units, ``@name[value]`` tokens). A chart
result is validated as Vega-Lite and rendered under the job's ``charts/``. With a model, its
plain-language explanation is added to the reasoning trace; the answer itself stays the
computed one. A question nothing could answer gets an honest "I can't answer this without a
model" naming the closest worked examples.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents.ask._shared import CHART_SUFFIX, filled_plan, is_vega_lite, llm_text, result_text
from agents.base.agent import Agent, AgentContext, AgentParams, AgentResult
from agents.base.ask_state import AskPlan, AskState, FinalOutput
from agents.base.state import JobStatus
from agents.base.view import StateView

__all__ = ["ExplainerAgent", "cannot_answer", "causal_answer"]

_PROMPT = """You explain data-analysis findings to a non-technical reader. Answer the question in
plain language from the result and evaluation given; use only numbers that appear there; be brief."""


def cannot_answer(plan: AskPlan | None) -> FinalOutput:
    """The honest answer when no worked example fits and no model is on."""
    closest = plan.closest_examples if plan else []
    named = "; ".join(closest) if closest else "none"
    return FinalOutput(
        answer=(
            "I can't answer this without a model: no worked example fits this question with the columns it "
            f"needs. The closest examples are: {named}. Rephrase it like one of them (naming the columns), "
            "or run with --llm on."
        ),
        confidence=0.0,
        output_type="explanation",
        caveats=["no code ran, so no number is given"],
        reasoning_trace=[plan.reasoning] if plan else [],
        examples=closest,
    )


def causal_answer(causal: dict[str, Any] | None, plan: AskPlan) -> FinalOutput:
    """The causal recipe's headline and caveats as the answer."""
    t, y = plan.treatment, plan.outcome
    head = (causal or {}).get("headline")
    if not causal or head is None:
        reason = (causal or {}).get("error") or "the causal run produced no estimate"
        return FinalOutput(
            answer=f"The causal analysis of '{t}' on '{y}' did not produce an estimate: {reason}",
            confidence=0.0,
            output_type="error",
            caveats=list((causal or {}).get("caveats") or []),
            reasoning_trace=[plan.reasoning],
        )
    est, lo, hi = head["estimate"], head["ci_lower"], head["ci_upper"]
    answer = (
        f"The estimated causal effect of '{t}' on '{y}' ({head.get('estimand', 'ATE')}) is {est:.4g} "
        f"(95% CI {lo:.4g} to {hi:.4g}), by {head.get('method')}."
    )
    if causal.get("critique"):
        answer += f" The critique's verdict: {causal['critique']}."
    caveats = ["a causal estimate rests on the adjustment set being right (no unmeasured confounding)"]
    caveats += list(causal.get("caveats") or [])
    confidence = 0.7 if causal.get("critique") == "APPROVE" else 0.4
    return FinalOutput(
        answer=answer,
        confidence=confidence,
        output_type="analysis",
        result=head,
        caveats=caveats,
        reasoning_trace=[plan.reasoning, f"nested job: {causal.get('job_dir')}"],
    )


def _chart(spec: dict[str, Any], job_dir: Path) -> tuple[dict[str, Any] | None, list[str], list[str]]:
    """Validate a chart and render it; return (spec or None if refused, chart paths, caveats)."""
    from agents.tools.charts import save_chart, validate_spec
    from agents.tools.errors import ToolError

    try:
        spec = validate_spec(spec)
    except ToolError as exc:
        return None, [], [f"the chart was not drawn: {exc}"]
    folder = job_dir / "charts"
    folder.mkdir(parents=True, exist_ok=True)
    try:
        path = save_chart(spec, folder / f"chart{CHART_SUFFIX}")
    except ToolError as exc:
        return spec, [], [f"the chart could not be rendered to a file: {exc}"]
    return spec, [str(path)], []


def _vega_lite(record: Any) -> dict[str, Any] | None:
    """The chart the code made: ``figure`` (a Vega-Lite figure) or a Vega-Lite ``result``."""
    for fig in record.figures:
        if isinstance(fig, dict) and fig.get("kind") == "vega-lite" and isinstance(fig.get("spec"), dict):
            return dict(fig["spec"])
    return dict(record.result) if is_vega_lite(record.result) else None


class ExplainerAgent(Agent):
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

    def run(self, view: StateView, params: AgentParams, ctx: AgentContext) -> AgentResult:
        plan: AskPlan = view.plan
        if plan.route == "causal":
            final = causal_answer(view.causal_result, plan)
        elif view.execution_success and view.execution_result is not None:
            final = self._answer(view, ctx)
        elif plan.route == "conceptual" and (ctx.llm is not None or filled_plan(plan) is not None):
            filled = filled_plan(plan)
            if filled is not None and plan.mode == "deterministic":
                text = filled.answer_template
            else:
                text = llm_text(ctx.llm, _PROMPT, f"Question: {view.question}", purpose="ask_explain") or ""
            final = cannot_answer(plan) if not text else FinalOutput(
                answer=text,
                confidence=0.8 if plan.mode == "deterministic" else 0.5,
                output_type="explanation",
                caveats=["a general explanation: nothing was computed from the data"],
                reasoning_trace=[plan.reasoning],
                examples=list(plan.closest_examples),
            )
        else:
            final = cannot_answer(plan)
        result = AgentResult(
            updates={"explanation": final.answer, "final_output": final},
            summary=final.answer.splitlines()[0][:160] if final.answer else "",
        )
        if ctx.llm is not None:
            ctx.llm.annotate(result)
        return result

    def _answer(self, view: StateView, ctx: AgentContext) -> FinalOutput:
        from agents.tools.answers import format_answer
        from agents.tools.retrieval import explain

        plan: AskPlan = view.plan
        record = view.execution_result
        result = record.result
        question = str(plan.parameters.get("question") or view.question)
        filled = filled_plan(plan)
        caveats = list(filled.caveats) if filled is not None else []
        figure: dict[str, Any] | None = None
        charts: list[str] = []
        spec = _vega_lite(record)
        if spec is not None:
            figure, charts, problems = _chart(spec, ctx.job_dir)
            caveats += problems
        if is_vega_lite(result):
            title = figure.get("title") if figure and isinstance(figure.get("title"), str) else "the chart"
            answer = f"Drew {title}" + (f": {charts[0]}" if charts else " (not rendered)")
            result = None
        elif filled is not None and plan.mode == "deterministic":
            answer = explain(filled, result, question)
        else:
            answer = format_answer(question, result)
        if record.truncated:
            caveats.append("the result was truncated by the sandbox's output limit")
        trace = [plan.reasoning, f"code ran in {view.execution_result.wall_seconds:.2f}s"]
        trace += [f"attempt {a.attempt} failed: {a.error.splitlines()[0][:200]}" for a in view.failed_attempts]
        if view.evaluation:
            trace.append(f"evaluation: {view.evaluation}")
        if ctx.llm is not None:
            prompt = f"Question: {question}\n\nResult:\n{result_text(record.result)}\n\nEvaluation: {view.evaluation or ''}"
            said = llm_text(ctx.llm, _PROMPT, prompt, purpose="ask_explain")
            if said:
                trace.append(f"explanation: {said}")
        confidence = max(0.3, (0.9 if plan.mode == "deterministic" else 0.75) - 0.15 * len(view.failed_attempts))
        return FinalOutput(
            answer=answer,
            confidence=confidence,
            output_type="visualization" if figure is not None else "analysis",
            result=result,
            figure=figure,
            code=view.code,
            caveats=caveats,
            reasoning_trace=trace,
            charts=charts,
            examples=list(plan.closest_examples),
        )
