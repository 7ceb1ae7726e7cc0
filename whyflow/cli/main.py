"""The `whyflow` command: validate, run, resume, cancel and inspect recipe runs.

Exit codes: 0 success; 1 a run failed or a recipe is invalid; 2 bad input (data, arguments);
130 cancelled. Errors are one clear line (or one block for a recipe), never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from whyflow.cli.args import add_source_options, add_specification_options, prepare_environment
from whyflow.core.errors import WhyflowError
from whyflow.flows.errors import JobNotFound, RecipeNotFound, RecipeSyntaxError, RecipeValidationError

__all__ = ["main", "console_main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (kept separate so the README's examples can be tested)."""
    parser = argparse.ArgumentParser(
        prog="whyflow",
        description="Ask a tabular dataset a question: a defensible causal analysis or a checked data-science "
        "answer, each run as a Prefect flow. Recipes are files or built-in names (whyflow recipes).",
    )
    parser.add_argument("--runs-dir", default=None, help="where job folders live (default ./runs or $WHYFLOW_RUNS_DIR)")
    parser.add_argument("--version", action="version", version=f"whyflow {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("validate", help="check recipes (and a metadata file) statically, before anything runs")
    p.add_argument("recipes", nargs="*", metavar="RECIPE", help="a recipe file, or a built-in recipe's name")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a setting or STEP.PARAM")
    p.add_argument("--metadata", metavar="FILE", help="also check this --metadata file (YAML/JSON) against its spec")

    p = sub.add_parser("run", help="run a recipe on a dataset")
    p.add_argument("recipe", metavar="RECIPE", help="a recipe file, or a built-in recipe's name (whyflow recipes)")
    p.add_argument(
        "--data",
        required=True,
        help="CSV or Parquet file, an http(s) or object-store URL (s3://BUCKET/KEY, credentials from the "
        "environment), or a database URL (sqlite:///FILE, duckdb:///FILE, postgresql://USER@HOST/DB; a password "
        "from PGPASSWORD) with --table or --query",
    )
    add_source_options(p, "are analysed")
    p.add_argument("--treatment", "-t", help="treatment column (default: the profiler's best candidate)")
    p.add_argument("--outcome", "-y", help="outcome column (default: the profiler's best candidate)")
    p.add_argument("--output", "-o", help="job folder (default runs/<job_id>)")
    p.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="override a setting or STEP.PARAM, e.g. max_iterations=2"
    )
    p.add_argument("--metadata", help="YAML/JSON file with column descriptions, orderings and forbidden edges")
    p.add_argument("--estimand", choices=["ATE", "ATT"], default="ATE")
    p.add_argument(
        "--instrument",
        help="instrument column (enables 2SLS / LATE); several as A,B (joint F, over-identification test)",
    )
    p.add_argument("--running-variable", help="running variable of a regression discontinuity")
    p.add_argument("--cutoff", type=float, help="cutoff of the running variable")
    p.add_argument(
        "--fuzzy",
        action="store_true",
        help="the discontinuity is fuzzy: take-up does not follow the cutoff exactly (with --running-variable and "
        "--cutoff; rdrobust's fuzzy form, the outcome's jump over take-up's). The form is also read from the data",
    )
    p.add_argument("--unit", help="unit id column of panel data (difference-in-differences)")
    p.add_argument("--time", help="time column of panel data")
    add_specification_options(p)
    # -- repeated cross-sections --
    p.add_argument(
        "--group",
        help="group column of a repeated cross-section difference-in-differences (individuals in rows, each seen "
        "once; with --period)",
    )
    p.add_argument("--period", help="period column of a repeated cross-section (with --group)")
    p.add_argument("--job-id", help="use this job id instead of a generated one")
    p.add_argument("--llm", choices=["on", "off"], help="call the configured LLM (on) or never (off); sets WHYFLOW_LLM")
    p.add_argument("--verbose", action="store_true", help="show Prefect's own logs too")

    p = sub.add_parser("resume", help="continue a killed, failed or cancelled job from its last completed agent")
    p.add_argument("job", metavar="JOB", help="job id or job folder")
    p.add_argument("--llm", choices=["on", "off"], help="as for run (cached replies are reused, never asked again)")
    p.add_argument("--verbose", action="store_true")

    p = sub.add_parser("status", help="show a job's status, progress and results")
    p.add_argument("job", metavar="JOB")

    sub.add_parser("list", help="list jobs")

    p = sub.add_parser("cancel", help="ask a running job to stop after its current agent")
    p.add_argument("job", metavar="JOB")

    sub.add_parser("agents", help="list the registered agents and their contracts")

    sub.add_parser("doctor", help="which sandbox layers this machine gives generated code")

    p = sub.add_parser("history", help="a recipe's runs on one data source: estimates, data, quality, drift")
    p.add_argument("recipe", metavar="RECIPE", help="recipe file or recipe name")
    p.add_argument("--data", required=True, help="the data file or URL the runs used")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--table", help="the table the runs read from a database --data")
    what.add_argument("--query", help="the query the runs read from a database --data")

    p = sub.add_parser("llm", help="the optional language model: 'whyflow llm check' tests the endpoint")
    p.add_argument("llm_command", choices=["check"], metavar="check")
    p.add_argument("--recipe", help="read the llm: block of this recipe (default: environment only)")
    p.add_argument("--base-url", help="endpoint to check (default: the recipe, then OPENAI_BASE_URL)")
    p.add_argument("--model", help="model to check (default: the first one the endpoint lists)")

    from whyflow.cli.ask import add_parser as add_ask_parser
    from whyflow.cli.project import add_parsers as add_project_parsers

    add_ask_parser(sub)
    add_project_parsers(sub)

    p = sub.add_parser("serve", help="the chat page for asking the data (FastAPI + WebSocket, loopback by default)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument(
        "--data-dir",
        default=None,
        help="where chat.sqlite3, uploads and their runs live (default ./runs or $WHYFLOW_RUNS_DIR)",
    )
    p.add_argument(
        "--data",
        metavar="URL",
        help="open sessions on a database (sqlite:///FILE, duckdb:///FILE, postgresql://USER@HOST/DB with --table "
        "or --query; a password from PGPASSWORD) or an object (s3://, gs://, az://, file://) instead of an "
        "upload: each session asks its own snapshot; POST /api/sessions/source opens another",
    )
    add_source_options(p, "the sessions ask about")
    p.add_argument(
        "--llm",
        choices=["on", "off"],
        help="let the model drive the data scientist (on) or never (off); sets WHYFLOW_LLM",
    )
    p.add_argument(
        "--engine",
        choices=["auto", "prefect", "local"],
        default=None,
        help="as for ask: auto (default) runs each question as a Prefect flow run when a Prefect server is "
        "configured, else with the plain runner (well under a second warm); prefect: always flow runs "
        "(on a temporary server if none is configured); also WHYFLOW_ASK_ENGINE",
    )
    return parser


def _version() -> str:
    from whyflow import __version__

    return __version__


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `whyflow` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "validate" and not args.recipes and not args.metadata:
        parser.error("validate needs a RECIPE, a --metadata FILE, or both")
    handlers: dict[str, Any] = {"llm": _cmd_llm, "ask": _cmd_ask, "serve": _cmd_serve, "recipes": _cmd_recipes}
    handlers["init"] = _cmd_init
    if args.command not in handlers:  # whyflow.cli.commands (recipe metadata, summaries) only where used
        from whyflow.cli import commands

        handlers.update(
            {
                "validate": commands.cmd_validate,
                "run": commands.cmd_run,
                "resume": commands.cmd_resume,
                "status": commands.cmd_status,
                "list": commands.cmd_list,
                "cancel": commands.cmd_cancel,
                "agents": commands.cmd_agents,
                "history": commands.cmd_history,
            }
        )
    if args.command == "doctor":
        from whyflow.runtime.sandbox.doctor import doctor

        return doctor()
    if args.command in ("run", "resume"):
        prepare_environment(getattr(args, "verbose", False))
        if getattr(args, "llm", None):
            os.environ["WHYFLOW_LLM"] = args.llm  # read where each step's ctx.llm is built
        from whyflow.runtime.llm.config import resolve_config

        try:
            resolve_config()  # an unreadable WHYFLOW_LLM_* value is bad input, not a failed agent
        except ValueError as exc:
            print(f"whyflow: error: {exc}", file=sys.stderr)
            return 2
    from whyflow.flows.running.interrupts import stop_signals_interrupt

    try:
        with stop_signals_interrupt():  # SIGTERM/SIGHUP while a command starts: as a Ctrl-C, exit 130
            return int(handlers[args.command](args))
    except (RecipeSyntaxError, RecipeValidationError, RecipeNotFound) as exc:
        print(f"whyflow: {exc}", file=sys.stderr)
        return 1
    except JobNotFound as exc:
        print(f"whyflow: {exc}", file=sys.stderr)
        return 2
    except WhyflowError as exc:
        print(f"whyflow: error: {exc}", file=sys.stderr)
        return 2
    except FileExistsError as exc:
        print(f"whyflow: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("whyflow: interrupted", file=sys.stderr)
        return 130


def console_main() -> None:
    """The console script: :func:`main`, then an exit that skips the interpreter's teardown.

    With the statistics stack imported, Python's own teardown (freeing every module of DoWhy,
    Great Expectations, causalml...) took 1.5-1.8 s after a run had printed its summary. By
    then every file is saved and every child process stopped, so the exit handlers run here
    and the process ends without that teardown. (Tests call :func:`main`, which returns.)
    """
    import atexit
    import logging

    code = main()
    if "prefect" in sys.modules:
        from whyflow.flows.running.temp_server import drain_prefect_services

        drain_prefect_services()  # its exit hooks run in the teardown skipped below
    atexit._run_exitfuncs()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`whyflow list | head`): nothing more to say
            pass
    os._exit(code)


def _cmd_ask(args: Any) -> int:
    from whyflow.cli.ask import cmd_ask

    return cmd_ask(args)


def _cmd_serve(args: Any) -> int:
    prepare_environment(False)
    if args.llm:
        os.environ["WHYFLOW_LLM"] = args.llm  # read where each run's ctx.llm is built
    from whyflow.flows.ask_jobs.engine import resolve_engine
    from whyflow.flows.jobstore.store import JobStore
    from whyflow.web import serve

    try:
        engine, why = resolve_engine(args.engine)
    except ValueError as exc:
        print(f"whyflow: error: {exc}", file=sys.stderr)
        return 2
    data_dir = args.data_dir or args.runs_dir or str(JobStore().root)
    source = None
    if args.data or args.table or args.query:
        from whyflow.web.sources import ServeSource, SourceNotServable, check_source

        if not args.data:
            raise SourceNotServable(
                "--table and --query name what to read from a database --data URL, and none is given"
            )
        source = ServeSource(args.data, args.table, args.query)
        check_source(source)
    return serve(host=args.host, port=args.port, data_dir=data_dir, engine=engine, why=why, source=source)


def _cmd_recipes(args: Any) -> int:
    from whyflow.cli.project import cmd_recipes

    return cmd_recipes(args)


def _cmd_init(args: Any) -> int:
    from whyflow.cli.project import cmd_init

    return cmd_init(args)


def _cmd_llm(args: Any) -> int:
    from whyflow.cli.llm_check import cmd_llm

    return cmd_llm(args)


if __name__ == "__main__":  # pragma: no cover - `python -m whyflow.cli.main`
    console_main()
