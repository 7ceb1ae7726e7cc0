"""Scale-out: the same recipe under threads and on a Dask cluster gives the same answer."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks.synthetic import linear_confounding
from tests.conftest import PLUGIN_DIR, ROOT, subprocess_env

pytestmark = pytest.mark.usefixtures("prefect_harness")

RECIPE = """\
name: scale_out
settings: {task_runner: threads, seed: 3}
steps:
  - agent: data_profiler
  - parallel:
      - agent: eda_agent
      - agent: toy_recommender
  - agent: effect_estimator
    with: {methods: [naive, ols, aipw], bootstrap: 30}
"""


CLUSTER = """
import sys, time
from distributed import LocalCluster
cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
print(cluster.scheduler_address, flush=True)
while True:
    time.sleep(1)
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An existing Dask cluster (2 worker processes) in its own process; yields its address."""
    env = subprocess_env(PYTHONPATH=os.pathsep.join([str(PLUGIN_DIR), str(ROOT), os.environ.get("PYTHONPATH", "")]))
    log = (tmp_path_factory.mktemp("dask") / "cluster.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-c", CLUSTER], env=env, stdout=subprocess.PIPE, stderr=log, start_new_session=True
    )
    try:
        assert proc.stdout is not None
        address = proc.stdout.readline().decode().strip()
        assert address.startswith("tcp://"), "the Dask cluster did not start"
        yield address
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _transitions(address: str) -> int:
    """How many task transitions the cluster's scheduler has made."""
    from distributed import Client

    with Client(address, timeout=30) as client:
        return int(client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.transition_counter))


def _run(tmp_path: Path, data: Path, name: str, *settings: str) -> dict[str, Any]:
    """`whyflow run` in a subprocess, as a user runs it (Dask pickles the tasks it ships)."""
    recipe = tmp_path / "scale_out.yaml"
    recipe.write_text(RECIPE)
    out = tmp_path / name
    sets = [arg for s in settings for arg in ("--set", s)]
    args = ["run", str(recipe), "--data", str(data), "-t", "treated", "-y", "outcome", "-o", str(out), *sets]
    done = subprocess.run(
        [sys.executable, "-m", "whyflow.cli.main", *args],
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return dict(json.loads((out / "state.json").read_text()))


def test_threads_and_dask_give_identical_results(cluster: str, tmp_path: Path) -> None:
    frame, _ = linear_confounding(800, effect=2.0, seed=21)
    data = tmp_path / "study.csv"
    frame.to_csv(data, index=False)

    threads = _run(tmp_path, data, "threads")
    before = _transitions(cluster)
    dask = _run(tmp_path, data, "dask", "task_runner=dask", f"dask_address={cluster}")
    assert _transitions(cluster) > before, "no task reached the Dask cluster"

    assert threads["status"] == dask["status"] == "completed"
    assert threads["completed_steps"] == dask["completed_steps"]

    def effects(state: dict[str, Any]) -> list[tuple[Any, ...]]:
        return [(e["method"], e["estimate"], e["ci_lower"], e["ci_upper"]) for e in state["treatment_effects"]]

    # Identical up to floating-point summation order in BLAS (last few bits), nothing more.
    assert len(effects(threads)) == 3 and _close(effects(threads), effects(dask))
    head = next(e for e in dask["treatment_effects"] if e["details"].get("headline"))
    assert head["ci_lower"] < 2.0 < head["ci_upper"]
    for key in ("data_quality_score", "correlation_matrix", "covariate_balance", "vif_scores"):
        assert _close(threads["eda_result"][key], dask["eda_result"][key]), key
    assert threads["recommendations"] == dask["recommendations"] and threads["data_profile"] == dask["data_profile"]


def _close(a: Any, b: Any) -> bool:
    """Equal structure and labels; floats equal to 1e-9 relative."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return a == pytest.approx(b, rel=1e-9, abs=1e-12)
    return bool(a == b)


WARNING_RECIPE = """\
name: warn_on_dask
settings: {task_runner: dask, max_workers: 2}
steps:
  - agent: toy_profiler
  - parallel:
      - agent: toy_estimator
        with: {warn: true}
      - agent: toy_recommender
"""


def test_a_dask_workers_warnings_go_to_the_jobs_log_not_the_terminal(tmp_path: Path) -> None:
    """A parallel group's agents run in the cluster's worker processes, whose stderr is the terminal."""
    frame, _ = linear_confounding(300, effect=2.0, seed=4)
    data = tmp_path / "study.csv"
    frame.to_csv(data, index=False)
    recipe = tmp_path / "warn_on_dask.yaml"
    recipe.write_text(WARNING_RECIPE)
    out = tmp_path / "job"
    done = subprocess.run(
        [sys.executable, "-m", "whyflow.cli.main", "run", str(recipe), "--data", str(data), "-t", "treated", "-y"]
        + ["outcome", "-o", str(out)],
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "toy estimator: overflow" not in done.stdout + done.stderr, done.stderr[-3000:]
    assert "RuntimeWarning: toy estimator: overflow" in (out / "warnings.log").read_text()
