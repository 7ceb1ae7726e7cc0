"""The flow body of an ask job: run the plan, write answer.json/answer.html, publish artifacts.

:func:`whyflow.flows.job_flow.run_job` hands an :class:`~whyflow.ask.state.AskState` job here, so
`whyflow ask`, `whyflow resume` and the ``ask`` deployment share one path. The answer, any
table and any chart become Prefect artifacts (keys per recipe, so the UI keeps one versioned
series), and the run is compared with the previous answer to the same question on the same data
source (drift flags in ``run.json``; ``whyflow history`` lists the answers over time).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from whyflow.ask.state import AskState, FinalOutput
from whyflow.flows.errors import RunCancelled, RunFailed
from whyflow.flows.jobstore.store import JobFolder
from whyflow.flows.recipes.nodes import Plan
from whyflow.flows.running.progress import FanOutReporter, LogReporter, Reporter
from whyflow.flows.running.runner import Executor, Runner

__all__ = ["run_ask_job", "write_answer", "finish_answer", "publish_answer"]

_log = logging.getLogger("whyflow.ask")


def write_answer(folder: JobFolder, state: AskState) -> None:
    """``answer.json`` (the FinalOutput) and a self-contained ``answer.html`` in the job folder."""
    final = state.final_output
    if final is None:
        final = FinalOutput(
            answer=f"No answer: {state.error_agent or 'the run'} failed: {state.error_message or state.status.value}",
            confidence=0.0,
            output_type="error",
        )
    (folder.path / "answer.json").write_text(final.model_dump_json(indent=2), encoding="utf-8")
    try:
        from whyflow.ask.tools.render import render_answer_html

        html = render_answer_html(final, question=state.question)
    except ImportError:
        html = None
    except Exception as exc:  # noqa: BLE001 - the page is a view; answer.json is the record
        _log.warning("answer.html not written: %s", exc)
        html = None
    if html is not None:
        (folder.path / "answer.html").write_text(html, encoding="utf-8")


def finish_answer(plan: Plan, folder: JobFolder, state: AskState) -> dict[str, Any]:
    """The answer files and the drift record of a finished run (either engine); the drift."""
    write_answer(folder, state)
    try:
        return _record_drift(plan, folder)
    except Exception as exc:  # noqa: BLE001 - drift is a comparison; the answer stands without it
        _log.warning("drift not recorded: %s", exc)
        return {}


def _record_drift(plan: Plan, folder: JobFolder) -> dict[str, Any]:
    from whyflow.flows.jobstore.history import compute_drift, previous_completed, read_record
    from whyflow.flows.running.artifacts import history_roots

    current = read_record(folder)
    if current is None or not current.completed:
        return {}
    drift = compute_drift(current, previous_completed(current, history_roots(folder)), plan.settings.drift)
    run = folder.read_run()
    run["drift"] = drift
    folder.write_run(run)
    return drift


def _markdown(state: AskState, drift: dict[str, Any]) -> str:
    final = state.final_output
    lines = [f"# {state.question}", ""]
    if final is None:
        lines.append(f"**No answer** — {state.error_message or state.status.value}")
        return "\n".join(lines)
    lines += [final.answer, "", f"*{final.output_type}, confidence {final.confidence:.2f}*"]
    if final.caveats:
        lines += ["", "## Caveats"] + [f"- {c}" for c in final.caveats]
    if final.code:
        lines += ["", "## Code", "```python", final.code.rstrip(), "```"]
    if drift.get("flags"):
        lines += ["", "## Drift"] + [f"- ⚠️ {f}" for f in drift["flags"]]
    if state.runtime is not None:  # the ReAct data scientist's run summary (seed 003's counters)
        rt = state.runtime
        counters = rt.counters.model_dump(exclude_none=True)
        lines += ["", "## Runtime", f"{rt.mode}, {len(rt.tool_calls)} tool calls, ended by {rt.ended_by}", ""]
        lines += [f"- {k}: {v}" for k, v in counters.items()]
        lines += [
            "",
            "Transitions: " + " → ".join([rt.transitions[0].source] + [t.target for t in rt.transitions if t.accepted])
            if rt.transitions
            else "Transitions: none",
        ]
    return "\n".join(lines)


def publish_answer(plan: Plan, folder: JobFolder, state: AskState, drift: dict[str, Any]) -> None:
    """The answer, any table and any chart as Prefect artifacts (never fatal)."""
    from whyflow.flows.ask_jobs.job import result_rows
    from whyflow.flows.running.artifacts import artifact_key

    try:
        from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact

        create_markdown_artifact(_markdown(state, drift), key=artifact_key(plan.name, "answer"), description="answer")
        final = state.final_output
        rows = result_rows(final.result) if final else []
        if rows:
            create_table_artifact(json.loads(json.dumps(rows[:500], default=str)), key=artifact_key(plan.name, "table"))
        for chart in final.charts if final else []:
            create_link_artifact(f"file://{chart}", link_text="chart", key=artifact_key(plan.name, "chart"))
        if final and final.figure:
            spec = json.dumps(final.figure, indent=1)
            create_markdown_artifact(f"```json\n{spec}\n```", key=artifact_key(plan.name, "chart-spec"))
    except Exception as exc:  # noqa: BLE001 - artifacts are a view
        _log.warning("could not publish the answer artifacts: %s", exc)


def run_ask_job(plan: Plan, folder: JobFolder, state: AskState, executor: Executor, reporter: Reporter | None) -> Any:
    """Run an ask job inside a flow; return a summary, or Prefect's Failed/Cancelled state."""
    from prefect.logging import get_run_logger
    from prefect.states import Cancelled, Failed

    from whyflow.flows.running.artifacts import ProgressArtifactReporter

    logger = get_run_logger()
    reporters: list[Reporter] = [LogReporter(logger), ProgressArtifactReporter()]
    if reporter is not None:
        reporters.insert(0, reporter)
    runner = Runner(plan, folder, state, executor, FanOutReporter(*reporters))
    outcome: Any = None
    try:
        runner.run()
    except RunFailed as exc:
        outcome = Failed(message=str(exc))
    except RunCancelled as exc:
        outcome = Cancelled(message=str(exc))
    drift = finish_answer(plan, folder, state)
    publish_answer(plan, folder, state, drift)
    if outcome is not None:
        return outcome
    final = state.final_output
    return {
        "job_id": state.job_id,
        "job_dir": str(folder.path),
        "status": state.status.value,
        "answer": final.answer if final else None,
        "output_type": final.output_type if final else None,
        "drift_flags": list(drift.get("flags") or []),
    }
