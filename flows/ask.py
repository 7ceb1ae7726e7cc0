"""`whyflow ask`: one question about one or more data files, answered by a recipe run.

The question becomes an :class:`~agents.base.ask_state.AskState` job (``pipelines/ask.yaml`` by
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
import re
import shutil
import sys
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.base.ask_state import AskDataset, AskState, ChatMessage, FinalOutput
from agents.base.errors import DataError, WhyflowError
from agents.base.state import utcnow
from flows.store import JobFolder, JobStore, new_job_id

if TYPE_CHECKING:
    from flows.plan import Plan

__all__ = [
    "AskRequest",
    "add_parser",
    "cmd_ask",
    "prepare_ask_job",
    "data_summary",
    "load_session",
    "resume_ask",
    "run_ask_flow",
    "save_turn",
    "status_lines",
]

DEFAULT_RECIPE = Path(__file__).resolve().parents[1] / "pipelines" / "ask.yaml"
AUTO_RECIPE = Path(__file__).resolve().parents[1] / "pipelines" / "auto_analyze.yaml"
AUTO_QUESTION = "Give a first analysis of this dataset: every column, a short summary and a title."


class AskInputError(WhyflowError):
    """The question or a data file of `whyflow ask` is unusable."""


def add_parser(sub: Any) -> None:
    """The ``ask`` subcommand's arguments (called from :func:`flows.cli.build_parser`)."""
    p = sub.add_parser("ask", help="ask a question about data files; prints the answer, writes answer.json/html")
    p.add_argument("question", metavar="QUESTION", nargs="?", default=None)
    p.add_argument("--data", action="append", required=True, metavar="FILE", help="CSV or Parquet file (repeatable)")
    p.add_argument("--recipe", default=None, help="the ask recipe (default pipelines/ask.yaml; "
                   "pipelines/ask_react.yaml runs the ReAct data scientist)")
    p.add_argument("--auto", action="store_true", help="a first analysis of the data (pipelines/auto_analyze.yaml): "
                   "every column's type, counts, typical values and issues, a summary and a title; no question needed")
    p.add_argument("--output", "-o", help="job folder (default runs/<job_id>)")
    p.add_argument("--llm", choices=["on", "off"], help="let the model plan and write code (on) or never (off); sets WHYFLOW_LLM")
    p.add_argument("--session", help="continue a conversation: follow-ups resolve against its history")
    p.add_argument("--verbose", action="store_true", help="show Prefect's own logs too")
    p.add_argument("--engine", choices=["auto", "prefect", "local"], default=None,
                   help="auto (default): a Prefect flow run when a Prefect server is configured (PREFECT_API_URL, "
                        "so the run shows in its UI), else the plain runner; prefect: always a tracked flow run "
                        "(a temporary server if none is configured, about 10 s more); local: the same agents in this "
                        "process without Prefect. Same job files and answer either way (also WHYFLOW_ASK_ENGINE)")


# ---- the job ---------------------------------------------------------------------------------
def _view_name(path: Path, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_]+", "_", path.stem).strip("_").lower() or "table"
    base = base if base[0].isalpha() else f"t_{base}"
    name, i = base, 2
    while name in taken or name == "data":
        name, i = f"{base}_{i}", i + 1
    return name


def _read(paths: list[str]) -> list[Any]:
    from agents.ask._shared import read_data

    return [read_data(Path(raw).expanduser()) for raw in paths]  # DataError names the file


def _analysis_copy(frame: Any, path: Path, folder: Path, name: str) -> Path:
    """The table as read (delimiter, encoding and header sorted out) in the job's ``data/``, so
    the sandbox sees exactly the columns the planner saw; the user's file is never written."""
    target = folder / "data" / f"{name}.parquet"
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        frame.to_parquet(target, index=False)
    except (ValueError, TypeError, OSError, ImportError):  # mixed types pyarrow cannot store
        target.unlink(missing_ok=True)
        return path.resolve()
    return target.resolve()


def _datasets(paths: list[str], frames: list[Any], folder: Path) -> dict[str, AskDataset]:
    from flows.jobs import fingerprint

    out: dict[str, AskDataset] = {}
    for i, (raw, frame) in enumerate(zip(paths, frames, strict=True)):
        path = Path(raw).expanduser()
        prints = fingerprint(path, frame)
        name = "data" if i == 0 else _view_name(path, set(out))
        out[name] = AskDataset(
            name=name,
            source=str(path.resolve()),
            local_path=str(_analysis_copy(frame, path, folder, name)),
            rows=prints["rows"],
            columns=[str(c) for c in frame.columns],
            dtypes={str(k): v for k, v in prints["schema"].items()},
            sha256=prints["sha256"],
        )
    return out


def data_summary(datasets: dict[str, AskDataset], frames: list[Any], max_columns: int = 40) -> str:
    """A compact description of every dataset for the planner and the model (001's data_summary)."""
    lines = []
    for (name, ds), frame in zip(datasets.items(), frames, strict=True):
        lines.append(f"Dataset '{name}' ({Path(ds.source).name}): {ds.rows} rows × {len(ds.columns)} columns")
        for col in ds.columns[:max_columns]:
            series = frame[col]
            missing = int(series.isna().sum())
            extra = f", {missing} missing" if missing else ""
            if series.dtype.kind in "if":
                desc = f"numeric, min {series.min():.4g}, mean {series.mean():.4g}, max {series.max():.4g}"
            else:
                top = [str(v) for v in series.dropna().astype(str).value_counts().index[:5]]
                desc = f"{series.dtype}, {series.nunique()} distinct, e.g. {', '.join(top)}"
            lines.append(f"  - {col}: {desc}{extra}")
        if len(ds.columns) > max_columns:
            lines.append(f"  ... and {len(ds.columns) - max_columns} more columns")
    return "\n".join(lines)


class AskRequest:
    """What `whyflow ask` (or the deployment) was asked."""

    def __init__(
        self,
        question: str,
        data: list[str],
        recipe: str = str(DEFAULT_RECIPE),
        output: str | None = None,
        session: str | None = None,
        llm: bool = False,
        runs_dir: str | None = None,
    ) -> None:
        self.question = question.strip()
        self.data = data
        self.recipe = recipe
        self.output = output
        self.session = session
        self.llm = llm
        self.runs_dir = runs_dir


def check_request(request: AskRequest) -> None:
    """Raise :class:`AskInputError` / :class:`DataError` for unusable input, before any folder exists."""
    if not request.question:
        raise AskInputError("the question is empty: ask something about the data, e.g. \"average price by region\"")
    if not request.data:
        raise AskInputError("give at least one --data FILE")
    for raw in request.data:
        if not Path(raw).expanduser().exists():
            raise DataError(f"data file not found: {raw}")
    if request.session is not None and not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", request.session):
        raise AskInputError(f"--session '{request.session}': use letters, digits, '.', '_' or '-' (at most 64)")


def prepare_ask_job(request: AskRequest, plan: Plan, engine: str | None = None) -> JobFolder:
    """Check the input and create the job folder with its first AskState, run.json and recipe copy.

    ``engine`` (``prefect`` or ``local``) is recorded in run.json when known.
    """
    check_request(request)
    frames = _read(request.data)
    store = JobStore(request.runs_dir)
    job_id = new_job_id()
    folder = store.create(job_id, request.output)
    datasets = _datasets(request.data, frames, folder.path)
    messages = load_session(store.root, request.session) if request.session else []
    state = AskState(
        job_id=job_id,
        question=request.question,
        datasets=datasets,
        data_summary=data_summary(datasets, frames),
        messages=messages,
        max_iterations=plan.settings.max_iterations,
    )
    shutil.copyfile(plan.source, folder.recipe_path)
    first = next(iter(datasets.values()))
    folder.write_run(
        {
            "job_id": job_id,
            "kind": "ask",
            "recipe": str(Path(plan.source).resolve()),
            "recipe_name": plan.name,
            "question": request.question,
            "data": first.source,
            "data_files": [d.source for d in datasets.values()],
            "data_local_path": first.local_path,
            "data_sha256": first.sha256,
            "fingerprint": {"sha256": first.sha256, "rows": first.rows, "columns": len(first.columns),
                            "schema": first.dtypes},
            "session": request.session,
            "llm": request.llm,
            "engine": engine,
            "seed": plan.settings.seed,
            "created_at": utcnow().isoformat(),
            "request": {"runs_dir": request.runs_dir, "output": request.output},
        }
    )
    folder.attach(state)
    folder.save(state)
    return folder


# ---- sessions --------------------------------------------------------------------------------
def _session_path(root: Path, session: str) -> Path:
    return root / "sessions" / f"{session}.json"


def load_session(root: Path, session: str | None) -> list[ChatMessage]:
    """The conversation so far (empty for a new session)."""
    if not session:
        return []
    path = _session_path(root, session)
    if not path.exists():
        return []
    try:
        return [ChatMessage.model_validate(m) for m in json.loads(path.read_text(encoding="utf-8"))]
    except (OSError, ValueError) as exc:
        raise AskInputError(f"session file {path} is unreadable: {exc}") from exc


def save_turn(root: Path, session: str, state: AskState) -> None:
    """Append this question and its answer to the session's history."""
    path = _session_path(root, session)
    path.parent.mkdir(parents=True, exist_ok=True)
    history = load_session(root, session)
    resolved = (state.plan.parameters.get("question") if state.plan else None) or state.question
    answer = state.final_output.answer if state.final_output else (state.error_message or "")
    history += [
        ChatMessage(role="user", content=state.question, data={"resolved": resolved, "job_id": state.job_id}),
        ChatMessage(role="assistant", content=answer, data=_assistant_data(state)),
    ]
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps([m.model_dump(mode="json") for m in history], indent=2), encoding="utf-8")
    tmp.replace(path)


def _assistant_data(state: AskState) -> dict[str, Any]:
    """What the next turn keeps of this one: the job, and the artifact inventory (seed 003: a
    follow-up sees what exists and does not recreate an equivalent artifact)."""
    data: dict[str, Any] = {"job_id": state.job_id}
    if state.runtime is not None and state.runtime.artifacts:
        data["artifacts"] = [a.model_dump(mode="json") for a in state.runtime.artifacts[-20:]]
    return data


# ---- the command -----------------------------------------------------------------------------
def cmd_ask(args: argparse.Namespace) -> int:
    """Run the ask recipe on the question; print the answer; exit 0, 1 (no answer) or 2 (bad input)."""
    from flows.args import prepare_environment

    prepare_environment(args.verbose)  # before Prefect is imported: its settings read the environment
    from flows.plan import load_plan

    auto = bool(getattr(args, "auto", False))
    question = args.question if args.question is not None else (AUTO_QUESTION if auto else "")
    recipe = args.recipe or str(AUTO_RECIPE if auto else DEFAULT_RECIPE)
    request = AskRequest(
        question=question,
        data=list(args.data),
        recipe=recipe,
        output=args.output,
        session=args.session,
        llm=args.llm == "on",
        runs_dir=args.runs_dir,
    )
    check_request(request)
    engine, why = _engine(getattr(args, "engine", None))
    if args.llm:
        os.environ["WHYFLOW_LLM"] = args.llm  # read where each step's ctx.llm is built
    plan = load_plan(request.recipe)
    if plan.spec.state != "ask":
        raise AskInputError(f"recipe {request.recipe} runs on the '{plan.spec.state}' state; `whyflow ask` needs `state: ask`")
    from flows.ask_engine import prewarm_sandbox

    prewarm_sandbox()  # the sandbox's interpreter boots on the other core while the data is read
    folder = prepare_ask_job(request, plan, engine=engine)
    code = _run_engine(engine, why, plan, folder, args.verbose)
    state = folder.load_any()
    if request.session and isinstance(state, AskState):
        save_turn(JobStore(request.runs_dir).root, request.session, state)
    return code


def _engine(choice: str | None) -> tuple[str, str]:
    from flows.ask_engine import resolve_engine

    try:
        return resolve_engine(choice)
    except ValueError as exc:
        raise AskInputError(str(exc)) from exc


def _run_engine(engine: str, why: str, plan: Plan, folder: JobFolder, verbose: bool) -> int:
    """Run (or resume) the job on ``engine``; the note saying which one ran; the exit code."""
    from flows.ask_engine import engine_note

    print(engine_note(engine, why), file=sys.stderr, flush=True)
    if engine == "local":
        from flows.ask_local import run_ask_local

        return run_ask_local(plan, folder)
    return run_ask_flow(plan, folder, verbose)


def run_ask_flow(plan: Plan, folder: JobFolder, verbose: bool = False) -> int:
    """Run (or resume) an ask job's compiled flow and print its answer; the exit code."""
    from flows.compile import build_flow, set_console_reporter
    from flows.progress import quiet_prefect_console

    if not verbose:
        quiet_prefect_console()
    set_console_reporter(None)
    from flows.interrupts import cancel_job, ended_by_signal, interrupt_guard, received

    cancelled = f"whyflow: cancelled; `whyflow resume {folder.path}` continues it"

    def give_up() -> None:  # the signal's watchdog: the run did not end within seconds
        cancel_job(folder)
        print(cancelled, file=sys.stderr)

    flow = build_flow(plan, run_name=f"{plan.name}-{folder.path.name}")
    try:
        with interrupt_guard(give_up):  # SIGINT, SIGTERM, SIGHUP: cancelled, exit 130
            from flows.temp_server import temporary_server

            with temporary_server():  # Prefect's own would die with a Ctrl-C to the process group
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


def resume_ask(folder: JobFolder, verbose: bool = False) -> int:
    """`whyflow resume` of an ask job: continue from its last completed step."""
    from flows.args import prepare_environment

    prepare_environment(verbose)
    from flows.plan import load_plan

    state = folder.load_any()
    if state.status.is_terminal and state.status.value == "completed":
        print(f"whyflow: job {state.job_id} is already completed; nothing to resume")
        return 0
    if state.status.is_terminal or state.status.value == "cancelling":
        state.reopen()
    folder.clear_cancel()
    folder.save(state)
    _set_aside_unfinished_nested(folder)
    engine, why = _engine(None)  # WHYFLOW_ASK_ENGINE, else auto: as `whyflow ask` decides
    from flows.ask_engine import prewarm_sandbox

    prewarm_sandbox()
    return _run_engine(engine, why, load_plan(folder.recipe_path), folder, verbose)


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


def status_lines(state: AskState, job_dir: Path) -> list[str]:
    """`whyflow status` of an ask job: the question, where it stands, the answer."""
    lines = [
        f"Job {state.job_id} ({job_dir}) — a question: {state.question}",
        f"Status: {state.status.value} ({state.progress_percentage:.0f}%), {state.attempts} code attempt(s)",
    ]
    if state.error_message:
        lines.append(f"Error: {state.error_message} (in {state.error_agent})")
    if state.final_output is not None:
        lines.append(f"Answer ({state.final_output.output_type}): {state.final_output.answer}")
        lines += table_lines(state.final_output)
    if (job_dir / "answer.json").exists():
        lines.append(f"Files: {job_dir / 'answer.json'}, {job_dir / 'answer.html'}")
    return lines


def print_answer(state: AskState, folder: JobFolder) -> int:
    """Print the answer, any table and chart paths; the exit code for the outcome."""
    final = state.final_output
    if final is None:
        print(f"whyflow: no answer: {state.error_agent or 'the run'} failed: {state.error_message}", file=sys.stderr)
        if (folder.path / "errors.log").exists():
            print(f"whyflow: the full traceback is in {folder.path / 'errors.log'}", file=sys.stderr)
        return 1
    if state.session_title:
        print(f"title: {state.session_title}")
    print(final.answer)
    for line in table_lines(final):
        print(line)
    for chart in final.charts:
        print(f"chart: {chart}")
    for caveat in final.caveats:
        print(f"caveat: {caveat}")
    if state.runtime is not None:
        c, rt = state.runtime.counters, state.runtime
        rate = "n/a" if c.retry_success_rate is None else f"{c.retry_success_rate:.0%}"
        print(f"runtime: {rt.mode}, {len(rt.tool_calls)} tool calls, {len(rt.transitions)} transitions, ended by {rt.ended_by}; "
              f"invalid_state {c.invalid_state}, duplicate_tool_call_skipped {c.duplicate_tool_call_skipped}, "
              f"duplicate_artifact_prevented {c.duplicate_artifact_prevented}, empty_python_payload_retried "
              f"{c.empty_python_payload_retried} (retry success {rate})")
    print(f"answer: {folder.path / 'answer.json'}")
    if (folder.path / "answer.html").exists():
        print(f"page:   {folder.path / 'answer.html'}")
    return 1 if final.output_type == "error" else 0


def table_lines(final: FinalOutput, max_rows: int = 20) -> list[str]:
    """A table result as aligned text lines (empty for a non-table result)."""
    rows = _rows(final.result)
    if not rows:
        return []
    columns = list(rows[0])
    cells = [[str(c) for c in columns]] + [[_cell(r.get(c)) for c in columns] for r in rows[:max_rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    out = ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    if len(rows) > max_rows:
        out.append(f"... {len(rows) - max_rows} more rows (all in answer.json)")
    return out


def _rows(result: Any) -> list[dict[str, Any]]:
    if isinstance(result, dict) and isinstance(result.get("rows"), list) and isinstance(result.get("columns"), list):
        cols = [str(c) for c in result["columns"]]
        return [dict(zip(cols, r, strict=False)) if isinstance(r, list) else dict(r) for r in result["rows"]]
    if isinstance(result, dict) and isinstance(result.get("records"), list):
        result = result["records"]
    if isinstance(result, list) and result and all(isinstance(r, dict) for r in result):
        return [dict(r) for r in result]
    return []


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.2f}" if abs(value) >= 1000 else f"{value:.4g}"
    return "" if value is None else str(value)


def source_name(raw: str) -> str:
    """A data source's display name."""
    return Path(urllib.parse.urlparse(raw).path).name or raw
