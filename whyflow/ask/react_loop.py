"""The ReAct loop with its safeguards in code, on the ask runtime (:mod:`whyflow.ask.react_state`).

Each iteration is one model call that sees the system prompt, the question, the data summary,
the closest worked examples, every earlier call and observation, and — rebuilt for every call —
the artifact inventory, the data intent summaries, the failed attempts and the calls left. The
model answers with one tool call (native ``tool_calls`` or JSON in its text, validated against
the tool's argument model by ``ctx.llm.tool_call``, which gives junk one corrective turn).

Safeguards: the iteration budget by complexity (5 / 8 / 10); validation before any final answer
(:meth:`~whyflow.ask.toolbox.Toolbox.finalize`); loop detection with forced divergence, and the
loop abandoned when it persists; at most 3 failed code runs and 2 failed validations; at the
end, the best result with caveats (graceful degradation), else nothing — and the agent then
takes the deterministic path, so an answer always comes back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from whyflow.ask.answering import computed_answer
from whyflow.ask.state import AskPlan, FinalOutput, ToolCallRecord
from whyflow.ask.toolbox import Toolbox
from whyflow.ask.tools import analysis as T
from whyflow.core.agent import AgentContext

__all__ = ["TurnOutcome", "react_turn", "detect_loop", "SYSTEM_PROMPT", "DIVERGENCE"]

SYSTEM_PROMPT = """You are an expert data scientist. Answer the user's question about their data by
calling tools, one call per reply, then finalize.
How you work: understand the question; check the data (profile_data, sql_query); compute the answer
(sql_query for aggregates, or write_code/execute_code for Python); validate_results; present it
(output_text, output_table, create_plot with at most 100 inline rows); explain_findings; finalize.
Rules:
- Only SELECT queries over the view `data` (and one view per further file). Never modify data.
- Python runs in a sandbox: the datasets are pandas DataFrames `df` (the first) and
  `datasets[name]`; import pandas/numpy/scipy yourself; set `result` (a number, dict, list,
  DataFrame or a Vega-Lite v5 spec). Compute every number; never write one you did not compute.
- validate_results must pass before finalize. Reuse existing artifacts; never repeat a failed call.
- If the question is ambiguous, make a reasonable interpretation and say so."""

CODE_RULES = """Write Python that carries out the approach on the data. The datasets are pandas DataFrames
in the dict `datasets` (the first is also `df`); import pandas, numpy or scipy.stats yourself.
Store the answer in `result` (a number, dict, list, DataFrame, or a Vega-Lite v5 spec with at most
100 inline rows). Compute every number. Return only the code."""

DIVERGENCE = """LOOP DETECTED: you tried the same approach several times without success. You MUST try a
DIFFERENT approach: another method, a simpler analysis (fewer variables, a plain aggregate), or
finalize explaining why the data cannot answer this. Do NOT repeat the same tool call."""


@dataclass(frozen=True)
class TurnOutcome:
    """How the model's loop ended: its answer (None: take the deterministic path), calls, why."""

    final: FinalOutput | None
    iterations: int
    ended_by: str


def detect_loop(calls: list[ToolCallRecord]) -> bool:
    """Loop check: the model's last two calls used the same tool and two of its last three failed."""
    mine = [c for c in calls if c.origin == "model"][-3:]
    if len(mine) < 2:
        return False
    errors = sum(c.status != "ok" for c in mine)
    return mine[-1].tool == mine[-2].tool and errors >= 2


def _examples(plan: AskPlan, nearest: list[Any]) -> str:
    lines = [f"- {m.title} ({m.kind})" for m in nearest]
    if plan.filled is not None and plan.filled.code:
        lines.append(f"A worked example filled for this question:\n```python\n{plan.filled.code}```")
    return "\n".join(lines) or "none"


def _context(box: Toolbox, left: int, divergence: bool) -> str:
    rt = box.runtime
    parts = [f"Runtime state: {rt.state}. Model calls left: {left}.", rt.inventory()]
    if rt.intents:
        parts.append("Data fetched so far:\n" + "\n".join(f"- {i}" for i in rt.intents[-5:]))
    failed = [c for c in rt.calls if c.status != "ok"]
    if failed:
        listed = "\n".join(
            f"- {c.call_id} {c.tool} {json.dumps(c.arguments)[:300]} -> {c.status}: {c.observation[:300]}"
            for c in failed[-6:]
        )
        parts.append(
            f"## Previous failed attempts\nThese FAILED. Do NOT repeat them; try something different:\n{listed}"
        )
    if box.validation is not None:
        parts.append(f"Latest validation: {box.validation.model_dump_json()}")
    if divergence:
        parts.append(DIVERGENCE)
    return "\n\n".join(parts)


def _messages(
    box: Toolbox,
    plan: AskPlan,
    summary: str,
    nearest: list[Any],
    history: list[dict[str, str]],
    left: int,
    divergence: bool,
) -> list[dict[str, str]]:
    from whyflow.runtime.llm import data_block

    user = (
        f"Question: {box.question}\n\n{data_block('data summary', summary[:4000])}\n\n"
        f"Similar worked examples:\n{_examples(plan, nearest)}"
    )
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": user},
        *history,
        {"role": "system", "content": _context(box, left, divergence)},
    ]


def _answer(
    box: Toolbox,
    plan: AskPlan,
    ctx: AgentContext,
    record: Any,
    code: str | None,
    caveats: list[str],
    confidence_cap: float = 1.0,
) -> FinalOutput:
    model_plan = plan.model_copy(update={"mode": "model", "reasoning": "the model's ReAct loop over the data tools"})
    notes = box.validation.notes if box.validation is not None else None
    final = computed_answer(
        box.question, model_plan, record, code, box.failed, notes, ctx.job_dir, explanation=box.explanation
    )
    update: dict[str, Any] = {
        "caveats": [*final.caveats, *box.caveats, *caveats],
        "confidence": min(final.confidence, confidence_cap),
    }
    if box.validation is not None:
        update["caveats"] += [s for s in box.validation.suggestions if s not in update["caveats"]]
    if box.figures and final.figure is None:
        update |= {"figure": box.figures[0], "output_type": "visualization"}
    update["charts"] = [*final.charts, *box.charts]
    update["reasoning_trace"] = [
        *final.reasoning_trace,
        *(f"{c.call_id} {c.tool}: {c.status}" for c in box.runtime.calls),
    ]
    return final.model_copy(update=update)


def _degrade(box: Toolbox, plan: AskPlan, ctx: AgentContext, iterations: int, why: str) -> TurnOutcome:
    """At the budget's end (or a spent limit): the best result with caveats, else nothing."""
    if box.best is None:
        return TurnOutcome(None, iterations, why)
    if box.current is not box.best or box.validation is None:
        box.current, box.validation = box.best, None
        box.runtime.count("forced_validations")
        box.call("validate_results", T.ValidateResultsArgs(question=box.question), "runtime")
    validated = box.validation is not None and box.validation.is_valid
    caveats = [
        f"the analysis stopped before its final answer ({why}); "
        + ("its result passed validation" if validated else "this is its best result, not validated")
    ]
    if box.validation is not None and not box.validation.is_valid:
        caveats += [f"validation found: {issue}" for issue in box.validation.issues]
    final = _answer(box, plan, ctx, box.best, box.best_code, caveats, 0.6 if validated else 0.4)
    return TurnOutcome(final, iterations, f"graceful degradation: {why}")


def _author(ctx: AgentContext, box: Toolbox, summary: str) -> Any:
    """write_code from an approach in words: the model writes the code (one text call)."""
    from whyflow.ask._shared import llm_text
    from whyflow.runtime.llm import data_block
    from whyflow.runtime.llm.parse import strip_code_fences

    def write(approach: str) -> str | None:
        prompt = f"Question: {box.question}\nApproach: {approach}\n\n{data_block('data summary', summary[:3000])}"
        reply = llm_text(ctx.llm, CODE_RULES, prompt, purpose="react_write_code")
        return strip_code_fences(reply).strip() + "\n" if reply else None

    return write


def react_turn(
    box: Toolbox, plan: AskPlan, summary: str, nearest: list[Any], ctx: AgentContext, budget: int, params: Any
) -> TurnOutcome:
    """Run the model's loop for one question; see the module doc for the safeguards."""
    llm, rt = ctx.llm, box.runtime
    box.author = _author(ctx, box, summary)
    history: list[dict[str, str]] = []
    divergence, detections = False, 0
    for iteration in range(1, budget + 1):
        messages = _messages(box, plan, summary, nearest, history, budget - iteration + 1, divergence)
        divergence = False
        before = len(getattr(llm, "rejections", []))
        rt.count("model_calls")
        reply = llm.tool_call(messages, T.REACT_TOOLS, purpose="react_step", max_tokens=900)
        rt.count("corrective_turns", len(getattr(llm, "rejections", [])) - before)
        if reply is None:
            return TurnOutcome(
                None, iteration, "no usable tool call (the call failed, or junk after one corrective turn)"
            )
        if isinstance(reply, str):  # prose: the model's final answer
            name, args = "finalize", T.FinalizeArgs(answer=reply)
            history.append({"role": "assistant", "content": reply[:2000]})
        else:
            name, args = reply.name, reply.arguments
            call = {"name": name, "arguments": args.model_dump(mode="json")}
            history.append({"role": "assistant", "content": f"<tool_call>{json.dumps(call)[:3000]}</tool_call>"})
        obs = box.call(name, args, origin="model")
        history.append({"role": "user", "content": f"Observation {obs.call_id} ({obs.tool}, {obs.status}): {obs.text}"})
        if box.finalized:
            return TurnOutcome(_answer(box, plan, ctx, box.current, box.code, []), iteration, "finalize")
        if rt.counters.code_failures >= params.max_code_retries:
            return _degrade(box, plan, ctx, iteration, f"{rt.counters.code_failures} failed code runs")
        if rt.counters.validation_failures >= params.max_validation_failures:
            return _degrade(box, plan, ctx, iteration, f"{rt.counters.validation_failures} failed validations")
        if detect_loop(rt.calls):
            rt.count("loop_detections")
            detections += 1
            if detections >= 2:
                return _degrade(box, plan, ctx, iteration, "the loop persisted after forced divergence")
            divergence = True
        elif not obs.is_error:
            detections = 0
    return _degrade(box, plan, ctx, budget, f"the budget of {budget} model calls was spent")
