"""The deployment entry flow: run any recipe from the Prefect UI, a schedule or the API.

``prefect.yaml`` points one deployment per shipped recipe at :func:`whyflow_deployment`; its
typed parameters render as a form in the UI. The flow

1. resolves paths against the project folder (the deployment's ``set_working_directory`` pull
   step makes it the working directory); a recipe is a file there or a built-in recipe's name,
2. prepares the job exactly as ``whyflow run`` does (data checks, fingerprint, job folder),
3. reuses the latest completed job when the data's content (sha256), the recipe text and the
   question are all unchanged (``force: true`` recomputes), and otherwise
4. runs the recipe's compiled flow as a **subflow**, so the recipe's own task runner (threads,
   Dask, sequential) applies and the flow run carries the recipe's name; the subflow creates
   the artifacts.

Cancelling the flow run in the UI: the worker sends SIGTERM, the runner turns it into a
graceful cancel (the job is saved as CANCELLED) and the recipe flow ends Cancelled. If the
process dies before the runner can save (killed after the grace period, or cancelled before the
runner started), the ``on_cancellation`` / ``on_crashed`` hook marks the job CANCELLED / FAILED.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from prefect import flow

from whyflow.flows.jobstore.store import JobFolder, JobStore

if TYPE_CHECKING:
    from whyflow.flows.ask_jobs.job import AskRequest

__all__ = ["whyflow_deployment", "ask_deployment", "find_job_of_flow_run", "mark_job_cancelled", "mark_job_crashed"]


def _resolve(path: str | None) -> str | None:
    """An absolute path (relative to the working directory); URLs unchanged."""
    from whyflow.cli.args import resolve_path

    return None if path is None else resolve_path(path)


def _recipe(recipe: str) -> str:
    """A recipe file in the project folder (absolute), else the built-in recipe of that name."""
    from whyflow.flows.recipes.builtin import find_recipe

    return str(find_recipe(recipe).resolve())


def _runs_roots(output: str | None) -> list[Path]:
    roots = [Path(output).parent] if output else []
    roots += [JobStore().root.resolve()]
    return roots


def find_job_of_flow_run(flow_run_id: str, parameters: dict[str, Any]) -> JobFolder | None:
    """The job folder a deployment flow run created (``run.json`` records the flow run id)."""
    output = parameters.get("output")
    if output and (Path(output) / "state.json").exists():
        return JobFolder(Path(output))
    for root in _runs_roots(output):
        if not root.exists():
            continue
        for run_file in root.glob("*/run.json"):
            folder = JobFolder(run_file.parent)
            if str(folder.read_run().get("flow_run_id")) == flow_run_id:
                return folder
    return None


def _finish_job(flow_run: Any, cancelled: bool, message: str) -> None:
    folder = find_job_of_flow_run(str(flow_run.id), dict(flow_run.parameters or {}))
    if folder is None or not folder.exists():
        return
    state = folder.load_any()
    if state.status.is_terminal:
        return
    if cancelled:
        state.mark_cancelled(f"Cancelled: {message}")
    else:
        state.mark_failed(message, state.error_agent or "prefect")
    folder.save(state)


def mark_job_cancelled(flow: Any, flow_run: Any, state: Any) -> None:
    """``on_cancellation`` hook: the job ends CANCELLED even if the process died first."""
    _finish_job(flow_run, True, state.message or "flow run cancelled from Prefect")


def mark_job_crashed(flow: Any, flow_run: Any, state: Any) -> None:
    """``on_crashed`` hook: the job ends FAILED with Prefect's reason if the process crashed."""
    _finish_job(flow_run, False, f"the flow run crashed: {state.message or 'process died'}")


def _secret(block: str) -> Any:
    """What the Prefect ``Secret`` block ``block`` holds (text or a JSON object)."""
    from prefect.blocks.system import Secret

    from whyflow.runtime.sources import SourceError

    try:
        secret = cast("Secret[Any]", Secret.load(block))  # a sync flow: the block itself, not a coroutine
    except ValueError as exc:  # Prefect's message for a block that does not exist
        raise SourceError(f"credentials_block {block!r}: {exc}") from None
    return secret.get()


@contextlib.contextmanager
def _credentials(data: str, block: str | None) -> Iterator[str]:
    """``data`` as the run reads it with the credentials of the Prefect ``Secret`` block ``block``.

    A database URL gets the password the block holds (text); an object store is read with the
    fsspec options the block holds (a JSON object: ``key``, ``secret``, ``endpoint_url`` ...).
    Either lives in memory while the job is prepared, and the job folder keeps only what was read.
    """
    from whyflow.runtime.object_store import is_object_url, store_options
    from whyflow.runtime.sources import SourceError, is_sql_url, with_password

    if not block:
        yield data
        return
    if not (is_sql_url(data) or is_object_url(data)):
        raise SourceError(f"credentials_block {block!r} is for a database or object-store URL, and data is neither")
    value = _secret(block)
    if is_sql_url(data):
        if not isinstance(value, str):
            raise SourceError(f"credentials_block {block!r} must hold the database login's password, as text")
        yield with_password(data, value)
        return
    if not isinstance(value, dict):
        raise SourceError(
            f"credentials_block {block!r} must hold the store's options as a JSON object "
            '(for S3: {"key": ..., "secret": ..., "endpoint_url": ...})'
        )
    with store_options(value):
        yield data


def _flow_run_id() -> str | None:
    from prefect.runtime import flow_run

    run_id = flow_run.id
    return str(run_id) if run_id else None


@flow(
    name="whyflow",
    persist_result=False,
    on_cancellation=[mark_job_cancelled],
    on_crashed=[mark_job_crashed],
)
def whyflow_deployment(
    data: str,
    recipe: str = "causal_analysis",
    treatment: str | None = None,
    outcome: str | None = None,
    metadata: str | None = None,
    estimand: Literal["ATE", "ATT"] = "ATE",
    overrides: dict[str, str] | None = None,
    output: str | None = None,
    force: bool = False,
    table: str | None = None,
    query: str | None = None,
    credentials_block: str | None = None,
    controls: list[str] | None = None,
    cluster: str | None = None,
    where: str | None = None,
) -> dict[str, Any]:
    """Run a whyflow recipe on a dataset and publish its results as artifacts.

    Args:
        data: CSV or Parquet file (relative to the project folder or absolute), an http(s) URL, or a database
            URL (sqlite:///FILE, duckdb:///FILE, postgresql://USER@HOST/DB; the password from PGPASSWORD).
        recipe: A built-in recipe's name (e.g. quick_estimate) or a recipe YAML relative to the project folder.
        treatment: Treatment column; empty lets the data profiler choose.
        outcome: Outcome column; empty lets the data profiler choose.
        metadata: YAML/JSON with column descriptions, temporal order and forbidden edges.
        estimand: ATE (everyone) or ATT (the treated).
        overrides: Settings or step options, as with --set (e.g. {"max_iterations": "2"}).
        output: Job folder; default runs/<job_id> in the project folder.
        force: Recompute even if an earlier run saw exactly this data and question.
        table: The table (or view) of a database ``data`` to analyse.
        query: A SELECT whose rows, from a database ``data``, are analysed (instead of ``table``).
        credentials_block: The name of a Prefect ``Secret`` block with the source's credentials: a database
            login's password (text), or an object store's fsspec options (a JSON object, e.g. key, secret and
            endpoint_url for S3). Read when the run starts; never stored with the deployment or in the job folder.
        controls: The adjustment set, exactly, as with --controls (an empty list: none; unset: the recipe chooses).
        cluster: Column to cluster the standard errors on, as with --cluster.
        where: A subgroup condition, as with --where (e.g. "age >= 18 and region == 'north'").
    """
    from prefect.logging import get_run_logger

    from whyflow.causal.specification import where_from_text
    from whyflow.causal.state import StudyDesign
    from whyflow.flows.job_flow import build_flow
    from whyflow.flows.jobstore.history import find_reusable, read_record
    from whyflow.flows.jobstore.jobs import RunRequest, prepare_job
    from whyflow.flows.recipes.plan import load_plan
    from whyflow.flows.running.artifacts import history_roots, publish_reused

    logger = get_run_logger()
    recipe_path = _recipe(recipe)
    overrides = dict(overrides or {})
    plan = load_plan(recipe_path, overrides)
    with _credentials(data, credentials_block) as source:
        request = RunRequest(
            recipe=recipe_path,
            data=str(_resolve(source)),
            treatment=treatment or None,
            outcome=outcome or None,
            output=_resolve(output),
            overrides=overrides,
            design=StudyDesign(
                estimand=estimand, controls=controls, cluster=cluster or None, where=where_from_text(where)
            ),
            metadata=_resolve(metadata) if metadata else None,
            runs_dir=str(JobStore().root.resolve()),
            table=table or None,
            query=query or None,
        )
        folder = prepare_job(request, plan)
    run = folder.read_run()
    run["flow_run_id"] = _flow_run_id()
    folder.write_run(run)
    logger.info("job folder %s (data sha256 %s…)", folder.path, str(run.get("data_sha256"))[:12])

    current, roots = read_record(folder), history_roots(folder)
    previous = None if force or current is None else find_reusable(current, roots)
    if previous is not None and current is not None:
        logger.info(
            "data unchanged since job %s (sha256 %s…, same recipe and question): reusing its results; "
            "run with force=true to recompute",
            previous.job_id,
            current.sha256[:12],
        )
        if output is None:
            shutil.rmtree(folder.path, ignore_errors=True)
        publish_reused(plan.name, previous, current.sha256, roots)
        return {"job_id": previous.job_id, "job_dir": str(previous.path), "status": "completed", "reused": True}

    state = folder.load()
    recipe_flow = build_flow(plan, run_name=f"{plan.name}-{state.job_id}")
    final = recipe_flow(
        recipe=str(folder.recipe_path.resolve()),
        job_dir=str(folder.path.resolve()),
        overrides=overrides,
        return_state=True,
    )
    if not final.is_completed():
        return final  # type: ignore[no-any-return]  # the run ends Failed or Cancelled like its recipe flow
    result = final.result(raise_on_failure=False)
    return {**(result if isinstance(result, dict) else {}), "reused": False}


@flow(
    name="whyflow-ask",
    persist_result=False,
    on_cancellation=[mark_job_cancelled],
    on_crashed=[mark_job_crashed],
)
def ask_deployment(
    question: str,
    data: str,
    extra_data: list[str] | None = None,
    recipe: str = "ask",
    output: str | None = None,
    session: str | None = None,
    table: str | None = None,
    query: str | None = None,
    credentials_block: str | None = None,
) -> dict[str, Any]:
    """Answer a question about a dataset; the answer, any table and chart become artifacts.

    Args:
        question: The question, in plain words (e.g. "average price by region, as a bar chart").
        data: CSV or Parquet file (relative to the project folder or absolute), an object-store URL (s3://, gs://,
            az://) or a database URL with ``table`` or ``query``: the `data` view.
        extra_data: More files, each queried as a view named after the file.
        recipe: The ask recipe (state: ask): a built-in name (ask, ask_react) or a file.
        output: Job folder; default runs/<job_id> in the project folder.
        session: Continue a conversation: follow-ups ("now by year") resolve against it.
        table: The table (or view) of a database ``data`` to query.
        query: A SELECT whose rows, from a database ``data``, are the `data` view (instead of ``table``).
        credentials_block: As for the whyflow deployment: a Prefect ``Secret`` block with the database password or
            the object store's options for ``data``; never stored with the deployment or in the job folder.
    """
    from whyflow.flows.ask_jobs.job import AskRequest

    recipe_path = _recipe(recipe)
    with _credentials(data, credentials_block) as source:
        files = [str(_resolve(d)) for d in [source, *(extra_data or [])]]
        request = AskRequest(
            question,
            files,
            recipe=recipe_path,
            output=_resolve(output),
            session=session,
            runs_dir=str(JobStore().root.resolve()),
            table=table or None,
            query=query or None,
        )
        return _run_ask_deployment(request, _flow_run_id())


def _run_ask_deployment(request: AskRequest, flow_run_id: str | None) -> dict[str, Any]:
    """The ``ask`` deployment's body: prepare the job as `whyflow ask` does, run the recipe as a subflow."""
    from prefect.logging import get_run_logger

    from whyflow.ask.state import AskState
    from whyflow.flows.ask_jobs.job import prepare_ask_job, save_turn
    from whyflow.flows.job_flow import build_flow
    from whyflow.flows.recipes.plan import load_plan

    logger = get_run_logger()
    plan = load_plan(request.recipe)
    folder = prepare_ask_job(request, plan, engine="prefect")
    run = folder.read_run()
    run["flow_run_id"] = flow_run_id
    folder.write_run(run)
    logger.info("job folder %s: %s", folder.path, request.question)
    final = build_flow(plan, run_name=f"{plan.name}-{folder.path.name}")(
        recipe=str(folder.recipe_path.resolve()), job_dir=str(folder.path.resolve()), return_state=True
    )
    state = folder.load_any()
    if request.session and isinstance(state, AskState):
        save_turn(JobStore(request.runs_dir).root, request.session, state)
    if not final.is_completed():
        return final  # type: ignore[no-any-return]  # ends Failed or Cancelled like the recipe flow
    result = final.result(raise_on_failure=False)
    return dict(result) if isinstance(result, dict) else {"job_dir": str(folder.path)}
