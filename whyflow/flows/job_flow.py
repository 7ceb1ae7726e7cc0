"""The Prefect flow every run goes through: load the recipe, open or start the job, run it.

``whyflow run``, ``whyflow ask`` (Prefect engine), the chat page and the deployments all run
:func:`analysis_flow` (built by :func:`build_flow` with the recipe's name and task runner). Its
body hands a job to its family: an ask job to :func:`whyflow.flows.ask_jobs.flow.run_ask_job`, a causal job
to the runner here, with the progress and summary artifacts.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from prefect import flow

from whyflow.ask.state import AskState
from whyflow.flows.errors import RunCancelled, RunFailed
from whyflow.flows.jobstore.jobs import RunRequest, prepare_job
from whyflow.flows.jobstore.store import JobFolder
from whyflow.flows.recipes.nodes import Plan
from whyflow.flows.recipes.plan import load_plan
from whyflow.flows.running.compile import PrefectExecutor, PrefectPartMapper, make_task_runner, part_width
from whyflow.flows.running.progress import FanOutReporter, LogReporter, Reporter
from whyflow.flows.running.runner import Runner
from whyflow.runtime.parallel import use_mapper

__all__ = ["analysis_flow", "build_flow", "run_job", "set_console_reporter"]


def run_job(plan: Plan, folder: JobFolder, reporter: Reporter | None = None) -> Any:
    """The flow's body: run the plan on the job in ``folder`` with Prefect tasks.

    Returns a summary dict, or a Prefect Failed/Cancelled state so the flow run ends in it
    without a traceback in the logs (the reason is in the job's state).
    """
    from prefect.logging import get_run_logger
    from prefect.states import Cancelled, Failed

    from whyflow.flows.running.artifacts import ProgressArtifactReporter, publish_run

    state = folder.load_any()
    if isinstance(state, AskState):
        from whyflow.flows.ask_jobs.flow import run_ask_job

        return run_ask_job(plan, folder, state, PrefectExecutor(plan), reporter)
    logger = get_run_logger()
    reporters: list[Reporter] = [LogReporter(logger), ProgressArtifactReporter()]
    if reporter is not None:
        reporters.insert(0, reporter)
    runner = Runner(plan, folder, state, PrefectExecutor(plan), FanOutReporter(*reporters))
    try:
        with use_mapper(PrefectPartMapper(threading.get_ident(), part_width(plan))):
            runner.run()
    except RunFailed as exc:
        publish_run(plan, folder, state, logger)
        return Failed(message=str(exc))
    except RunCancelled as exc:
        publish_run(plan, folder, state, logger)
        return Cancelled(message=str(exc))
    drift = publish_run(plan, folder, state, logger)
    return {
        "job_id": state.job_id,
        "job_dir": str(folder.path),
        "status": state.status.value,
        "drift_flags": list(drift.get("flags") or []),
    }


def build_flow(plan: Plan, run_name: str | None = None) -> Any:
    """The Prefect flow for ``plan``: named after the recipe, with the recipe's task runner."""
    return analysis_flow.with_options(
        name=plan.name,
        task_runner=make_task_runner(plan),
        flow_run_name=run_name,
        description=plan.description or None,
    )


_console: list[Reporter] = []
"""A console reporter the CLI installs for the duration of a run (not a flow parameter)."""


def set_console_reporter(reporter: Reporter | None) -> None:
    """Show progress of flows started from this process on ``reporter`` (``None`` to stop)."""
    _console.clear()
    if reporter is not None:
        _console.append(reporter)


@flow(name="whyflow", persist_result=False, log_prints=False)
def analysis_flow(
    recipe: str,
    data: str | None = None,
    treatment: str | None = None,
    outcome: str | None = None,
    job_dir: str | None = None,
    output: str | None = None,
    overrides: dict[str, str] | None = None,
) -> Any:
    """Run a recipe: on an existing job folder (``job_dir``), or on ``data`` as a new job."""
    plan = load_plan(recipe, overrides or {})
    if job_dir is not None:
        folder = JobFolder(Path(job_dir))
    else:
        if data is None:
            raise ValueError("either job_dir or data is needed")
        request = RunRequest(
            recipe=recipe, data=data, treatment=treatment, outcome=outcome, output=output, overrides=overrides or {}
        )
        folder = prepare_job(request, plan)
    return run_job(plan, folder, _console[0] if _console else None)
