"""The ReAct data scientist on the ask runtime (:mod:`whyflow.ask.react_state`): one agent, ten tools.

``whyflow/recipes/ask_react.yaml`` runs this one agent. With a model, the model picks each next tool
among profile_data, sql_query, write_code, execute_code, validate_results, output_text,
output_table, create_plot, explain_findings and finalize (:mod:`whyflow.ask.react_loop`), under
the loop's safeguards. Without one, or when the model's loop gives nothing usable, the agent takes
the deterministic path of ``whyflow/recipes/ask.yaml`` through the same tool functions — profile, the
filled worked example's code (up to 3 attempts), validation, the table or chart, the
explanation — so it gives the same answers, and its FinalOutput is always valid.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field

from whyflow.ask._shared import CAUSAL_RECIPE, first_aliases, first_frame
from whyflow.ask.answering import cannot_answer, causal_answer, computed_answer, error_answer
from whyflow.ask.planning import attempt_code, plan_question
from whyflow.ask.react_state import InvalidStateTransition, Runtime, RuntimeState
from whyflow.ask.state import ArtifactRecord, AskPlan, AskState, CausalRunResult, FinalOutput
from whyflow.ask.toolbox import Toolbox
from whyflow.ask.tools import analysis as T
from whyflow.ask.view import AskView
from whyflow.core.agent import Agent, AgentContext, AgentParams, AgentResult
from whyflow.core.status import JobStatus

__all__ = ["DataScientistAgent", "DataScientistParams", "estimate_complexity", "BUDGETS", "deterministic_turn"]

_RERUN = re.compile(r"\b(re-?run|run (?:it|this|that) again|recompute|from scratch)\b", re.I)
BUDGETS = {"simple": 5, "standard": 8, "complex": 10}
"""Model calls allowed per turn, by the question's complexity."""


def estimate_complexity(question: str, n_datasets: int) -> str:
    """Heuristics: several datasets or a model/cluster question is complex; a test,
    correlation or comparison is standard; the rest is simple."""
    q = question.lower()
    if n_datasets > 1 or any(k in q for k in ("predict", "model", "cluster", "segment")):
        return "complex"
    if any(k in q for k in ("test", "significant", "correlation", "compare")):
        return "standard"
    return "simple"


def deterministic_turn(box: Toolbox, plan: AskPlan, ctx: AgentContext, max_attempts: int = 3) -> FinalOutput:
    """``whyflow/recipes/ask.yaml``'s answer through the tool functions and the runtime's guards."""
    rt = box.runtime
    if rt.state is not RuntimeState.PLANNING:  # a model's loop was abandoned: start over from planning
        rt.fail("the model's loop was abandoned")
    columns = plan.filled.params if plan.filled is not None else {}
    wanted = [v for v in columns.values() if isinstance(v, str) and v in box.frame.columns]
    box.call("profile_data", T.ProfileDataArgs(columns=wanted or None))
    question = str(plan.parameters.get("question") or box.question)
    if plan.route == "causal":
        return _causal(box, plan, ctx)
    filled = plan.filled
    if plan.route != "code" or filled is None:
        final = cannot_answer(plan, with_model=ctx.llm is not None)
        if plan.route == "conceptual" and filled is not None:
            final = FinalOutput(
                answer=filled.answer_template,
                confidence=0.8,
                output_type="explanation",
                caveats=["a general explanation: nothing was computed from the data"],
                reasoning_trace=[plan.reasoning],
                examples=list(plan.closest_examples),
            )
        box.call("output_text", T.OutputTextArgs(text=final.answer))
        _complete(rt)
        return final
    box.template = filled.code
    for _ in range(max_attempts):
        code, note = attempt_code(plan, question, box.frame, {a.code for a in box.failed})
        box.call("write_code", T.WriteCodeArgs(approach=note, code=code))
        obs = box.call("execute_code", T.ExecuteCodeArgs(code=code, timeout_s=box.wall_seconds))
        if obs.status == "skipped":  # the same code failed before: it is an attempt that fails the same way
            box.pending_code = None
            box.attempts += 1
            box.failed.append(box.failed[-1].model_copy(update={"attempt": box.attempts}))
        if obs.status == "ok":
            break
    if box.current is None:
        _complete(rt)
        return error_answer(
            box.attempts,
            box.failed[-1].error if box.failed else None,
            box.failed[-1].code if box.failed else None,
            box.failed,
            plan,
        )
    box.call("validate_results", T.ValidateResultsArgs(question=question))
    evaluation = box.validation.notes if box.validation and plan.needs_evaluation else None
    final = computed_answer(question, plan, box.current, box.code, box.failed, evaluation, ctx.job_dir)
    _present(box, final)
    box.call("explain_findings", T.ExplainFindingsArgs(explanation=final.answer))
    box.call("finalize", T.FinalizeArgs())
    if not box.finalized:
        _complete(rt)
    return final


def _present(box: Toolbox, final: FinalOutput) -> None:
    from whyflow.ask.tools.render import OutputTableArgs, table_from_result

    table = table_from_result(final.result, title="result")
    if table is not None:
        box.call(
            "output_table",
            OutputTableArgs(title="result", headers=table.headers, rows=table.rows, total_rows=table.total_rows),
        )
    elif final.figure is not None:
        box.runtime.transition(RuntimeState.PRESENTING, "chart drawn by the code")


def _complete(rt: Runtime) -> None:
    try:
        if rt.state in (RuntimeState.ANALYZING, RuntimeState.DATA_FETCHING):
            rt.transition(RuntimeState.PRESENTING, "final answer")
        rt.transition(RuntimeState.COMPLETED, "final answer")
    except InvalidStateTransition:
        rt.fail("cannot complete")
        rt.transition(RuntimeState.COMPLETED, "final answer after an error")


def _causal(box: Toolbox, plan: AskPlan, ctx: AgentContext) -> FinalOutput:
    rt = box.runtime
    rt.transition(RuntimeState.ANALYZING, "causal recipe")
    if ctx.run_recipe is None:
        result = CausalRunResult(job_dir="", status="failed", error="this runner cannot start a nested recipe run")
    else:
        data = next(iter(box.datasets.values()))
        result = CausalRunResult.model_validate(
            ctx.run_recipe(CAUSAL_RECIPE, data, str(ctx.job_dir / "causal"), plan.treatment, plan.outcome)
        )
    box.causal = result
    rt.record_call(
        "run_recipe",
        {"recipe": CAUSAL_RECIPE, "treatment": plan.treatment, "outcome": plan.outcome},
        "ok" if result.headline else "failed",
        str(result.headline.model_dump() if result.headline else (result.error or result.status)),
    )
    _complete(rt)
    return causal_answer(result, plan)


def _earlier_artifacts(messages: Any) -> list[ArtifactRecord]:
    """The artifact inventories earlier turns of a ``--session`` left in their answers."""
    found: list[ArtifactRecord] = []
    for message in messages:
        for raw in message.data.get("artifacts", []) if message.role == "assistant" else []:
            try:
                found.append(ArtifactRecord.model_validate(raw))
            except ValueError:
                continue  # an inventory from an older version: nothing to remember
    return found


class DataScientistParams(AgentParams):
    max_code_retries: int = Field(3, ge=1, description="failed code runs before the answer degrades")
    max_validation_failures: int = Field(2, ge=1, description="failed validations before the answer degrades")
    max_iterations: int | None = Field(
        None, ge=1, description="model calls at most (None: 5 / 8 / 10 by the question's complexity)"
    )
    wall_seconds: float = Field(30.0, gt=0, description="seconds one sandboxed run may take")
    memory_mb: int = Field(2048, ge=256, description="memory of one sandboxed run, in MiB")


class DataScientistAgent(Agent[DataScientistParams]):
    """The data scientist: a ReAct loop over ten tools, or the deterministic path without a model."""

    NAME = "data_scientist"
    DESCRIPTION = "answer a question with a ReAct loop over data tools (deterministic path without a model)"
    STATE_MODEL = AskState
    REQUIRED_STATE_FIELDS = ("question", "datasets")
    OPTIONAL_STATE_FIELDS = ("data_summary", "messages")
    WRITES_STATE_FIELDS = (
        "plan",
        "code",
        "execution_result",
        "execution_success",
        "error",
        "attempts",
        "failed_attempts",
        "evaluation",
        "explanation",
        "final_output",
        "causal_result",
        "runtime",
    )
    JOB_STATUS = JobStatus.EXPLORATORY_ANALYSIS
    PROGRESS_WEIGHT = 4.0

    Params = DataScientistParams

    def run(self, view: AskView, params: DataScientistParams, ctx: AgentContext) -> AgentResult:
        frame = first_frame(view.datasets)
        plan, nearest = plan_question(view.question, list(view.messages), frame, aliases=first_aliases(view.datasets))
        question = str(plan.parameters.get("question") or view.question)
        complexity = estimate_complexity(question, len(view.datasets))
        budget = params.max_iterations or BUDGETS[complexity]
        box = Toolbox(
            question=question,
            frame=frame,
            datasets={k: d.local_path for k, d in view.datasets.items()},
            job_dir=ctx.job_dir,
            wall_seconds=params.wall_seconds,
            memory_mb=params.memory_mb,
        )
        box.template = plan.filled.code if plan.filled is not None else None
        box.runtime.remember(_earlier_artifacts(view.messages))
        box.allow_rerun = bool(_RERUN.search(view.question))
        mode, ended_by, iterations = "deterministic", "deterministic path", 0
        final: FinalOutput | None = None
        try:
            if ctx.llm is not None and plan.route != "causal":
                from whyflow.ask.react_loop import react_turn

                outcome = react_turn(box, plan, view.data_summary, nearest, ctx, budget, params)
                iterations, ended_by = outcome.iterations, outcome.ended_by
                final, mode = outcome.final, "model" if outcome.final is not None else "model_fallback"
            if final is None:
                if mode == "model_fallback":
                    box = box.restart()
                final = deterministic_turn(box, plan, ctx, params.max_code_retries)
                if mode == "model_fallback":
                    final = final.model_copy(
                        update={
                            "caveats": [
                                *final.caveats,
                                f"the model's loop ended without an answer ({ended_by}); this is the deterministic answer",
                            ]
                        }
                    )
        finally:
            box.close()
        summary = box.runtime.summary(
            mode=mode, complexity=complexity, budget=budget, iterations=iterations, ended_by=ended_by
        )
        updates: dict[str, Any] = {
            "plan": plan if mode != "model" else plan.model_copy(update={"mode": "model"}),
            "code": box.code,
            "execution_result": box.current,
            "execution_success": box.current is not None,
            "error": box.failed[-1].error if box.failed and box.current is None else None,
            "attempts": box.attempts,
            "failed_attempts": box.failed,
            "evaluation": box.validation.notes
            if box.validation and (plan.needs_evaluation or mode == "model")
            else None,
            "explanation": final.answer,
            "final_output": final,
            "runtime": summary,
            "causal_result": box.causal,
        }
        steps = [
            f"{c.call_id} {c.tool} [{c.origin}]: {c.status}" + (f" ({c.reason})" if c.reason else "")
            for c in summary.tool_calls
        ]
        moves = [
            f"{t.source} → {t.target} ({t.cause})" + ("" if t.accepted else f" REJECTED: {t.code}")
            for t in summary.transitions
        ]
        result = AgentResult(
            updates=updates,
            summary=f"{mode}: {len(summary.tool_calls)} tool calls, ended by {ended_by}; {box.runtime.counters_line()}",
            reasoning="\n".join([*steps, *moves]),
            outputs={
                "transitions": [t.model_dump(mode="json") for t in summary.transitions],
                "counters": summary.counters.model_dump(mode="json"),
                "artifacts": [a.model_dump(mode="json") for a in summary.artifacts],
                "intents": summary.intents,
            },
            tools_called=[c.tool for c in summary.tool_calls],
        )
        if ctx.llm is not None:
            ctx.llm.annotate(result, changed=["final_output"] if mode == "model" else [])
        return result
