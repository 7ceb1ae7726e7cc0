"""The initial analysis of a freshly uploaded dataset (``whyflow/recipes/auto_analyze.yaml``).

Deterministic (always): the per-column table (Column, Type, Non-Null Count, Unique Count,
Description, Typical Values, Issues — every column), a 3–5 sentence summary and a session
title, from :mod:`whyflow.ask.tools.column_report`. With a model, the model explores with
``sql_query`` (on the ask runtime: duplicate calls skipped, artifacts remembered), writes the
summary with ``output_text`` and ends with ``finalize(session_title=...)``; a summary sentence
whose numbers appear neither in the table nor in a query result is dropped, and the table is
always the deterministic one, so it covers every column.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from whyflow.ask._shared import first_frame
from whyflow.ask.react_state import InvalidStateTransition, RuntimeState
from whyflow.ask.state import AskState, FinalOutput
from whyflow.ask.toolbox import Toolbox
from whyflow.ask.tools import analysis as T
from whyflow.ask.tools.column_report import HEADERS, column_report, dataset_summary, report_table, session_title
from whyflow.ask.view import AskView
from whyflow.core.agent import Agent, AgentContext, AgentParams, AgentResult
from whyflow.core.status import JobStatus

__all__ = ["AutoAnalystAgent", "AutoAnalystParams"]

_PROMPT = """You are a data analyst. The user just uploaded a dataset. Explore it with sql_query
(sample values, null counts, distributions, unique counts, basic statistics of key columns; only
SELECT over the view `data`), then call output_text once with a concise summary (3-5 sentences)
of what the dataset is about and the most important patterns, then call finalize with a short
descriptive session_title. The per-column table is produced for you. Only numbers you queried."""
_TOOLS = {"sql_query": T.SqlQueryCall, "output_text": T.OutputTextArgs, "finalize": T.FinalizeArgs}


class AutoAnalystParams(AgentParams):
    max_iterations: int = Field(8, ge=1, description="model calls for the exploration")
    """A default below the data scientist's budget for a complex question (10, in ``BUDGETS``)."""


class AutoAnalystAgent(Agent[AutoAnalystParams]):
    """The first analysis of a dataset: the per-column table, a summary and a title."""

    NAME = "auto_analyst"
    DESCRIPTION = (
        "a first look at a dataset: every column's type, counts, typical values and issues, a summary, a title"
    )
    STATE_MODEL = AskState
    REQUIRED_STATE_FIELDS = ("datasets",)
    OPTIONAL_STATE_FIELDS = ("data_summary",)
    WRITES_STATE_FIELDS = ("explanation", "final_output", "session_title", "runtime")
    JOB_STATUS = JobStatus.PROFILING
    PROGRESS_WEIGHT = 2.0

    Params = AutoAnalystParams

    def run(self, view: AskView, params: AutoAnalystParams, ctx: AgentContext) -> AgentResult:
        frame = first_frame(view.datasets)
        first = next(iter(view.datasets.values()))
        name = Path(first.source).stem
        rows = column_report(frame)
        summary, title = dataset_summary(name, frame, rows), session_title(name, frame)
        box = Toolbox(
            question="initial analysis",
            frame=frame,
            datasets={k: d.local_path for k, d in view.datasets.items()},
            job_dir=ctx.job_dir,
        )
        mode, ended_by, iterations = "deterministic", "deterministic report", 0
        try:
            if ctx.llm is not None:
                said, named, iterations, ended_by = _explore(box, ctx, view.data_summary, params.max_iterations, rows)
                if said:
                    summary, mode = said, "model"
                title = named or title
            table = report_table(rows)
            box.call("output_table", T.OutputTableArgs(title="Columns", headers=list(HEADERS), rows=table["rows"]))
            box.call("output_text", T.OutputTextArgs(text=summary))
            _complete(box)
        finally:
            box.close()
        flagged = sum(bool(r.issues) for r in rows)
        final = FinalOutput(
            answer=summary,
            confidence=0.9 if mode == "deterministic" else 0.75,
            output_type="analysis",
            result=table,
            caveats=[f"{flagged} of {len(rows)} columns have issues (see the Issues column)"] if flagged else [],
            reasoning_trace=[f"title: {title}", f"{len(rows)} columns profiled", f"summary by the {mode} path"],
        )
        runtime = box.runtime.summary(
            mode="model" if mode == "model" else ("model_fallback" if ctx.llm else "deterministic"),
            complexity="simple",
            budget=params.max_iterations,
            iterations=iterations,
            ended_by=ended_by,
        )
        result = AgentResult(
            updates={"explanation": summary, "final_output": final, "session_title": title, "runtime": runtime},
            summary=f"{title}: {len(rows)} columns, {flagged} with issues ({mode}); {box.runtime.counters_line()}",
            outputs={
                "transitions": [t.model_dump(mode="json") for t in runtime.transitions],
                "counters": runtime.counters.model_dump(mode="json"),
            },
            tools_called=[c.tool for c in runtime.tool_calls],
        )
        if ctx.llm is not None:
            ctx.llm.annotate(result, changed=["final_output"] if mode == "model" else [])
        return result


def _complete(box: Toolbox) -> None:
    try:
        box.runtime.transition(RuntimeState.COMPLETED, "finalize")
    except InvalidStateTransition:
        box.runtime.fail("cannot complete")
        box.runtime.transition(RuntimeState.COMPLETED, "finalize after an error")


def _explore(
    box: Toolbox, ctx: AgentContext, data_summary: str, budget: int, rows: list[Any]
) -> tuple[str | None, str | None, int, str]:
    """The model's exploration: (checked summary or None, title or None, model calls, why it ended)."""
    from whyflow.runtime.llm import data_block
    from whyflow.runtime.llm.validate import check_numbers, numbers_of

    history: list[dict[str, str]] = []
    text: str | None = None
    for iteration in range(1, budget + 1):
        context = box.runtime.inventory() + (
            ("\nData fetched so far:\n" + "\n".join(box.runtime.intents[-5:])) if box.runtime.intents else ""
        )
        messages = [
            {"role": "system", "content": _PROMPT},
            {"role": "user", "content": data_block("data summary", data_summary[:4000])},
            *history,
            {"role": "system", "content": context + f"\nModel calls left: {budget - iteration + 1}."},
        ]
        box.runtime.count("model_calls")
        reply = ctx.llm.tool_call(messages, _TOOLS, purpose="auto_analyze", max_tokens=600)
        if reply is None:
            return None, None, iteration, "no usable tool call (the call failed, or junk after one corrective turn)"
        if isinstance(reply, str):
            reply_name, args = "output_text", T.OutputTextArgs(text=reply)
        else:
            reply_name, args = reply.name, reply.arguments
        history.append({"role": "assistant", "content": f"{reply_name}: {args.model_dump_json()[:2000]}"})
        if isinstance(args, T.FinalizeArgs):
            facts = numbers_of([r.model_dump() for r in rows]) | numbers_of([c.observation for c in box.runtime.calls])
            kept = check_numbers(text, facts)[0] if text else ""
            return kept or None, (args.session_title or "").strip()[:80] or None, iteration, "finalize"
        if isinstance(args, T.OutputTextArgs):
            text = args.text
            history.append(
                {"role": "user", "content": "Observation: summary noted; call finalize with a session_title."}
            )
            continue
        obs = box.call(reply_name, args, origin="model")
        history.append({"role": "user", "content": f"Observation {obs.call_id} ({obs.status}): {obs.text}"})
    return None, None, budget, f"the budget of {budget} model calls was spent"
