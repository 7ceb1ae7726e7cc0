"""The handlers behind each `whyflow` subcommand."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from whyflow.causal.state import AnalysisState
from whyflow.cli.args import design_from_args, overrides_from_args, resolve_path
from whyflow.core.status import JobStatus
from whyflow.flows.errors import MetadataError, RecipeNotFound, RecipeSyntaxError, RecipeValidationError
from whyflow.flows.jobstore.store import JobFolder, JobStore
from whyflow.flows.recipes.metadata import read_metadata
from whyflow.flows.recipes.nodes import Plan
from whyflow.flows.recipes.plan import load_plan

if TYPE_CHECKING:
    from whyflow.ask.state import AskState

__all__ = ["cmd_validate", "cmd_run", "cmd_resume", "cmd_status", "cmd_list", "cmd_cancel", "cmd_agents", "cmd_history"]

_EXIT = {JobStatus.COMPLETED: 0, JobStatus.FAILED: 1, JobStatus.CANCELLED: 130}


def cmd_validate(args: argparse.Namespace) -> int:
    """Validate each recipe and the metadata file; report every problem; exit 1 if any is invalid."""
    failed = 0 if args.metadata is None else _validate_metadata(args.metadata)
    for recipe in args.recipes:
        try:
            plan = load_plan(recipe, overrides_from_args(args.set))
        except (RecipeSyntaxError, RecipeValidationError, RecipeNotFound) as exc:
            print(f"✗ {exc}", file=sys.stderr)
            failed += 1
            continue
        names = [n.key for n in plan.agent_nodes()]
        count = f"{len(names)} agent" + ("" if len(names) == 1 else "s")
        print(f"✓ {recipe}: recipe '{plan.name}' is valid — {count}: {', '.join(names)}")
    return 1 if failed else 0


def _validate_metadata(path: str) -> int:
    """Check a ``--metadata`` file against its spec; 1 if it is invalid, as for a recipe."""
    try:
        spec, _ = read_metadata(path)
    except MetadataError as exc:
        print(f"✗ {exc}", file=sys.stderr)
        return 1
    counts = [
        (len(spec.columns or {}), "column described", "columns described"),
        (len(spec.temporal_order or ()), "time tier", "time tiers"),
        (len(spec.forbidden_edges or ()), "forbidden edge", "forbidden edges"),
        (len(spec.required_edges or ()), "required edge", "required edges"),
    ]
    said = ", ".join(f"{n} {one if n == 1 else many}" for n, one, many in counts)
    print(f"✓ {path}: metadata is valid — {said}")
    return 0


def _execute(
    plan: Plan, folder: JobFolder, recipe_for_flow: str, overrides: dict[str, str], verbose: bool = False
) -> int:
    from whyflow.flows.running.interrupts import ended_by_signal, interrupt_guard, received

    def give_up() -> None:
        _cancel_interrupted(folder)
        print(f"whyflow: job cancelled; `whyflow resume {folder.path}` continues it", file=sys.stderr)

    def while_booting() -> None:
        """The run's imports, while Prefect's temporary server boots in its own process."""
        from whyflow.flows.running.progress import quiet_prefect_console
        from whyflow.flows.running.runner import preload

        if not verbose:
            quiet_prefect_console()
        preload(plan.agent_nodes())

    reporter_set = False
    try:
        with interrupt_guard(give_up):  # Ctrl-C during the imports below cancels the job too
            from whyflow.flows.running.temp_server import temporary_server

            with temporary_server(while_booting=while_booting):
                from whyflow.flows.job_flow import build_flow, set_console_reporter
                from whyflow.flows.running.progress import ConsoleReporter

                state = folder.load()
                set_console_reporter(ConsoleReporter())
                reporter_set = True
                flow = build_flow(plan, run_name=f"{plan.name}-{state.job_id}")
                ended = flow(
                    recipe=recipe_for_flow, job_dir=str(folder.path.resolve()), overrides=overrides, return_state=True
                )
            if received() is not None:
                _cancel_interrupted(folder)  # a signal the flow swallowed (Prefect's own handler took it)
            _fail_if_unfinished(folder, ended)
    except BaseException as exc:
        if not ended_by_signal(exc, folder.path):
            return 1
        _cancel_interrupted(folder)
    finally:
        if reporter_set:
            set_console_reporter(None)
    from whyflow.flows.jobstore.summary import job_summary

    state = folder.load()
    print()
    for line in job_summary(state, folder.path):
        print(line)
    if state.status is JobStatus.FAILED:
        print(f"whyflow: run failed in {state.error_agent}: {state.error_message}", file=sys.stderr)
        if (folder.path / "errors.log").exists():
            print(f"whyflow: the full traceback is in {folder.path / 'errors.log'}", file=sys.stderr)
        print(
            f"whyflow: everything written so far is kept; fix the cause and `whyflow resume {folder.path}`",
            file=sys.stderr,
        )
    elif state.status is JobStatus.CANCELLED:
        print(f"whyflow: job cancelled; `whyflow resume {folder.path}` continues it", file=sys.stderr)
    return _EXIT.get(state.status, 1)


def _fail_if_unfinished(folder: JobFolder, ended: object) -> None:
    """A flow that ended without the runner recording an end (e.g. a disk filled while it saved)
    leaves the job FAILED with Prefect's reason, so it is never shown as still running."""
    state = folder.load()
    if state.status.is_terminal:
        return
    reason = str(getattr(ended, "message", "") or "the flow ended without finishing").strip().splitlines()[0]
    folder.clean_temporary()
    state.mark_failed(f"the run stopped: {reason}", state.status.value)
    folder.save(state)


def _cancel_interrupted(folder: JobFolder) -> None:
    """Save the job as cancelled after a signal, unless it already ended; stop any notebook kernel."""
    from whyflow.flows.running.interrupts import cancel_job

    cancel_job(folder)


def cmd_run(args: argparse.Namespace) -> int:
    """Create a job for the data and run the recipe on it."""
    from whyflow.flows.jobstore.jobs import RunRequest, prepare_job

    overrides = overrides_from_args(args.set)
    plan = load_plan(args.recipe, overrides)
    request = RunRequest(
        recipe=str(Path(args.recipe).resolve()),
        data=resolve_path(args.data),
        treatment=args.treatment,
        outcome=args.outcome,
        output=args.output,
        overrides=overrides,
        design=design_from_args(args),
        metadata=args.metadata,
        job_id=args.job_id,
        runs_dir=args.runs_dir,
        table=args.table,
        query=args.query,
    )
    folder = prepare_job(request, plan)
    try:
        print(f"whyflow: job folder {folder.path}")
        run = folder.read_run()  # names the data without a database URL's password
        if run.get("fingerprint", {}).get("content_sha256"):
            prints = run["fingerprint"]
            what = f"table '{prints['table']}'" if prints.get("table") else "the query's rows"
            where = f"{prints['source']} into {run['data_local_path']}"
            print(f"whyflow: read {prints['rows']:,} rows of {what} from {where}")
        if run.get("read_note"):
            print(f"whyflow: read {run['data']}: {run['read_note']}")
        return _execute(plan, folder, str(folder.recipe_path.resolve()), overrides, args.verbose)
    except KeyboardInterrupt:  # before _execute's own guard: the job exists, so it is cancelled, not left pending
        _cancel_interrupted(folder)
        print(f"whyflow: job cancelled; `whyflow resume {folder.path}` continues it", file=sys.stderr)
        return 130


def cmd_resume(args: argparse.Namespace) -> int:
    """Continue a job, of either family, from its last completed step with the recipe as it was run.

    One path for both: the state (the previous good one when state.json is damaged), nothing to do
    when it completed, the data its remaining steps read, the recipe; only then is the job reopened
    and saved, so a resume that cannot start leaves the job as it was.
    """
    from whyflow.ask.state import AskState
    from whyflow.flows.errors import DamagedJob

    folder = JobStore(args.runs_dir).open(args.job)
    try:
        state = folder.load_any()
    except DamagedJob:
        state = folder.recover()  # raises DamagedJob itself when no good state was kept
        print("whyflow: state.json was damaged (kept as state.json.damaged); using the previous good state")
    if state.status is JobStatus.COMPLETED:
        print(f"whyflow: job {state.job_id} is already completed; nothing to resume")
        return 0
    overrides = dict(folder.read_run().get("overrides") or {})
    if isinstance(state, AskState):
        _check_ask_data(state)
    else:
        _check_data(state, folder)
    plan = load_plan(folder.recipe_path, overrides)
    done = len(state.completed_steps)
    if state.status in (JobStatus.FAILED, JobStatus.CANCELLED, JobStatus.CANCELLING):
        state.reopen()
    folder.clear_cancel()
    folder.save(state)
    print(f"whyflow: resuming job {state.job_id} in {folder.path} ({done} step(s) already done)")
    if isinstance(state, AskState):
        from whyflow.cli.ask import continue_ask

        return continue_ask(plan, folder, args.verbose)
    return _execute(plan, folder, str(folder.recipe_path.resolve()), overrides, args.verbose)


def _check_data(state: AnalysisState, folder: JobFolder) -> None:
    """Before a resume: the data file the steps still to run read must be there.

    Once the data profiler has run, they read the job folder's own copy (``dataframe_path``,
    the file as read), so a deleted original is said and the run goes on; before, there is no
    copy: one line naming the missing file, exit 2, the job untouched.
    """
    from whyflow.core.errors import DataError

    info = state.dataset_info
    original = Path(info.local_path) if info is not None and info.local_path else None
    if original is None or original.is_file():
        return
    copy = Path(state.dataframe_path) if state.dataframe_path else None
    if copy is not None and copy.is_file() and copy.resolve().is_relative_to(folder.path.resolve()):
        print(f"whyflow: data file {original} is gone; the job goes on with its own copy {copy}")
        return
    raise DataError(
        f"data file not found: {original} (the job has read none of it yet, so its folder holds no copy: "
        f"put the file back to resume, or start a new run)"
    )


def _check_ask_data(state: AskState) -> None:
    """:func:`_check_data` for an ask job: each dataset's copy in the job folder, else its file."""
    from whyflow.core.errors import DataError

    for ds in state.datasets.values():
        if Path(ds.local_path).is_file():
            if not Path(ds.source).is_file():
                print(f"whyflow: data file {ds.source} is gone; the job goes on with its own copy {ds.local_path}")
            continue
        if Path(ds.local_path) == Path(ds.source):
            raise DataError(f"data file not found: {ds.source} (the job's folder holds no copy of it: put it back)")
        raise DataError(f"the job's copy of {ds.source} is missing: {ds.local_path}")


def cmd_status(args: argparse.Namespace) -> int:
    """Print one job's status, progress, results and where its files are."""
    from whyflow.flows.jobstore.summary import job_summary

    folder = JobStore(args.runs_dir).open(args.job)
    state = folder.load_any()
    if not isinstance(state, AnalysisState):
        from whyflow.flows.ask_jobs.job import status_lines

        print("\n".join(status_lines(state, folder.path)))
        return 0
    for line in job_summary(state, folder.path):
        print(line)
    if state.completed_steps:
        print("Completed steps: " + ", ".join(state.completed_steps))
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    """Print every job under the runs folder, newest first."""
    jobs = JobStore(args.runs_dir).list()
    if not jobs:
        print(f"no jobs in {JobStore(args.runs_dir).root}")
        return 0
    print(f"{'JOB':<24} {'STATUS':<22} {'PROGRESS':>8}  {'RECIPE':<20} DATA")
    for job in jobs:
        print(f"{job.job_id:<24} {job.status:<22} {job.progress:>7.0f}%  {job.recipe:<20} {job.data}")
    return 0


def cmd_cancel(args: argparse.Namespace) -> int:
    """Ask a running job to stop after its current agent."""
    folder = JobStore(args.runs_dir).open(args.job)
    state = folder.load_any()
    if state.status.is_terminal:
        print(f"whyflow: job {state.job_id} is already {state.status.value}")
        return 0
    folder.request_cancel()
    print(f"whyflow: asked job {state.job_id} to stop after its current agent")
    return 0


def cmd_agents(args: argparse.Namespace) -> int:
    """List every registered agent with its contract."""
    from whyflow.registry import default_registry

    registry = default_registry()
    for name in registry.names():
        try:
            cls = registry.get(name)
        except Exception as exc:  # noqa: BLE001 - show broken plug-ins instead of crashing
            print(f"{name}: cannot load ({exc})")
            continue
        print(f"{name}  [{cls.JOB_STATUS.value}, weight {cls.PROGRESS_WEIGHT}]")
        print(f"    requires: {', '.join(cls.REQUIRED_STATE_FIELDS) or '-'}")
        if cls.OPTIONAL_STATE_FIELDS:
            print(f"    may read: {', '.join(cls.OPTIONAL_STATE_FIELDS)}")
        print(f"    writes:   {', '.join(cls.WRITES_STATE_FIELDS)}")
        params = ", ".join(f"{k}={v.default!r}" for k, v in cls.Params.model_fields.items())
        if params:
            print(f"    with:     {params}")
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    """Print every run of a recipe on one data source, newest last, with drift flags."""
    from whyflow.flows.jobstore.history import history_lines, recipe_name_of, records_for
    from whyflow.runtime.sources import SqlSource, is_sql_url

    name = recipe_name_of(args.recipe)
    data = resolve_path(args.data)
    if is_sql_url(data):
        data = SqlSource(data, args.table, args.query).name
    records = records_for(name, data, [args.runs_dir])
    if not records:
        print(f"no runs of recipe '{name}' on {data} in {JobStore(args.runs_dir).root}")
        return 0
    print(f"Runs of recipe '{name}' on {data} (newest last):")
    for line in history_lines(records):
        print("  " + line)
    return 0
