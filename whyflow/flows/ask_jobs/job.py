"""An ask job: the request, its checks, the job folder with its first state, the conversation, the answer as text.

The question becomes an :class:`~whyflow.ask.state.AskState` job whose folder holds
``state.json``, ``run.json``, the recipe as run and, once answered, ``answer.json``,
``answer.html`` and ``charts/``. A session (``<runs>/sessions/ID.json``) keeps earlier questions
and answers, which become the job's ``messages`` so a follow-up ("now by year") is resolved
against them. Whichever engine runs the job (:mod:`whyflow.cli.ask` for the command line,
:mod:`whyflow.flows.ask_jobs.flow` in a Prefect flow, :mod:`whyflow.web` for the chat page), it starts here.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from whyflow.ask.state import AskDataset, AskState, ChatMessage, FinalOutput
from whyflow.core.errors import DataError, WhyflowError
from whyflow.core.job import utcnow
from whyflow.flows.ask_jobs.description import Description, description_problem, read_description
from whyflow.flows.jobstore.store import JobFolder, JobStore, new_job_id

if TYPE_CHECKING:
    from whyflow.flows.recipes.nodes import Plan

__all__ = [
    "AUTO_QUESTION",
    "AUTO_RECIPE",
    "DEFAULT_RECIPE",
    "AskInputError",
    "AskRequest",
    "check_request",
    "data_summary",
    "load_session",
    "prepare_ask_job",
    "print_answer",
    "result_rows",
    "save_turn",
    "source_name",
    "status_lines",
    "table_lines",
]

DEFAULT_RECIPE = "ask"
"""The built-in recipe a question runs by default (``whyflow/recipes/ask.yaml``)."""
AUTO_RECIPE = "auto_analyze"
"""The built-in recipe of a first analysis (``--auto``)."""
AUTO_QUESTION = "Give a first analysis of this dataset: every column, a short summary and a title."


class AskInputError(WhyflowError):
    """The question or a data file of `whyflow ask` is unusable."""


def _view_name(path: Path, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_]+", "_", path.stem).strip("_").lower() or "table"
    base = base if base[0].isalpha() else f"t_{base}"
    name, i = base, 2
    while name in taken or name == "data":
        name, i = f"{base}_{i}", i + 1
    return name


def _read(request: AskRequest) -> tuple[list[Any], dict[int, dict[str, Any]]]:
    """The frames of the request's files and database sources, and what each object store says of its object.

    An object is only asked for here (a missing object or bucket, no permission: one line before
    any folder exists); it is copied into the job folder and read there by :func:`_datasets`,
    whose frame takes the ``None`` placed for it.
    """
    from whyflow.runtime.data import read_table
    from whyflow.runtime.object_store import is_object_url, probe
    from whyflow.runtime.sources import read_sql_source

    frames: list[Any] = []
    probed: dict[int, dict[str, Any]] = {}
    for i, raw in enumerate(request.data):  # DataError (SourceError, ObjectStoreError) names the file or the source
        source = _sql_source(request, raw)
        if source is not None:
            frames.append(read_sql_source(source)[0])
        elif is_object_url(raw):
            probed[i] = probe(raw)
            frames.append(None)
        else:
            frames.append(read_table(Path(raw).expanduser()))
    return frames, probed


def _sql_source(request: AskRequest, raw: str) -> Any:
    """The database source ``raw`` names with the request's table or query, or None for a file."""
    from whyflow.runtime.sources import SqlSource, is_sql_url

    return SqlSource(raw, request.table, request.query) if is_sql_url(raw) else None


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


def _datasets(
    request: AskRequest, frames: list[Any], probed: dict[int, dict[str, Any]], folder: Path
) -> tuple[dict[str, AskDataset], dict[str, dict[str, Any]]]:
    """Each source as the job names it, and its fingerprint; an object's copy and frame are made here.

    An object is copied into the job's ``data/`` (as ``whyflow run`` copies it) and read from
    there, its frame put in ``frames``; its fingerprint adds what the store said (ETag, size).
    """
    from whyflow.flows.jobstore.jobs import fingerprint
    from whyflow.runtime.data import read_table, write_parquet
    from whyflow.runtime.object_store import fetch
    from whyflow.runtime.sources import content_sha256

    out: dict[str, AskDataset] = {}
    prints_of: dict[str, dict[str, Any]] = {}
    for i, raw in enumerate(request.data):
        frame = frames[i]
        source = _sql_source(request, raw)
        if source is not None:  # the rows read, kept in the job folder: the sandbox and a resume read them there
            name = "data" if i == 0 else _view_name(Path(source.table or "query"), set(out))
            snapshot = write_parquet(frame, _data_folder(folder) / f"{name}.parquet")
            out[name] = AskDataset(
                name=name,
                source=source.name,
                local_path=str(snapshot.resolve()),
                rows=int(frame.shape[0]),
                columns=[str(c) for c in frame.columns],
                dtypes={str(c): str(t) for c, t in frame.dtypes.items()},
                sha256=content_sha256(frame),
            )
            prints_of[name] = {"sha256": out[name].sha256, "rows": out[name].rows}
            continue
        if i in probed:  # the object copied into the job folder; the sandbox and a resume read the copy
            path = fetch(raw, _data_folder(folder))
            frame = frames[i] = read_table(path)
            shown = raw
        else:
            path = Path(raw).expanduser()
            shown = str(path.resolve())
        prints = fingerprint(path, frame) | probed.get(i, {})
        named = Path(urllib.parse.urlparse(raw).path) if i in probed else path  # the object's name, not its copy's
        name = "data" if i == 0 else _view_name(named, set(out))
        prints_of[name] = prints
        out[name] = AskDataset(
            name=name,
            source=shown,
            local_path=str(_analysis_copy(frame, path, folder, name)),
            rows=prints["rows"],
            columns=[str(c) for c in frame.columns],
            dtypes={str(k): v for k, v in prints["schema"].items()},
            sha256=prints["sha256"],
        )
    return out, prints_of


def _aliases(described: Description, dataset: AskDataset) -> dict[str, list[str]]:
    """What the description calls the dataset's columns, as the state keeps it."""
    return {name: list(phrases) for name, phrases in described.aliases(dataset.columns).items()}


def _data_folder(folder: Path) -> Path:
    (folder / "data").mkdir(parents=True, exist_ok=True)
    return folder / "data"


def data_summary(datasets: dict[str, AskDataset], frames: list[Any], max_columns: int = 40) -> str:
    """A compact description of every dataset for the planner and the model (001's data_summary)."""
    lines = []
    for (name, ds), frame in zip(datasets.items(), frames, strict=True):
        shown = ds.source if "://" in ds.source else Path(ds.source).name  # a database: its URL and table
        lines.append(f"Dataset '{name}' ({shown}): {ds.rows} rows × {len(ds.columns)} columns")
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
        recipe: str = DEFAULT_RECIPE,
        output: str | None = None,
        session: str | None = None,
        llm: bool = False,
        runs_dir: str | None = None,
        table: str | None = None,
        query: str | None = None,
        describe: str | None = None,
        metadata: str | None = None,
    ) -> None:
        self.question = question.strip()
        self.data = data
        self.recipe = recipe
        self.output = output
        self.session = session
        self.llm = llm
        self.runs_dir = runs_dir
        self.table = table
        self.query = query
        self.describe = describe
        self.metadata = metadata


def check_request(request: AskRequest) -> None:
    """Raise :class:`AskInputError` / :class:`DataError` for unusable input, before any folder exists."""
    if not request.question:
        raise AskInputError('the question is empty: ask something about the data, e.g. "average price by region"')
    if not request.data:
        raise AskInputError("give at least one --data FILE")
    from whyflow.runtime.object_store import is_object_url
    from whyflow.runtime.sources import is_sql_url

    databases = [raw for raw in request.data if is_sql_url(raw)]
    if (request.table or request.query) and not databases:
        raise AskInputError("--table and --query name what to read from a database --data URL, and none is given")
    if len(databases) > 1:
        raise AskInputError("one database --data per question: --table or --query names what to read from it")
    for raw in request.data:
        if raw not in databases and not is_object_url(raw) and not Path(raw).expanduser().exists():
            raise DataError(f"data file not found: {raw}")
    if request.session is not None and not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", request.session):
        raise AskInputError(f"--session '{request.session}': use letters, digits, '.', '_' or '-' (at most 64)")
    problem = description_problem(request.describe, request.metadata)
    if problem:
        raise AskInputError(problem)


def prepare_ask_job(request: AskRequest, plan: Plan, engine: str | None = None) -> JobFolder:
    """Check the input and create the job folder with its first AskState, run.json and recipe copy.

    ``engine`` (``prefect`` or ``local``) is recorded in run.json when known.
    """
    check_request(request)
    described = read_description(request.describe, request.metadata)  # a bad metadata file: before any folder
    frames, probed = _read(request)
    store = JobStore(request.runs_dir)
    job_id = new_job_id()
    folder = store.create(job_id, request.output)
    try:
        datasets, prints_of = _datasets(request, frames, probed, folder.path)
    except BaseException:
        shutil.rmtree(folder.path, ignore_errors=True)  # nothing half-written: no job without its data
        raise
    datasets = {name: ds.model_copy(update={"aliases": _aliases(described, ds)}) for name, ds in datasets.items()}
    messages = load_session(store.root, request.session) if request.session else []
    state = AskState(
        job_id=job_id,
        question=request.question,
        datasets=datasets,
        data_summary=described.summary_block() + data_summary(datasets, frames),
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
            "fingerprint": {
                **prints_of[first.name],
                "sha256": first.sha256,
                "rows": first.rows,
                "columns": len(first.columns),
                "schema": first.dtypes,
            },
            "session": request.session,
            "describe": request.describe,
            "metadata": str(Path(request.metadata).resolve()) if request.metadata else None,
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
        print(
            f"runtime: {rt.mode}, {len(rt.tool_calls)} tool calls, {len(rt.transitions)} transitions, ended by {rt.ended_by}; "
            f"invalid_state {c.invalid_state}, duplicate_tool_call_skipped {c.duplicate_tool_call_skipped}, "
            f"duplicate_artifact_prevented {c.duplicate_artifact_prevented}, empty_python_payload_retried "
            f"{c.empty_python_payload_retried} (retry success {rate})"
        )
    print(f"answer: {folder.path / 'answer.json'}")
    if (folder.path / "answer.html").exists():
        print(f"page:   {folder.path / 'answer.html'}")
    return 1 if final.output_type == "error" else 0


def table_lines(final: FinalOutput, max_rows: int = 20) -> list[str]:
    """A table result as aligned text lines (empty for a non-table result)."""
    rows = result_rows(final.result)
    if not rows:
        return []
    columns = list(rows[0])
    cells = [[str(c) for c in columns]] + [[_cell(r.get(c)) for c in columns] for r in rows[:max_rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    out = ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    if len(rows) > max_rows:
        out.append(f"... {len(rows) - max_rows} more rows (all in answer.json)")
    return out


def result_rows(result: Any) -> list[dict[str, Any]]:
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
