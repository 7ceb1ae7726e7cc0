"""The answer package (a :class:`FinalOutput`) built from what ran: shared by the explainer, the error
node and the ReAct ``data_scientist`` so that both recipes answer a question the same way.

Every number in an answer comes from the executed code's result (or the causal run's estimate),
formatted as the question asks. A chart result is validated as Vega-Lite and rendered under the
job's ``charts/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from whyflow.ask._shared import CHART_SUFFIX, is_vega_lite
from whyflow.ask.state import AskPlan, CausalRunResult, FailedAttempt, FinalOutput
from whyflow.runtime.sandbox.run import ExecutionResult

if TYPE_CHECKING:
    from whyflow.ask.tools.retrieval import FilledPlan

__all__ = [
    "cannot_answer",
    "causal_answer",
    "control_answer",
    "computed_answer",
    "error_answer",
    "render_chart",
    "vega_lite_of",
]


def cannot_answer(plan: AskPlan | None, with_model: bool = False) -> FinalOutput:
    """The honest answer when no worked example fits and the model, if one is on, gave nothing usable."""
    if plan is not None and plan.parameters.get("error"):  # a named column or method that cannot run
        return FinalOutput(
            answer=f"I can't answer this: {plan.parameters['error']}",
            confidence=0.0,
            output_type="error",
            caveats=["no code ran, so no number is given"],
            reasoning_trace=[plan.reasoning],
        )
    closest = plan.closest_examples if plan else []
    named = "; ".join(closest) if closest else "none"
    if with_model:
        answer = (
            "I can't answer this: the model's plan could not be used, and no worked example fits this question "
            f"with the columns it needs. The closest examples are: {named}. Rephrase it like one of them "
            "(naming the columns)."
        )
    else:
        answer = (
            "I can't answer this without a model: no worked example fits this question with the columns it "
            f"needs. The closest examples are: {named}. Rephrase it like one of them (naming the columns), "
            "or run with --llm on."
        )
    return FinalOutput(
        answer=answer,
        confidence=0.0,
        output_type="explanation",
        caveats=["no code ran, so no number is given"],
        reasoning_trace=[plan.reasoning] if plan else [],
        examples=closest,
    )


def control_answer(causal: CausalRunResult | None, plan: AskPlan, column: str) -> FinalOutput:
    """Whether to adjust for ``column``: "No" only when the recipe left it out for a reason the data shows;
    otherwise no yes or no is given, and the reply says what the recipe did with the column."""
    t, y = plan.treatment, plan.outcome
    row = next((r for r in causal.left_out if r.column == column), None) if causal is not None else None
    if causal is not None and row is not None and row.from_values:
        answer = (
            f"No. What the data shows of '{column}': {row.reason}. Adjusting for it would take out part of what "
            f"'{t}' does to '{y}' (or leave '{t}' no variation to learn from), so the causal recipe leaves it out "
            "of the adjustment set."
        )
        return FinalOutput(
            answer=answer,
            confidence=0.7,
            output_type="analysis",
            result={"answer": "no", "column": column, "role": row.role, "reason": row.reason},
            caveats=[f"read from the data by the causal recipe's column-role rules ({row.role})"],
            reasoning_trace=[plan.reasoning, f"nested job: {causal.job_dir}"],
        )
    if causal is None or (causal.status == "failed" and not causal.adjusted_for and not causal.left_out):
        done = (causal.error if causal is not None else None) or "the causal run did not finish"
    elif row is not None:
        done = f"the causal recipe left '{column}' out ({row.role}: {row.reason}), on evidence short of the data's own"
    elif column in causal.adjusted_for:
        done = f"the causal recipe adjusts for '{column}', but nothing in the data shows whether it comes before '{t}'"
    else:
        done = f"the causal recipe neither adjusts for '{column}' nor finds a reason in the data to leave it out"
    return FinalOutput(
        answer=(
            f"I can't answer this with yes or no: {done}. Whether to control for it rests on when it was measured "
            f"and what causes it, which the data alone does not tell (a model reads the rest with --llm on)."
        ),
        confidence=0.0,
        output_type="error",
        caveats=["no yes or no was given: the data shows no reason either way"],
        reasoning_trace=[plan.reasoning] + ([f"nested job: {causal.job_dir}"] if causal is not None else []),
    )


def causal_answer(causal: CausalRunResult | None, plan: AskPlan) -> FinalOutput:
    """The causal recipe's headline and caveats as the answer (a question whether to adjust for a column:
    :func:`control_answer`)."""
    judged = plan.parameters.get("control_column")
    if isinstance(judged, str):
        return control_answer(causal, plan, judged)
    t, y = plan.treatment, plan.outcome
    head = causal.headline if causal is not None else None
    if causal is None or head is None:
        reason = (causal.error if causal is not None else None) or "the causal run produced no estimate"
        return FinalOutput(
            answer=f"The causal analysis of '{t}' on '{y}' did not produce an estimate: {reason}",
            confidence=0.0,
            output_type="error",
            caveats=list(causal.caveats) if causal is not None else [],
            reasoning_trace=[plan.reasoning],
        )
    answer = (
        f"The estimated causal effect of '{t}' on '{y}' ({head.estimand}) is {head.estimate:.4g} "
        f"(95% CI {head.ci_lower:.4g} to {head.ci_upper:.4g}), by {head.method}."
    )
    if causal.critique:
        answer += f" The critique's verdict: {causal.critique}."
    caveats = ["a causal estimate rests on the adjustment set being right (no unmeasured confounding)"]
    caveats += list(causal.caveats)
    confidence = 0.7 if causal.critique == "APPROVE" else 0.4
    return FinalOutput(
        answer=answer,
        confidence=confidence,
        output_type="analysis",
        result=head.model_dump(),
        caveats=caveats,
        reasoning_trace=[plan.reasoning, f"nested job: {causal.job_dir}"],
    )


def error_answer(
    attempts: int, error: str | None, code: str | None, failed: list[FailedAttempt], plan: AskPlan | None
) -> FinalOutput:
    """The error answer: the code failed on every attempt; every attempt is kept."""
    text = (error or "unknown error").strip()
    last = text.splitlines()[0] if text else "unknown error"
    return FinalOutput(
        answer=f"Code execution failed after {attempts} attempts. Final error: {last}",
        confidence=0.0,
        output_type="error",
        result={"error": text, "failed_attempts": [a.model_dump() for a in failed]},
        code=code,
        caveats=["no answer was computed; nothing here is a result"],
        reasoning_trace=[f"attempt {a.attempt}: {a.error.splitlines()[0][:200]}" for a in failed],
        examples=list(plan.closest_examples) if plan else [],
    )


def render_chart(
    spec: dict[str, Any], job_dir: Path, name: str = "chart"
) -> tuple[dict[str, Any] | None, list[str], list[str]]:
    """Validate a chart and render it; return (spec or None if refused, chart paths, caveats)."""
    from whyflow.ask.tools.charts import save_chart, validate_spec
    from whyflow.ask.tools.errors import ToolError

    try:
        spec = validate_spec(spec)
    except ToolError as exc:
        return None, [], [f"the chart was not drawn: {exc}"]
    folder = job_dir / "charts"
    folder.mkdir(parents=True, exist_ok=True)
    try:
        path = save_chart(spec, folder / f"{name}{CHART_SUFFIX}")
    except ToolError as exc:
        return spec, [], [f"the chart could not be rendered to a file: {exc}"]
    return spec, [str(path)], []


def vega_lite_of(record: ExecutionResult) -> dict[str, Any] | None:
    """The chart the code made: ``figure`` (a Vega-Lite figure) or a Vega-Lite ``result``."""
    for fig in record.figures:
        if fig.kind == "vega-lite" and fig.spec is not None:
            return dict(fig.spec)
    return dict(record.result) if is_vega_lite(record.result) else None


def _plain_ran(filled: FilledPlan, code: str | None, result: Any) -> bool:
    """Whether the code that ran is a plain question's own computation (its sentence answers)."""
    return filled.kind == "plain" and code == filled.code and isinstance(result, dict) and "value" in result


def computed_answer(
    question: str,
    plan: AskPlan,
    record: ExecutionResult,
    code: str | None,
    failed: list[FailedAttempt],
    evaluation: str | None,
    job_dir: Path,
    explanation: str | None = None,
) -> FinalOutput:
    """The answer from a successful run: the filled example's sentence, or the formatted result.

    ``explanation`` (a model's plain-language words) goes to the reasoning trace only; the answer
    itself is always the computed one.
    """
    from whyflow.ask.tools.answers import format_answer
    from whyflow.ask.tools.retrieval import explain

    result = record.result
    filled = plan.filled
    caveats = list(filled.caveats) if filled is not None else []
    figure: dict[str, Any] | None = None
    charts: list[str] = []
    spec = vega_lite_of(record)
    if spec is not None:
        figure, charts, problems = render_chart(spec, job_dir)
        caveats += problems
    if is_vega_lite(result):
        title = figure.get("title") if figure and isinstance(figure.get("title"), str) else "the chart"
        answer = f"Drew {title}" + (f": {charts[0]}" if charts else " (not rendered)")
        result = None
    elif filled is not None and (plan.mode == "deterministic" or _plain_ran(filled, code, result)):
        answer = explain(filled, result, question)
        if _plain_ran(filled, code, result):
            result = result["value"]  # the one number asked for (its rows and conditions are in the sentence)
    else:
        answer = format_answer(question, result)
    if record.truncated:
        caveats.append("the result was truncated by the sandbox's output limit")
    trace = [plan.reasoning, f"code ran in {record.wall_seconds:.2f}s"]
    trace += [f"attempt {a.attempt} failed: {a.error.splitlines()[0][:200]}" for a in failed]
    if evaluation:
        trace.append(f"evaluation: {evaluation}")
    if explanation:
        trace.append(f"explanation: {explanation}")
    confidence = max(0.3, (0.9 if plan.mode == "deterministic" else 0.75) - 0.15 * len(failed))
    return FinalOutput(
        answer=answer,
        confidence=confidence,
        output_type="visualization" if figure is not None else "analysis",
        result=result,
        figure=figure,
        code=code,
        caveats=caveats,
        reasoning_trace=trace,
        charts=charts,
        examples=list(plan.closest_examples),
    )
