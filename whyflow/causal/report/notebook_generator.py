"""The report: an executed, reproducible Jupyter notebook rendered from Jinja templates.

The agent turns its typed view of the state into a template context
(:mod:`whyflow.causal.report.context`; every number in the prose comes from the state), renders
``templates/report.ipynb.j2`` (or the recipe's own template) into nbformat cells, writes
``report.ipynb`` before anything can fail, executes it with nbclient in the job folder and
exports ``report.html``. Code cells reload the job's data and ``state.json`` and
recompute the headline estimate and the propensity model, asserting that the headline matches
the run, and show the run's refuter results. An execution error is recorded, never raised.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pydantic import Field

from whyflow.causal.report.context import build_context
from whyflow.causal.state import AnalysisState
from whyflow.causal.view import AnalysisView
from whyflow.core.agent import Agent, AgentContext, AgentParams, AgentResult
from whyflow.core.errors import AgentError
from whyflow.core.status import JobStatus

__all__ = ["NotebookGeneratorAgent", "NotebookGeneratorParams"]

_READS: tuple[str, ...] = (
    "raw_metadata",
    "domain_knowledge",
    "dataframe_path",
    "eda_result",
    "proposed_dag",
    "treatment_effects",
    "sensitivity_results",
    "confounder_discovery",
    "ps_diagnostics",
    "data_repairs",
    "debate_history",
    "critique_history",
    "recommendations",
    "agent_traces",
    "created_at",
)


class NotebookGeneratorParams(AgentParams):
    """Recipe options: template, whether to execute, time limit in seconds (whole notebook), HTML export, figure sample."""

    template: str | None = Field(None, description="template file name (None: report.ipynb.j2)")
    template_dir: str | None = Field(None, description="folder searched for templates before the built-in ones")
    execute: bool = Field(True, description="execute the notebook")
    timeout: int = Field(default=300, ge=1, description="seconds the whole notebook may run")
    html: bool = Field(True, description="export HTML")
    title: str | None = Field(None, description="report title")
    sample_rows: int = Field(
        default=100_000,
        ge=100,
        description="above this many rows, figures and the propensity diagnostics' model use a seeded random sample of this size",
    )


class NotebookGeneratorAgent(Agent[NotebookGeneratorParams]):
    """Writes ``report.ipynb`` (executed) and ``report.html`` into the job folder."""

    STATE_MODEL = AnalysisState
    NAME = "notebook_generator"
    DESCRIPTION = "Render, execute and export the reproducible report notebook"
    REQUIRED_STATE_FIELDS = ("data_profile",)
    OPTIONAL_STATE_FIELDS = _READS
    WRITES_STATE_FIELDS = ("notebook_path",)
    JOB_STATUS = JobStatus.GENERATING_NOTEBOOK
    PRELOAD_MODULES = ("jinja2", "nbformat", "nbclient", "nbconvert")
    PROGRESS_WEIGHT = 1.5

    Params = NotebookGeneratorParams

    @classmethod
    def warm_up(cls, params: NotebookGeneratorParams, job_dir: Path) -> Callable[[], None] | None:
        """Start the report's kernel when the run starts, so it is warm by the time it is needed."""
        if not params.execute:
            return None
        from whyflow.causal.report.kernels import start_warm_kernel

        return start_warm_kernel(Path(job_dir))

    def run(self, view: AnalysisView, params: NotebookGeneratorParams, ctx: AgentContext) -> AgentResult:
        """Render the notebook, write it, execute it, export HTML and report what happened."""
        from whyflow.causal.report import notebook as nbk

        job_dir = Path(ctx.job_dir).resolve()
        job_dir.mkdir(parents=True, exist_ok=True)
        snapshot = _snapshot(view)  # what the notebook's cells read when state.json is older than this view
        (job_dir / "report_state.json").write_text(json.dumps(snapshot, indent=2, default=str), encoding="utf-8")
        context = build_context(view, job_dir, ctx.seed, params.title)
        context["sample_rows"] = params.sample_rows
        env = nbk.make_environment(params.template_dir)
        text = nbk.render_template(env, params.template or "report.ipynb.j2", context)
        cells = nbk.split_cells(text)
        if not cells:
            raise AgentError("the notebook template rendered no cells")
        nb = nbk.build_notebook(cells, {"job_id": view.job_id, "state_file": context["paths"]["state_file"]})
        nb_path = job_dir / "report.ipynb"
        _write(nbk, nb, nb_path)
        outputs: dict[str, Any] = {
            "notebook": str(nb_path),
            "n_cells": len(nb.cells),
            "state_file": context["paths"]["state_file"],
        }
        reasons = [
            f"rendered {len(nb.cells)} cells from {params.template or 'report.ipynb.j2'}"
            + (f" (user templates first: {params.template_dir})" if params.template_dir else ""),
            *context["decisions"],
        ]
        errors: list[dict[str, Any]] = []
        exporter = _warm_exporter(nbk) if params.html else None
        if params.execute:
            from whyflow.runtime.children import time_limit

            started = time.perf_counter()
            with time_limit(params.timeout) as expired:  # the whole run, not only each cell; no kernel left behind
                report = nbk.execute_notebook(nb, job_dir, params.timeout)
            outputs["execution_s"] = round(time.perf_counter() - started, 2)
            outputs["warm_kernel"] = report.warm_kernel
            errors = report.errors
            if expired.is_set():
                errors = [
                    *errors,
                    {
                        "cell": None,
                        "ename": "TimeLimit",
                        "source": "",
                        "evalue": f"execution stopped at the time limit of {params.timeout} s",
                    },
                ]
            nb.metadata["whyflow"]["execution_errors"] = errors
            _write(nbk, nb, nb_path)
            reasons.append(_execution_reason(report, outputs["execution_s"]))
        if params.html:
            outputs["html"], note = _html(nbk, nb, job_dir / "report.html", exporter)
            reasons.append(note)
        outputs.update(execution_errors=errors, reproduced=nbk.headline_reproduced(nb))
        return AgentResult(
            updates={"notebook_path": str(nb_path)},
            summary=_summary(params.execute, errors, outputs),
            reasoning="; ".join(reasons),
            outputs=outputs,
            tools_called=[
                "jinja2",
                "nbformat",
                *(["nbclient"] if params.execute else []),
                *(["nbconvert"] if params.html else []),
            ],
        )


# ---- running helpers ----------------------------------------------------------------------------
def _write(nbk: Any, nb: Any, path: Path) -> None:
    """Write the notebook; a failed write (full disk) leaves no ``.tmp`` behind and says why."""
    try:
        nbk.write_notebook(nb, path)
    except OSError as exc:
        path.with_suffix(".ipynb.tmp").unlink(missing_ok=True)
        raise AgentError(f"cannot write {path}: {exc.strerror or exc}") from exc


def _warm_exporter(nbk: Any) -> Future[Any]:
    """The HTML exporter, warmed on a thread of its own while the kernel executes the notebook."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="whyflow-html")
    try:
        return pool.submit(nbk.html_exporter, True)
    finally:
        pool.shutdown(wait=False)


def _html(nbk: Any, nb: Any, path: Path, exporter: Future[Any] | None = None) -> tuple[str | None, str]:
    try:
        ready = exporter.result() if exporter is not None else None
    except Exception:  # noqa: BLE001 - a warm-up that failed only loses its head start
        ready = None
    try:
        nbk.export_html(nb, path, ready)
    except Exception as exc:  # noqa: BLE001 - HTML is a convenience; the notebook is the report
        return None, f"HTML export failed ({type(exc).__name__}: {exc}); the notebook is intact"
    return str(path), f"exported {path.name}"


def _execution_reason(report: Any, seconds: float) -> str:
    if not report.errors:
        return f"executed every cell without error in {seconds:.1f} s"
    first = report.errors[0]
    return (
        f"execution found {len(report.errors)} failing cell(s); first: cell {first['cell']} "
        f"{first['ename']}: {first['evalue'][:200]}; the notebook was saved with its outputs so far"
    )


def _summary(executed: bool, errors: list[dict[str, Any]], outputs: dict[str, Any]) -> str:
    repro = outputs.get("reproduced")
    if not executed:
        return f"report.ipynb written ({outputs['n_cells']} cells, not executed)"
    if errors:
        first = errors[0]
        return f"report.ipynb written but cell {first['cell']} failed ({first['ename']}: {first['evalue'][:120]})"
    tail = "; headline reproduced" if repro else ""
    return f"report.ipynb executed ({outputs['n_cells']} cells, {outputs.get('execution_s', 0):.0f} s){tail}"


def _snapshot(view: AnalysisView) -> dict[str, Any]:
    """The state as this agent sees it, JSON-ready (what the notebook reloads if needed)."""
    from whyflow.causal.report.notebook import jsonable

    readable = NotebookGeneratorAgent.reads()
    return {name: jsonable(getattr(view, name)) for name in AnalysisState.model_fields if name in readable}
