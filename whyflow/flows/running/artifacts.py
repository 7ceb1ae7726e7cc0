"""Prefect artifacts for a run: live progress, a summary, every estimate, links and history.

At the end of a run (in the flow, so the artifacts belong to its flow run) :func:`publish_run`

* compares the job with the previous completed run of the recipe on the same data source and
  records drift flags in ``run.json`` (and as warnings in the run's log),
* creates a Markdown summary (headline with interval and why it leads, critique decision, data
  fingerprint, drift), a table of every estimate, link artifacts to the report and the job
  folder, and a Markdown history of the recipe on that data.

Keys are per recipe (``quick-estimate-summary``), so the UI's Artifacts page keeps one versioned
series per recipe. Artifacts are a view: a failure to create one is logged, never fatal.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from whyflow.flows.jobstore.history import compute_drift, history_markdown, previous_completed, read_record, records_for
from whyflow.flows.jobstore.summary import fmt
from whyflow.flows.running.progress import Reporter

if TYPE_CHECKING:
    from whyflow.causal.state import AnalysisState
    from whyflow.core.agent import AgentResult
    from whyflow.flows.jobstore.history import RunRecord
    from whyflow.flows.jobstore.store import JobFolder
    from whyflow.flows.recipes.nodes import AgentNode, Plan

__all__ = ["ProgressArtifactReporter", "artifact_key", "publish_run", "publish_reused", "history_roots"]

_log = logging.getLogger("whyflow.artifacts")


def artifact_key(recipe: str, kind: str) -> str:
    """A valid artifact key (lowercase letters, digits, dashes) for ``kind`` of ``recipe``."""
    slug = re.sub(r"[^a-z0-9-]+", "-", f"{recipe}-{kind}".lower()).strip("-")
    return re.sub(r"-{2,}", "-", slug)


class ProgressArtifactReporter(Reporter):
    """Mirrors the runner's progress in a Prefect progress artifact, updated after every agent."""

    def __init__(self) -> None:
        self._id: Any = None

    def _update(self, progress: float, description: str) -> None:
        from prefect.artifacts import update_progress_artifact

        if self._id is None:
            return
        try:
            update_progress_artifact(self._id, progress=float(progress), description=description)
        except Exception as exc:  # noqa: BLE001 - progress display must not break a run
            _log.warning("could not update the progress artifact: %s", exc)

    def run_started(self, plan: Plan, state: AnalysisState) -> None:
        from prefect.artifacts import create_progress_artifact

        try:
            self._id = create_progress_artifact(
                progress=float(state.progress_percentage),
                key=artifact_key(plan.name, "progress"),
                description=f"{plan.name}: job {state.job_id} started",
            )
        except Exception as exc:  # noqa: BLE001
            _log.warning("could not create the progress artifact: %s", exc)

    def step_finished(self, key: str, node: AgentNode, result: AgentResult, state: AnalysisState) -> None:
        self._update(state.progress_percentage, f"{key} done: {result.summary or 'ok'}"[:300])

    def run_finished(self, state: AnalysisState, folder: JobFolder) -> None:
        self._update(100.0, f"job {state.job_id} completed")

    def run_failed(self, state: AnalysisState) -> None:
        self._update(state.progress_percentage, f"failed in {state.error_agent}: {state.error_message}"[:300])

    def run_cancelled(self, state: AnalysisState) -> None:
        self._update(state.progress_percentage, f"job {state.job_id} cancelled")


def history_roots(folder: JobFolder) -> list[Path | str | None]:
    """Where earlier jobs of this job's recipe live: its own parent and the runs folder it used."""
    request = folder.read_run().get("request") or {}
    return [folder.path.parent, request.get("runs_dir")]


# ---- Markdown -----------------------------------------------------------------------------
def _fingerprint_md(record: RunRecord) -> str:
    return f"`{record.data}` — {record.rows} rows × {record.columns} columns, sha256 `{record.sha256[:16]}…`"


def _drift_md(drift: dict[str, Any]) -> list[str]:
    if drift.get("previous_job") is None:
        return ["- " + note for note in drift.get("notes") or ["no earlier completed run to compare with"]]
    head = f"Compared with job `{drift['previous_job']}`:"
    flags = drift.get("flags") or []
    lines = [head] + [f"- ⚠️ {flag}" for flag in flags] + [f"- {n}" for n in drift.get("notes") or []]
    if not flags:
        lines.append("- nothing moved beyond the recipe's drift thresholds")
    return lines


def summary_markdown(state: AnalysisState, record: RunRecord, drift: dict[str, Any], folder: JobFolder) -> str:
    """The run's summary: status, headline and why, critique, data fingerprint, drift, files."""
    lines = [f"# {record.recipe_name} — job `{state.job_id}`", "", f"**Status:** {state.status.value}"]
    if state.error_message:
        lines.append(
            f"  \n**Reason:** {state.error_message}" + (f" (in `{state.error_agent}`)" if state.error_agent else "")
        )
    lines += ["", "## Headline estimate"]
    head = record.headline
    if head:
        lines.append(
            f"**{head['method']}**: effect of `{head['treatment']}` on `{head['outcome']}` "
            f"({head['estimand']}) = **{fmt(head['estimate'])}** "
            f"(95% CI {fmt(head['ci_lower'])} to {fmt(head['ci_upper'])})"
        )
        lines.append("")
        lines.append(f"*Why it leads:* {head.get('reason') or 'chosen by the estimator rule'}")
    else:
        lines.append("No headline estimate (the run did not reach estimation).")
    lines += ["", "## Critique"]
    if state.critique_history:
        last = state.critique_history[-1]
        lines.append(f"Decision **{last.decision.value}** after {len(state.critique_history)} round(s).")
        lines += [f"- {issue}" for issue in last.issues[:5]]
    else:
        lines.append("No critique step in this recipe (or it did not run).")
    quality = f"{record.quality:.0f}/100" if record.quality is not None else "n/a (no EDA step)"
    lines += ["", "## Data", f"{_fingerprint_md(record)}; quality score {quality}", "", "## Drift"]
    lines += _drift_md(drift)
    lines += ["", "## Files", f"- job folder: `{folder.path.resolve()}`"]
    if state.notebook_path:
        lines.append(f"- notebook: `{state.notebook_path}`")
    return "\n".join(lines) + "\n"


def _estimate_rows(state: AnalysisState) -> list[dict[str, Any]]:
    return [
        {
            "treatment": e.treatment_variable,
            "outcome": e.outcome_variable,
            "method": e.method,
            "estimand": e.estimand,
            "estimate": round(e.estimate, 6),
            "std_error": round(e.std_error, 6),
            "ci_lower": round(e.ci_lower, 6),
            "ci_upper": round(e.ci_upper, 6),
            "p_value": None if e.p_value is None else round(e.p_value, 6),
            "headline": "★" if e.details.headline else "",
        }
        for e in state.treatment_effects
    ]


def _report_link(state: AnalysisState) -> Path | None:
    if not state.notebook_path:
        return None
    html = Path(state.notebook_path).with_suffix(".html")
    return html if html.exists() else Path(state.notebook_path)


# ---- publishing ----------------------------------------------------------------------------
def record_drift(plan: Plan, folder: JobFolder) -> tuple[RunRecord | None, dict[str, Any]]:
    """Compare the job with the previous completed run and save the result in ``run.json``."""
    record = read_record(folder)
    if record is None:
        return None, {}
    drift: dict[str, Any] = {}
    if record.completed:
        drift = compute_drift(record, previous_completed(record, history_roots(folder)), plan.settings.drift)
        run = folder.read_run()
        run["drift"] = drift
        folder.write_run(run)
    return record, drift


def _safe(what: str, fn: Any, *args: Any, **kwargs: Any) -> None:
    try:
        fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - artifacts are a view, never a reason to fail
        _log.warning("could not create the %s artifact: %s", what, exc)


def publish_run(plan: Plan, folder: JobFolder, state: AnalysisState, logger: Any = None) -> dict[str, Any]:
    """Record drift and create the run's artifacts; returns the drift found."""
    from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact

    log = logger or _log
    record, drift = record_drift(plan, folder)
    if record is None:
        return {}
    for flag in drift.get("flags") or []:
        log.warning("drift since job %s: %s", drift.get("previous_job"), flag)
    name = plan.name
    _safe(
        "summary",
        create_markdown_artifact,
        summary_markdown(state, record, drift, folder),
        key=artifact_key(name, "summary"),
        description=f"{name} job {state.job_id}: {state.status.value}",
    )
    rows = _estimate_rows(state)
    if rows:
        _safe(
            "estimates",
            create_table_artifact,
            rows,
            key=artifact_key(name, "estimates"),
            description=f"Every estimate of job {state.job_id} (★ = headline)",
        )
    report = _report_link(state)
    if report is not None:
        _safe(
            "report link",
            create_link_artifact,
            report.resolve().as_uri(),
            link_text=f"{report.name} of job {state.job_id}",
            key=artifact_key(name, "report"),
            description="The analysis notebook (open the file on the machine that ran the job)",
        )
    _safe(
        "job folder link",
        create_link_artifact,
        folder.path.resolve().as_uri(),
        link_text=f"job folder {folder.path.resolve()}",
        key=artifact_key(name, "job-folder"),
        description="state.json, traces.jsonl, run.json, data/, plots/ and the report",
    )
    publish_history(name, record.data, history_roots(folder))
    return drift


def publish_history(recipe_name: str, data: str, roots: list[Path | str | None]) -> None:
    """A Markdown table of every run of ``recipe_name`` on ``data`` (newest last)."""
    from prefect.artifacts import create_markdown_artifact

    records = records_for(recipe_name, data, roots)
    if records:
        _safe(
            "history",
            create_markdown_artifact,
            history_markdown(records, f"{recipe_name} on {Path(data).name or data}"),
            key=artifact_key(recipe_name, "history"),
            description=f"Runs of {recipe_name} on {data}, newest last",
        )


def publish_reused(recipe_name: str, previous: RunRecord, current_sha: str, roots: list[Path | str | None]) -> None:
    """Artifacts of a run that reused a previous job because data and question are unchanged."""
    from prefect.artifacts import create_link_artifact, create_markdown_artifact

    head = previous.headline
    text = "\n".join(
        [
            f"# {recipe_name} — results reused from job `{previous.job_id}`",
            "",
            f"The data's content is unchanged (sha256 `{current_sha[:16]}…`) and so are the recipe and the "
            "question, so the completed job's results stand. Run with `force: true` to recompute.",
            "",
            f"**Headline:** {head['method']} = {fmt(head['estimate'])} (95% CI {fmt(head['ci_lower'])} to "
            f"{fmt(head['ci_upper'])})"
            if head
            else "**Headline:** n/a",
            "",
            f"**Critique:** {previous.decision or 'n/a'} · **Job folder:** `{previous.path}`",
        ]
    )
    _safe("summary", create_markdown_artifact, text, key=artifact_key(recipe_name, "summary"), description="reused")
    _safe(
        "job folder link",
        create_link_artifact,
        previous.path.resolve().as_uri(),
        link_text=f"job folder {previous.path}",
        key=artifact_key(recipe_name, "job-folder"),
    )
    publish_history(recipe_name, previous.data, roots)
