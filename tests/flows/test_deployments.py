"""whyflow as Prefect users run it: a real server, `prefect deploy --all`, a process worker.

One local server and one worker (real subprocesses in their own sessions, stopped by PID) serve
the whole module. A deployment is triggered through the API the UI uses; the test checks the
task runs, the artifacts and the job folder, that unchanged data is not recomputed, that
cancelling a flow run ends the job CANCELLED with its state saved, and that a deployment with a
schedule on a PostgreSQL table or an S3 object recomputes only after its data changed.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from datetime import UTC
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from benchmarks.synthetic import linear_confounding
from tests.bad_inputs.common import headline_row
from tests.conftest import EXAMPLE, ROOT, subprocess_env
from tests.sources import conftest as sources
from tests.sources.conftest import KEY, SECRET, Postgres

pytestmark = pytest.mark.slow
PREFECT = str(Path(sys.executable).with_name("prefect"))
postgres, s3 = sources.postgres, sources.s3  # the PostgreSQL and S3 servers of tests/sources, for the schedules


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop a process we started (and its session) by its PID: SIGTERM, then SIGKILL."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def _wait(check: Callable[[], Any], timeout: float, what: str, interval: float = 0.5) -> Any:
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = check()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Server + work pool + deployments + worker; yields the API URL, env and runs folder."""
    base = tmp_path_factory.mktemp("prefect-stack")
    url = f"http://127.0.0.1:{_free_port()}/api"
    runs = base / "runs"
    env = subprocess_env(
        PREFECT_HOME=str(base / "home"),
        PREFECT_API_URL=url,
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        PREFECT_LOGGING_LEVEL="INFO",
        PREFECT_WORKER_QUERY_SECONDS="1",
        PREFECT_WORKER_CANCELLATION_POLL_SECONDS="2",
        PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS="2",  # a new schedule's runs appear within seconds
        WHYFLOW_RUNS_DIR=str(runs),
        MPLCONFIGDIR=str(base / "mpl"),
        JUPYTER_RUNTIME_DIR=str(base / "jupyter"),
        IPYTHONDIR=str(base / "ipython"),
    )
    procs: list[subprocess.Popen[bytes]] = []

    def start(args: list[str], log: str, cwd: Path) -> subprocess.Popen[bytes]:
        fh = (base / log).open("wb")
        proc = subprocess.Popen(args, cwd=cwd, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
        procs.append(proc)
        return proc

    try:
        server = start(
            [PREFECT, "server", "start", "--host", "127.0.0.1", "--port", url.split(":")[2][:-4]], "server.log", base
        )
        _wait(lambda: _healthy(url) or server.poll() is not None, 120, "the Prefect server")
        assert server.poll() is None, (base / "server.log").read_text()[-3000:]
        for cmd in (
            [PREFECT, "work-pool", "create", "local-pool", "--type", "process"],
            [PREFECT, "--no-prompt", "deploy", "--all"],
        ):
            done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
            assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        # The worker starts elsewhere: the deployments' pull step must move it into the project.
        start([PREFECT, "worker", "start", "--pool", "local-pool", "--type", "process"], "worker.log", base)
        yield {"url": url, "env": env, "runs": runs, "base": base}
    finally:
        for proc in reversed(procs):
            _stop(proc)


@pytest.fixture(scope="module")
def client(stack: dict[str, Any]) -> Iterator[Any]:
    from prefect import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: stack["url"]}):
        with get_client(sync_client=True) as c:
            yield c


@pytest.fixture(scope="module")
def small_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    frame, _ = linear_confounding(600, effect=2.0, seed=5)
    path = tmp_path_factory.mktemp("data") / "study.csv"
    frame.to_csv(path, index=False)
    return path


def _trigger(client: Any, deployment: str, parameters: dict[str, Any]) -> UUID:
    from prefect.deployments import run_deployment

    run = run_deployment(deployment, parameters=parameters, timeout=0, client=None)
    return UUID(str(run.id))


def _final(client: Any, run_id: UUID, timeout: float, stack: dict[str, Any]) -> Any:
    def done() -> Any:
        run = client.read_flow_run(run_id)
        return run if run.state is not None and run.state.is_final() else None

    try:
        return _wait(done, timeout, f"flow run {run_id} to finish", interval=1.0)
    except AssertionError:
        raise AssertionError((stack["base"] / "worker.log").read_text()[-5000:]) from None


def _job_of(stack: dict[str, Any], run_id: UUID) -> Path | None:
    for run_file in stack["runs"].glob("*/run.json"):
        if json.loads(run_file.read_text()).get("flow_run_id") == str(run_id):
            return run_file.parent
    return None


def _children(client: Any, run_id: UUID) -> list[Any]:
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterParentFlowRunId

    parent = FlowRunFilter(parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[run_id]))
    return list(client.read_flow_runs(flow_run_filter=parent))


def _artifacts(client: Any, run_id: UUID) -> dict[str, Any]:
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    found = client.read_artifacts(artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[run_id])))
    return {a.key: a for a in found}


def test_deployment_runs_recipe_with_tasks_artifacts_and_reuse(
    stack: dict[str, Any], client: Any, small_data: Path
) -> None:
    params = {
        "recipe": "quick_estimate",
        "data": str(small_data),
        "treatment": "treated",
        "outcome": "outcome",
        "metadata": None,
        "overrides": {"notebook_generator.execute": "false", "effect_estimator.bootstrap": "30"},
    }
    deployments = {d.name for d in client.read_deployments()}
    assert {"causal-analysis", "quick-estimate"} <= deployments
    schedule = client.read_deployment_by_name("whyflow/causal-analysis").schedules
    assert schedule and schedule[0].schedule.cron == "0 6 * * *" and schedule[0].active is False

    run_id = _trigger(client, "whyflow/quick-estimate", params)
    run = _final(client, run_id, 240, stack)
    assert run.state.is_completed(), run.state

    job = _job_of(stack, run_id)
    assert job is not None
    state = json.loads((job / "state.json").read_text())
    assert state["status"] == "completed" and (job / "report.ipynb").exists()
    heads = [e for e in state["treatment_effects"] if e["details"].get("headline")]
    assert len(heads) == 1 and heads[0]["ci_lower"] < 2.0 < heads[0]["ci_upper"]

    (child,) = _children(client, run_id)
    assert child.name == f"quick_estimate-{state['job_id']}" and child.state.is_completed()
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    tasks = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[child.id])))
    agents = {"data_profiler", "effect_estimator", "notebook_generator"}
    assert sorted(t.name for t in tasks if t.name in agents) == sorted(agents)
    # The estimator's parts (``outcome-fold-3``), mapped over the worker's task runner as tasks of this run.
    parts = {t.name.rsplit("-", 1)[0] for t in tasks if t.name not in agents}
    assert parts and parts <= {"estimator", "propensity-fold", "outcome-fold", "dr-learner-fold"}, parts
    assert all(t.state.is_completed() for t in tasks)

    arts = _artifacts(client, child.id)
    assert {
        "quick-estimate-summary",
        "quick-estimate-estimates",
        "quick-estimate-report",
        "quick-estimate-job-folder",
    } <= set(arts)
    summary = arts["quick-estimate-summary"].data
    assert "AIPW" in summary or heads[0]["method"] in summary
    assert state["job_id"] in summary and "sha256" in summary and "first completed run" in summary
    table = arts["quick-estimate-estimates"].data
    rows = json.loads(table) if isinstance(table, str) else table
    assert len(rows) == len(state["treatment_effects"]) and sum(r["headline"] == "★" for r in rows) == 1
    assert f"]({job.resolve().as_uri()})" in arts["quick-estimate-job-folder"].data  # a link to the folder
    assert "report.html" in arts["quick-estimate-report"].data or "report.ipynb" in arts["quick-estimate-report"].data
    progress = arts["quick-estimate-progress"]
    assert progress.type == "progress" and float(progress.data) == 100.0

    # The same data again: no recomputation, the run points at the completed job.
    again = _trigger(client, "whyflow/quick-estimate", params)
    rerun = _final(client, again, 120, stack)
    assert rerun.state.is_completed() and not _children(client, again)
    assert sorted(p.name for p in stack["runs"].iterdir()) == [job.name]
    reused = _artifacts(client, again)["quick-estimate-summary"].data
    assert f"results reused from job `{state['job_id']}`" in reused


def test_cancel_from_the_api_ends_the_job_cancelled(
    stack: dict[str, Any], client: Any, small_data: Path, tmp_path: Path
) -> None:
    from prefect.states import Cancelling

    recipe = tmp_path / "slow.yaml"
    recipe.write_text("name: slow\nsteps:\n  - agent: toy_profiler\n  - agent: toy_estimator\n    with: {sleep: 90}\n")
    run_id = _trigger(
        client,
        "whyflow/quick-estimate",
        {
            "recipe": str(recipe),
            "data": str(small_data),
            "treatment": "treated",
            "outcome": "outcome",
            "metadata": None,
        },
    )

    def estimating() -> Path | None:
        job = _job_of(stack, run_id)
        if job is not None and json.loads((job / "state.json").read_text())["status"] == "estimating_effects":
            return job
        return None

    job = _wait(estimating, 120, "the slow step to start")
    time.sleep(1.0)
    asked = time.time()
    client.set_flow_run_state(run_id, Cancelling(message="cancelled from the test"), force=True)
    run = _final(client, run_id, 90, stack)
    took = time.time() - asked
    assert run.state.is_cancelled(), run.state
    state = json.loads((job / "state.json").read_text())
    assert state["status"] == "cancelled" and state["completed_steps"] == ["toy_profiler"]
    assert state["error_message"].startswith("Cancelled")
    assert took < 60, f"the cancel took {took:.0f}s: the run did not stop gracefully"
    (child,) = _children(client, run_id)
    assert child.state.is_cancelled()


def test_cancellation_hook_saves_a_job_the_runner_could_not(
    small_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process killed before the runner saved: the on_cancellation hook ends the job CANCELLED."""
    from types import SimpleNamespace

    from prefect.states import Cancelling

    from whyflow.deployments import mark_job_cancelled
    from whyflow.flows.jobstore.jobs import RunRequest, prepare_job
    from whyflow.flows.recipes.plan import load_plan

    recipe = str(ROOT / "tests" / "fixtures" / "recipes" / "valid_toy.yaml")
    out = tmp_path / "job"
    folder = prepare_job(RunRequest(recipe=recipe, data=str(small_data), output=str(out)), load_plan(recipe, {}))
    folder.write_run({**folder.read_run(), "flow_run_id": "1234"})
    state = folder.load()
    state.transition(state.status.FETCHING_DATA)
    folder.save(state)  # as a SIGKILL would leave it: mid-run, not terminal
    flow_run = SimpleNamespace(id="1234", parameters={"output": None})
    monkeypatch.setenv("WHYFLOW_RUNS_DIR", str(tmp_path))
    mark_job_cancelled(None, flow_run, Cancelling(message="cancelled in the UI"))
    saved = json.loads((out / "state.json").read_text())
    assert saved["status"] == "cancelled" and saved["error_message"] == "Cancelled: cancelled in the UI"


def test_ask_deployment_answers_through_the_worker_with_artifacts(stack: dict[str, Any], client: Any) -> None:
    """The `ask` deployment, triggered through the API the UI's "Run" form uses and served by the worker."""
    assert "ask" in {d.name for d in client.read_deployments()}
    data = EXAMPLE
    before = data.read_bytes()
    params = {"question": "What is the average earnings by region?", "data": str(data), "recipe": "ask"}
    run_id = _trigger(client, "whyflow-ask/ask", params)
    run = _final(client, run_id, 300, stack)
    assert run.state.is_completed(), run.state
    job = _job_of(stack, run_id)
    assert job is not None and (job / "answer.json").exists() and (job / "answer.html").exists()
    answer = json.loads((job / "answer.json").read_text())
    assert answer["output_type"] != "error" and answer["code"]
    import pandas as pd

    truth = pd.read_csv(data).groupby("region")["earnings"].mean()
    rows = (
        answer["result"]["rows"] if isinstance(answer["result"], dict) else [list(r.values()) for r in answer["result"]]
    )
    got = {str(r[0]): float(r[1]) for r in rows}
    assert got == pytest.approx(truth.to_dict(), rel=1e-9)  # the number the code computed, in the answer
    (child,) = _children(client, run_id)
    assert child.state.is_completed()
    arts = _artifacts(client, child.id)
    assert {"ask-answer", "ask-table"} <= set(arts), sorted(arts)
    assert data.read_bytes() == before  # the user's file is only read


def test_a_project_folder_from_whyflow_init_deploys_and_runs_its_own_recipe(
    stack: dict[str, Any], client: Any, small_data: Path
) -> None:
    project = stack["base"] / "project"
    argv = [
        "init",
        str(project),
        "--recipe",
        "quick_estimate",
        "--data",
        str(small_data),
        "-t",
        "treated",
        "-y",
        "outcome",
    ]
    made = subprocess.run(
        [sys.executable, "-m", "whyflow.cli.main", *argv], env=stack["env"], capture_output=True, text=True, timeout=120
    )
    assert made.returncode == 0, made.stderr
    # The user edits what init gave them: the recipe's name and step options, the deployment's name.
    recipe = project / "quick_estimate.yaml"
    text = recipe.read_text().replace("name: quick_estimate", "name: my_estimate")
    recipe.write_text(text.replace("with: {execute: true}", "with: {execute: false}"))
    config = project / "prefect.yaml"
    config.write_text(config.read_text().replace("- name: quick-estimate", "- name: my-estimate"))
    deploy = subprocess.run(
        [PREFECT, "--no-prompt", "deploy", "--all"],
        cwd=project,
        env=stack["env"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert deploy.returncode == 0, deploy.stdout[-3000:] + deploy.stderr[-3000:]

    run_id = _trigger(client, "whyflow/my-estimate", {})
    run = _final(client, run_id, 240, stack)
    assert run.state.is_completed(), run.state
    job = _job_of(stack, run_id)
    assert job is not None
    state = json.loads((job / "state.json").read_text())
    recorded = json.loads((job / "run.json").read_text())
    assert state["status"] == "completed" and recorded["recipe_name"] == "my_estimate"
    assert Path(recorded["recipe"]) == recipe.resolve()
    cells = json.loads((job / "report.ipynb").read_text())["cells"]  # written, not executed, as edited
    assert cells and not [c for c in cells if c["cell_type"] == "code" and c.get("outputs")]


def _scheduled_runs(client: Any, deployment_id: UUID) -> list[Any]:
    """The deployment's runs the scheduler made and no worker has started, earliest first."""
    from prefect.client.schemas.filters import (
        DeploymentFilter,
        DeploymentFilterId,
        FlowRunFilter,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType

    runs = client.read_flow_runs(
        deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[deployment_id])),
        flow_run_filter=FlowRunFilter(
            state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.SCHEDULED]))
        ),
    )
    return sorted(runs, key=lambda r: r.expected_start_time)


def _next_scheduled_run(client: Any, deployment_id: UUID, stack: dict[str, Any]) -> Any:
    """The schedule's next run, brought forward to now (as "Run now" on a scheduled run in the UI); its final state."""
    from datetime import datetime

    from prefect.states import Scheduled

    run = _wait(lambda: next(iter(_scheduled_runs(client, deployment_id)), None), 120, "the scheduler's runs")
    assert run.auto_scheduled
    client.set_flow_run_state(run.id, Scheduled(scheduled_time=datetime.now(UTC)), force=True)
    return _final(client, run.id, 300, stack)


SHIFT = 5000.0
"""The refresh adds this to every trainee's earnings: the next run's estimate moves by exactly this much."""


def _example() -> Any:
    import pandas as pd

    return pd.read_csv(EXAMPLE)


def _refreshed(frame: Any) -> Any:
    return frame.assign(earnings=frame["earnings"] + SHIFT * frame["training"])


def _check_schedule_reuses_then_recomputes(
    stack: dict[str, Any],
    client: Any,
    name: str,
    source: dict[str, Any],
    refresh: Callable[[], None],
    secret: str,
    job_variables: dict[str, Any] | None = None,
) -> None:
    """An hourly deployment of the quick recipe on the shipped example at ``source``: its next scheduled run on
    unchanged data reuses the job; after ``refresh`` (every trainee earns :data:`SHIFT` more) the next one
    recomputes with its drift flagged, and its estimate is the first one plus the shift. ``secret`` is in no file
    of either job folder."""
    from datetime import datetime, timedelta

    from prefect.client.schemas.actions import DeploymentScheduleCreate
    from prefect.client.schemas.schedules import IntervalSchedule

    base = client.read_deployment_by_name("whyflow/quick-estimate")
    params = {
        "recipe": "quick_estimate",
        **source,
        "treatment": "training",
        "outcome": "earnings",
        "metadata": None,
        "overrides": {"notebook_generator.execute": "false", "effect_estimator.bootstrap": "30"},
    }
    # Hourly from an hour ahead: no run starts by itself; the test brings each next one forward.
    schedule = IntervalSchedule(interval=timedelta(hours=1), anchor_date=datetime.now(UTC) + timedelta(hours=1))
    deployment_id = client.create_deployment(
        flow_id=base.flow_id,
        name=name,
        entrypoint=base.entrypoint,
        work_pool_name=base.work_pool_name,
        work_queue_name=base.work_queue_name,
        pull_steps=base.pull_steps,
        parameter_openapi_schema=base.parameter_openapi_schema,
        parameters=params,
        job_variables=job_variables or {},
        schedules=[DeploymentScheduleCreate(schedule=schedule, active=True)],
    )

    first = _next_scheduled_run(client, deployment_id, stack)
    assert first.state.is_completed(), first.state
    job = _job_of(stack, first.id)
    assert job is not None and len(_children(client, first.id)) == 1
    assert json.loads((job / "state.json").read_text())["status"] == "completed"

    unchanged = _next_scheduled_run(client, deployment_id, stack)
    assert unchanged.state.is_completed() and not _children(client, unchanged.id)  # not recomputed
    assert _job_of(stack, unchanged.id) is None

    refresh()
    changed = _next_scheduled_run(client, deployment_id, stack)
    assert changed.state.is_completed(), changed.state
    assert len(_children(client, changed.id)) == 1
    redone = _job_of(stack, changed.id)
    assert redone is not None and redone != job
    run = json.loads((redone / "run.json").read_text())
    assert run["drift"]["previous_job"] == job.name and run["drift"]["flags"], run["drift"]
    before = headline_row(json.loads((job / "state.json").read_text()))
    after = headline_row(json.loads((redone / "state.json").read_text()))
    assert after["method"] == before["method"], (before, after)
    assert after["estimate"] == pytest.approx(before["estimate"] + SHIFT, abs=1.0), (before, after)

    for folder in (job, redone):  # every file of both job folders
        leaked = [str(p) for p in folder.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
        assert not leaked, leaked


def test_a_scheduled_deployment_on_a_postgres_table_recomputes_only_when_the_table_changed(
    stack: dict[str, Any], client: Any, postgres: Postgres
) -> None:
    """The table's password is in a Secret block: the deployment names the block, never the password."""
    from prefect.blocks.system import Secret
    from prefect.settings import PREFECT_API_URL, temporary_settings

    frame = _example()
    postgres.load(frame, "trainees")
    with temporary_settings(updates={PREFECT_API_URL: stack["url"]}):
        Secret(value=SECRET).save("shop-password", overwrite=True)
    source = {"data": postgres.url(None), "table": "trainees", "credentials_block": "shop-password"}
    _check_schedule_reuses_then_recomputes(
        stack, client, "trainees-hourly", source, lambda: postgres.load(_refreshed(frame), "trainees"), SECRET
    )
    stored = client.read_deployment_by_name("whyflow/trainees-hourly")
    assert SECRET not in json.dumps(stored.model_dump(mode="json"))


def _upload(url: str, rows: Any) -> None:
    import fsspec

    with fsspec.open(url, "wb") as fh:
        rows.to_parquet(fh, index=False)


def test_a_scheduled_deployment_on_an_s3_object_recomputes_only_when_the_object_changed(
    stack: dict[str, Any], client: Any, s3: str
) -> None:
    """The worker's process gets the store's endpoint and keys in its environment, as the deployment sets it."""
    frame = _example()
    url = f"s3://{s3}/exports/trainees.parquet"
    _upload(url, frame)
    names = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL", "AWS_DEFAULT_REGION")
    _check_schedule_reuses_then_recomputes(
        stack,
        client,
        "exports-hourly",
        {"data": url},
        lambda: _upload(url, _refreshed(frame)),
        KEY,
        job_variables={"env": {name: os.environ[name] for name in names}},
    )


def test_an_s3_deployment_reads_its_keys_from_a_secret_block_and_stores_them_nowhere(
    stack: dict[str, Any], client: Any, s3: str
) -> None:
    """The worker's environment has no keys (it started before the store did): the run reads them from the block
    the deployment names."""
    from prefect.blocks.system import Secret
    from prefect.settings import PREFECT_API_URL, temporary_settings

    frame = _example()
    url = f"s3://{s3}/exports/trainees-keyed.parquet"
    _upload(url, frame)
    options = {
        "key": os.environ["AWS_ACCESS_KEY_ID"],
        "secret": os.environ["AWS_SECRET_ACCESS_KEY"],
        "endpoint_url": os.environ["AWS_ENDPOINT_URL"],
        "client_kwargs": {"region_name": os.environ["AWS_DEFAULT_REGION"]},
    }
    with temporary_settings(updates={PREFECT_API_URL: stack["url"]}):
        Secret(value=options).save("exports-keys", overwrite=True)
    _check_schedule_reuses_then_recomputes(
        stack,
        client,
        "exports-keyed-hourly",
        {"data": url, "credentials_block": "exports-keys"},
        lambda: _upload(url, _refreshed(frame)),
        KEY,
    )
    stored = client.read_deployment_by_name("whyflow/exports-keyed-hourly")
    assert KEY not in json.dumps(stored.model_dump(mode="json"))
