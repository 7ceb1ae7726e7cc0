"""`whyflow ask`: one question about one or more data files, answered by a recipe run.

The question becomes an :class:`~whyflow.ask.state.AskState` job (``whyflow/recipes/ask.yaml`` by
default) run by the same compiled Prefect flow and runner as an analysis. The job folder holds
``state.json``, ``answer.json`` (the FinalOutput), ``answer.html`` and ``charts/``. A
``--session ID`` keeps the conversation in ``<runs>/sessions/ID.json``: earlier questions and
answers become the job's ``messages``, so a follow-up ("now by year") is resolved against them.

Bad input (a missing or unreadable file, an empty question) is one line and exit code 2.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from typing import TYPE_CHECKING, Any

from whyflow.ask.state import AskState
from whyflow.cli.args import add_source_options
from whyflow.flows.jobstore.store import JobFolder, JobStore

if TYPE_CHECKING:
    from whyflow.flows.recipes.nodes import Plan

from whyflow.flows.ask_jobs.job import (
    AUTO_QUESTION,
    AUTO_RECIPE,
    DEFAULT_RECIPE,
    AskInputError,
    AskRequest,
    check_request,
    prepare_ask_job,
    print_answer,
    save_turn,
)

__all__ = ["add_parser", "cmd_ask", "continue_ask", "run_ask_flow"]


def add_parser(sub: Any) -> None:
    """The ``ask`` subcommand's arguments (called from :func:`whyflow.cli.main.build_parser`)."""
    p = sub.add_parser("ask", help="ask a question about data files; prints the answer, writes answer.json/html")
    p.add_argument("question", metavar="QUESTION", nargs="?", default=None)
    p.add_argument(
        "--data",
        action="append",
        required=True,
        metavar="FILE",
        help="CSV or Parquet file or object-store URL (s3://, gs://, az://, file://; credentials from the "
        "environment) (repeatable), or one database URL (sqlite:///FILE, duckdb:///FILE, "
        "postgresql://USER@HOST/DB; a password from PGPASSWORD) with --table or --query",
    )
    add_source_options(p, "are asked about")
    p.add_argument(
        "--recipe",
        default=None,
        help="the ask recipe, a built-in name or a file (default ask; ask_react runs the ReAct data scientist)",
    )
    p.add_argument(
        "--auto",
        action="store_true",
        help="a first analysis of the data (the auto_analyze recipe): "
        "every column's type, counts, typical values and issues, a summary and a title; no question needed",
    )
    p.add_argument(
        "--describe",
        metavar="TEXT|FILE",
        help="what the data and its columns are, in a sentence or a text/markdown file "
        '("re78: earnings in 1978; treat: whether the person joined the programme"): the question\'s '
        "words reach the columns through it, and the model reads it",
    )
    p.add_argument(
        "--metadata",
        metavar="FILE",
        help="the YAML/JSON metadata file `whyflow run --metadata` takes: its description and column descriptions "
        "serve as --describe does",
    )
    p.add_argument("--output", "-o", help="job folder (default runs/<job_id>)")
    p.add_argument(
        "--llm", choices=["on", "off"], help="let the model plan and write code (on) or never (off); sets WHYFLOW_LLM"
    )
    p.add_argument("--session", help="continue a conversation: follow-ups resolve against its history")
    p.add_argument("--verbose", action="store_true", help="show Prefect's own logs too")
    p.add_argument(
        "--engine",
        choices=["auto", "prefect", "local"],
        default=None,
        help="auto (default): a Prefect flow run when a Prefect server is configured (PREFECT_API_URL, "
        "so the run shows in its UI), else the plain runner; prefect: always a tracked flow run "
        "(a temporary server if none is configured, about 10 s more); local: the same agents in this "
        "process without Prefect. Same job files and answer either way (also WHYFLOW_ASK_ENGINE)",
    )


# ---- the job ---------------------------------------------------------------------------------
def cmd_ask(args: argparse.Namespace) -> int:
    """Run the ask recipe on the question; print the answer; exit 0, 1 (no answer) or 2 (bad input)."""
    from whyflow.cli.args import prepare_environment

    prepare_environment(args.verbose)  # before Prefect is imported: its settings read the environment
    from whyflow.flows.recipes.plan import load_plan

    auto = bool(getattr(args, "auto", False))
    question = args.question if args.question is not None else (AUTO_QUESTION if auto else "")
    recipe = args.recipe or (AUTO_RECIPE if auto else DEFAULT_RECIPE)
    request = AskRequest(
        question=question,
        data=list(args.data),
        recipe=recipe,
        output=args.output,
        session=args.session,
        llm=args.llm == "on",
        runs_dir=args.runs_dir,
        table=args.table,
        query=args.query,
        describe=args.describe,
        metadata=args.metadata,
    )
    check_request(request)
    engine, why = _engine(getattr(args, "engine", None))
    if args.llm:
        os.environ["WHYFLOW_LLM"] = args.llm  # read where each step's ctx.llm is built
    plan = load_plan(request.recipe)
    if plan.spec.state != "ask":
        raise AskInputError(
            f"recipe {request.recipe} runs on the '{plan.spec.state}' state; `whyflow ask` needs `state: ask`"
        )
    from whyflow.flows.ask_jobs.engine import prewarm_sandbox

    prewarm_sandbox()  # the sandbox's interpreter boots on the other core while the data is read
    folder = prepare_ask_job(request, plan, engine=engine)
    code = _run_engine(engine, why, plan, folder, args.verbose)
    state = folder.load_any()
    if request.session and isinstance(state, AskState):
        save_turn(JobStore(request.runs_dir).root, request.session, state)
    return code


def _engine(choice: str | None) -> tuple[str, str]:
    from whyflow.flows.ask_jobs.engine import resolve_engine

    try:
        return resolve_engine(choice)
    except ValueError as exc:
        raise AskInputError(str(exc)) from exc


def _run_engine(engine: str, why: str, plan: Plan, folder: JobFolder, verbose: bool) -> int:
    """Run (or resume) the job on ``engine``; the note saying which one ran; the exit code."""
    from whyflow.flows.ask_jobs.engine import engine_note

    print(engine_note(engine, why), file=sys.stderr, flush=True)
    if engine == "local":
        from whyflow.flows.ask_jobs.local import run_ask_local

        return run_ask_local(plan, folder)
    return run_ask_flow(plan, folder, verbose)


def run_ask_flow(plan: Plan, folder: JobFolder, verbose: bool = False) -> int:
    """Run (or resume) an ask job's compiled flow and print its answer; the exit code."""
    from whyflow.flows.job_flow import build_flow, set_console_reporter
    from whyflow.flows.running.progress import quiet_prefect_console

    if not verbose:
        quiet_prefect_console()
    set_console_reporter(None)
    from whyflow.flows.running.interrupts import cancel_job, ended_by_signal, interrupt_guard, received

    cancelled = f"whyflow: cancelled; `whyflow resume {folder.path}` continues it"

    def give_up() -> None:  # the signal's watchdog: the run did not end within seconds
        cancel_job(folder)
        print(cancelled, file=sys.stderr)

    flow = build_flow(plan, run_name=f"{plan.name}-{folder.path.name}")
    try:
        with interrupt_guard(give_up):  # SIGINT, SIGTERM, SIGHUP: cancelled, exit 130
            from whyflow.flows.running.temp_server import temporary_server

            # A temporary server of our own: Prefect's would die with a Ctrl-C to the process group.
            with temporary_server():
                flow(recipe=str(folder.recipe_path.resolve()), job_dir=str(folder.path.resolve()), return_state=True)
    except BaseException as exc:
        if not ended_by_signal(exc, folder.path):
            return 1
        cancel_job(folder)
    if received() is not None:
        cancel_job(folder)  # a signal the flow swallowed (Prefect's own handler took it)
    state = folder.load_any()
    assert isinstance(state, AskState)
    if state.status.value == "cancelled":
        print(cancelled, file=sys.stderr)
        return 130
    return print_answer(state, folder)


def continue_ask(plan: Plan, folder: JobFolder, verbose: bool = False) -> int:
    """Run a reopened ask job on from its last completed step (``whyflow resume`` prepared it)."""
    from whyflow.flows.ask_jobs.engine import prewarm_sandbox

    _set_aside_unfinished_nested(folder)
    engine, why = _engine(None)  # WHYFLOW_ASK_ENGINE, else auto: as `whyflow ask` decides
    prewarm_sandbox()
    return _run_engine(engine, why, plan, folder, verbose)


def _set_aside_unfinished_nested(folder: JobFolder) -> None:
    """A nested job (a causal question's ``causal/``) that a stop left unfinished is moved to
    ``<name>.stopped``: the step that runs it starts it afresh on resume (it refuses a folder
    that holds a job), and the stopped one stays readable beside it."""
    for child in sorted(folder.path.iterdir()):
        try:
            status = json.loads((child / "state.json").read_text(encoding="utf-8")).get("status")
        except (OSError, ValueError, AttributeError):
            continue
        if status != "completed":
            aside = child.with_name(f"{child.name}.stopped")
            shutil.rmtree(aside, ignore_errors=True)
            child.rename(aside)
