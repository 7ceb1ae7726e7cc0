"""Faults end in a clear state that can be resumed: Ctrl-C, a damaged state, a full disk, a deleted data file, a notebook past its time limit."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.bad_inputs.common import (
    FAST,
    QUICK,
    TOY,
    T,
    Y,
    study,
    tmpfs,
)
from tests.conftest import start_whyflow
from whyflow.cli.main import main

pytestmark = pytest.mark.usefixtures("prefect_harness")


def _slow_recipe(folder: Path, sleep: float = 30) -> Path:
    recipe = folder / "slow.yaml"
    recipe.write_text(
        f"name: slow\nsteps:\n  - agent: toy_profiler\n  - agent: toy_estimator\n    with: {{sleep: {sleep}}}\n"
    )
    return recipe


def _wait_for(out: Path, status: str, proc: subprocess.Popen[bytes], seconds: float = 120) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline and proc.poll() is None:
        with contextlib.suppress(OSError, ValueError):
            if json.loads((out / "state.json").read_text())["status"] == status:
                return
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"the run never reached {status}: {proc.communicate()[1].decode()[-2000:]}")


@pytest.mark.slow
def test_ctrl_c_to_the_process_group_cancels_within_seconds(good_csv: Path, tmp_path: Path) -> None:
    """Prefect's temporary server is in the group too (no PREFECT_API_URL): it must survive the Ctrl-C."""
    out = tmp_path / "job"
    argv = ["run", str(_slow_recipe(tmp_path)), "--data", str(good_csv), *T, *Y, "-o", str(out)]
    proc = start_whyflow(argv, ephemeral=True)
    _wait_for(out, "estimating_effects", proc)
    os.killpg(proc.pid, signal.SIGINT)
    sent = time.time()
    try:
        _, err = proc.communicate(timeout=30)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert time.time() - sent < 20, "Ctrl-C took too long"
    assert proc.returncode == 130 and b"Traceback" not in err, err.decode()[-2000:]
    state = json.loads((out / "state.json").read_text())
    assert state["status"] == "cancelled" and state["completed_steps"] == ["toy_profiler"]
    recipe = out / "recipe.yaml"
    recipe.write_text(recipe.read_text().replace("sleep: 30", "sleep: 0"))  # resume quickly
    assert main(["resume", str(out)]) == 0
    assert json.loads((out / "state.json").read_text())["status"] == "completed"


def test_ctrl_c_during_start_up_leaves_no_traceback_and_no_pending_job(good_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "job"
    proc = start_whyflow(["run", str(_slow_recipe(tmp_path)), "--data", str(good_csv), *T, *Y, "-o", str(out)])
    deadline = time.time() + 60
    while not (out / "state.json").exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.02)  # the job exists; Prefect is still being imported
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and b"Traceback" not in err, err.decode()[-2000:]
    state = json.loads((out / "state.json").read_text())
    assert state["status"] == "cancelled"


@pytest.mark.parametrize("damage", ["truncated", "empty-object"])
def test_damaged_state_is_named_listed_and_recovered(
    damage: str, good_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    assert main(["--runs-dir", str(runs), "run", TOY, "--data", str(good_csv), *T, *Y, "--job-id", "job-d"]) == 0
    folder = runs / "job-d"
    state_file = folder / "state.json"
    assert json.loads((folder / "state.json.prev").read_text())["job_id"] == "job-d"  # the previous good state
    text = state_file.read_text()
    state_file.write_text(text[: len(text) // 2] if damage == "truncated" else "{}")
    capsys.readouterr()

    assert main(["--runs-dir", str(runs), "status", "job-d"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert str(state_file) in err and ("truncated" if damage == "truncated" else "not a valid job state") in err
    assert "state.json.prev" in err and "traces.jsonl" in err

    assert main(["--runs-dir", str(runs), "list"]) == 0
    assert "job-d" in (listing := capsys.readouterr().out) and "damaged" in listing

    assert main(["--runs-dir", str(runs), "resume", "job-d"]) == 0
    assert "using the previous good state" in capsys.readouterr().out
    assert json.loads(state_file.read_text())["status"] == "completed"
    assert (folder / "state.json.damaged").exists()


def test_a_question_with_a_damaged_state_resumes_from_the_previous_good_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`whyflow resume` takes one path for both families: an ask job's torn state.json is put aside and
    the previous good state continues, as for an analysis."""
    from whyflow.flows.ask_jobs.job import AskRequest, prepare_ask_job
    from whyflow.flows.jobstore.store import JobFolder
    from whyflow.flows.recipes.plan import load_plan

    plan = load_plan("ask")
    data = tmp_path / "study.csv"
    study(300).to_csv(data, index=False)
    out = tmp_path / "question"
    folder = prepare_ask_job(AskRequest("average outcome by treated", [str(data)], output=str(out)), plan)
    folder.save(folder.load_any())  # a second save keeps the first as state.json.prev
    text = (out / "state.json").read_text()
    (out / "state.json").write_text(text[: len(text) // 2])
    capsys.readouterr()
    assert main(["resume", str(out)]) == 0, capsys.readouterr().err
    assert "using the previous good state" in capsys.readouterr().out
    assert (out / "state.json.damaged").exists()
    state = JobFolder(out).load_any()
    assert state.status.value == "completed" and state.final_output is not None


def test_full_disk_ends_failed_with_the_reason_and_no_temporary_files(tmp_path: Path) -> None:
    """The analysis copy of a 300,000-row file does not fit a 2 MB disk."""
    rng = np.random.default_rng(0)
    n = 300_000
    frame = pd.DataFrame({"treated": rng.integers(0, 2, n), "x1": rng.normal(size=n), "outcome": rng.normal(size=n)})
    path = tmp_path / "big.csv"
    frame.to_csv(path, index=False)
    with tmpfs(tmp_path / "small", "size=2m") as disk:
        out = disk / "job"
        proc = start_whyflow(
            ["run", QUICK, "--data", str(path), *T, *Y, "-o", str(out), *FAST]
        )  # the console a user sees
        stdout, stderr = (b.decode() for b in proc.communicate(timeout=180))
        state = json.loads((out / "state.json").read_text())
        leftovers = [p.name for p in out.rglob("*.tmp")]
    assert proc.returncode == 1
    assert state["status"] == "failed" and state["error_agent"] == "data_profiler"
    assert "No space left on device" in state["error_message"] and "analysis.parquet" in state["error_message"]
    assert leftovers == []
    assert "Traceback" not in stdout + stderr, stdout + stderr  # the traceback is in errors.log
    assert f"whyflow: run failed in data_profiler: {state['error_message']}" in stderr


def test_resume_after_the_data_file_is_deleted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No copy yet (nothing ran): one line naming the file, exit 2, the job untouched. Once the
    profiler has written the job's own copy, the resume goes on with it and says so."""
    from whyflow.flows.jobstore.jobs import RunRequest, prepare_job
    from whyflow.flows.recipes.plan import load_plan
    from whyflow.flows.running.dispatch import run_single_agent

    recipe = tmp_path / "r.yaml"
    recipe.write_text("name: r\nsteps:\n  - agent: data_profiler\n  - agent: toy_estimator\n")
    plan = load_plan(str(recipe))
    for case in ("no-copy", "copy"):
        data = tmp_path / f"{case}.csv"
        study(300).to_csv(data, index=False)
        out = tmp_path / case
        folder = prepare_job(
            RunRequest(recipe=str(recipe), data=str(data), treatment="treated", outcome="outcome", output=str(out)),
            plan,
        )
        if case == "copy":  # the profiler ran, then the run stopped
            state = folder.load()
            run_single_agent("data_profiler", state, out)
            state.completed_steps = ["data_profiler"]
            folder.save(state)
        data.unlink()
        capsys.readouterr()
        code = main(["resume", str(out)])
        printed = capsys.readouterr()
        if case == "no-copy":
            assert code == 2 and len(printed.err.strip().splitlines()) == 1 and "Traceback" not in printed.err
            assert f"data file not found: {data}" in printed.err and "holds no copy" in printed.err
            assert json.loads((out / "state.json").read_text())["status"] == "pending"
        else:
            assert code == 0, printed.err
            assert f"data file {data} is gone; the job goes on with its own copy {out / 'data'}" in printed.out
            assert json.loads((out / "state.json").read_text())["status"] == "completed"


def test_resume_of_a_question_after_its_data_file_is_deleted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`whyflow ask` keeps its own copy of each file from the start: the resume says so and answers;
    with that copy gone too, one line and exit 2."""
    from whyflow.flows.ask_jobs.job import AskRequest, prepare_ask_job
    from whyflow.flows.recipes.plan import load_plan

    plan = load_plan("ask")
    for case in ("copy", "no-copy"):
        data = tmp_path / f"{case}.csv"
        study(300).to_csv(data, index=False)
        out = tmp_path / case
        prepare_ask_job(AskRequest("average outcome by treated", [str(data)], output=str(out)), plan)  # not run yet
        data.unlink()
        if case == "no-copy":
            (out / "data" / "data.parquet").unlink()
        capsys.readouterr()
        code = main(["resume", str(out)])
        printed = capsys.readouterr()
        if case == "copy":
            assert code == 0, printed.err
            assert f"data file {data} is gone; the job goes on with its own copy {out / 'data'}" in printed.out
        else:
            assert code == 2 and len(printed.err.strip().splitlines()) == 1, printed.err
            assert f"the job's copy of {data} is missing" in printed.err


def _cancel_once(out: Path, status: str) -> None:
    """`whyflow cancel` as soon as the job reaches ``status``: it stops before the next agent."""
    deadline = time.time() + 120
    while time.time() < deadline:
        with contextlib.suppress(OSError, ValueError):
            if json.loads((out / "state.json").read_text())["status"] == status:
                main(["cancel", str(out)])
                return
        time.sleep(0.02)


def _fill_inodes(folder: Path) -> int:
    """Create empty files in ``folder`` until the disk refuses one (ENOSPC); return how many fit."""
    folder.mkdir()
    n = 0
    while True:
        try:
            (folder / str(n)).touch()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
            return n
        n += 1


@pytest.mark.slow
def test_disk_full_at_the_notebook_ends_failed_and_resume_completes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The disk fills up after the estimate: the notebook cannot be written; FAILED, no .tmp, resumable.

    The run is stopped before the notebook step (`whyflow cancel` while the estimator runs), the
    disk (a tmpfs with few inodes: out of inodes is as full as out of bytes, ENOSPC) is filled
    but for one file, which the notebook step's report_state.json takes: report.ipynb is refused.
    """
    path = tmp_path / "study.csv"
    study(300).to_csv(path, index=False)
    with tmpfs(tmp_path / "disk", "size=64m,nr_inodes=300") as disk:
        out = disk / "job"
        watcher = threading.Thread(target=_cancel_once, args=(out, "estimating_effects"))
        watcher.start()
        code = main(["run", QUICK, "--data", str(path), *T, *Y, "-o", str(out), *FAST])
        watcher.join()
        state = json.loads((out / "state.json").read_text())
        assert code == 130 and state["status"] == "cancelled", state.get("error_message")
        assert state["completed_steps"] == ["data_profiler", "effect_estimator"]
        (out / "CANCEL").unlink()  # what resume does, done first so the filler takes its inode too
        filler = disk / "filler"
        assert _fill_inodes(filler) > 0
        (filler / "0").unlink()

        capsys.readouterr()
        code = main(["resume", str(out)])
        err = capsys.readouterr().err
        state = json.loads((out / "state.json").read_text())
        leftovers = [p.name for p in out.rglob("*.tmp")]
        assert code == 1 and state["status"] == "failed" and state["error_agent"] == "notebook_generator", err
        message = state["error_message"]
        assert "No space left on device" in message and "report.ipynb" in message, message
        assert f"run failed in notebook_generator: {message}" in err and "Traceback" not in err
        assert leftovers == [] and not (out / "report.ipynb").exists()

        shutil.rmtree(filler)  # space freed
        assert main(["resume", str(out)]) == 0
        state = json.loads((out / "state.json").read_text())
        assert state["status"] == "completed" and (out / "report.ipynb").exists()
        assert state["completed_steps"][-1] == "notebook_generator" and not list(out.rglob("*.tmp"))


def test_notebook_time_limit_holds_and_no_kernel_is_left(tmp_path: Path) -> None:
    from tests.helpers import make_state
    from whyflow.flows.running.dispatch import run_single_agent
    from whyflow.runtime.children import kernel_processes

    state = make_state(study(200), tmp_path, "treated", "outcome")
    started = time.perf_counter()
    result = run_single_agent("notebook_generator", state, tmp_path, {"timeout": 1, "html": False})
    took = time.perf_counter() - started
    errors = result.outputs["execution_errors"]
    assert any(e["ename"] == "TimeLimit" for e in errors), errors
    assert took < 30 and kernel_processes() == []
    assert (tmp_path / "report.ipynb").exists() and not list(tmp_path.glob("*.tmp"))


def test_eda_figures_that_cannot_be_written_are_a_recorded_skip(tmp_path: Path) -> None:
    """A file where the plots folder should be: the figures are skipped with the reason, the EDA still answers."""
    from tests.helpers import make_state
    from whyflow.flows.running.dispatch import run_single_agent

    state = make_state(study(300), tmp_path, "treated", "outcome")
    (tmp_path / "plots").write_text("not a folder")
    result = run_single_agent("eda_agent", state, tmp_path)
    assert "skipped the plots (reason in the trace)" in result.summary
    assert "Skipped the EDA plots: FileExistsError" in result.reasoning
    assert state.eda_result is not None and state.eda_result.plot_paths == {} and state.eda_result.covariate_balance


def test_a_url_that_fails_and_a_second_run_on_one_folder(good_csv: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    import socket

    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = main(["run", TOY, "--data", f"http://127.0.0.1:{port}/study.csv", *T, *Y, "-o", str(tmp_path / "u")])
    err = capsys.readouterr().err
    assert code == 2 and "cannot download" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "u").exists()  # nothing half-written: no job folder without its data

    out = tmp_path / "job"
    assert main(["run", TOY, "--data", str(good_csv), *T, *Y, "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["run", TOY, "--data", str(good_csv), *T, *Y, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "already holds a job" in err and len(err.strip().splitlines()) == 1
    assert json.loads((out / "state.json").read_text())["status"] == "completed"  # the first run is untouched


def test_torn_traces_and_a_damaged_run_record(good_csv: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from whyflow.flows.jobstore.store import JobFolder

    runs = tmp_path / "runs"
    assert main(["--runs-dir", str(runs), "run", TOY, "--data", str(good_csv), *T, *Y, "--job-id", "job-t"]) == 0
    folder = JobFolder(runs / "job-t")
    n = len(folder.read_traces())
    with folder.traces_path.open("a") as fh:
        fh.write('{"agent_name": "cut sho')  # a crash in the middle of a line
    assert len(folder.read_traces()) == n and main(["--runs-dir", str(runs), "status", "job-t"]) == 0
    folder.run_path.write_text("{")
    capsys.readouterr()
    assert main(["--runs-dir", str(runs), "list"]) == 0
    assert "job-t" in (listing := capsys.readouterr().out) and "damaged" in listing


def test_a_cell_that_runs_past_the_time_limit_is_stopped_mid_cell(tmp_path: Path) -> None:
    """The kernel is killed in the middle of a long cell; execution ends at once (no wait on a dead kernel)."""
    import nbformat

    from whyflow.causal.report.notebook import execute_notebook
    from whyflow.runtime.children import kernel_processes, time_limit

    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("import time\ntime.sleep(120)"), nbformat.v4.new_code_cell("print('after')")]
    )
    started = time.perf_counter()
    with time_limit(6) as expired:
        report = execute_notebook(nb, tmp_path, 300)
    assert expired.is_set() and time.perf_counter() - started < 40
    assert not report.completed and "DeadKernelError" in report.message
    assert kernel_processes() == []


def test_a_ctrl_c_that_lands_where_python_cannot_raise_it_prints_no_traceback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The signal handler's KeyboardInterrupt raised inside a __del__ (or an import lock's weakref callback,
    as one run showed) is 'unraisable': Python would print it with a traceback. The stop is noted already."""
    import sys

    from whyflow.flows.running.interrupts import interrupt_guard

    shown: list[BaseException | None] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda info: shown.append(info.exc_value))  # prints "Exception ignored"

    class Interrupted:
        def __del__(self) -> None:
            raise KeyboardInterrupt

    class Broken:
        def __del__(self) -> None:
            raise ValueError("a real fault")

    with interrupt_guard(lambda: None):
        Interrupted()  # collected at once: its __del__ raises where nothing can catch it
        Broken()
    assert [type(e) for e in shown] == [ValueError]
    Interrupted()  # outside the guard, as Python has it
    assert [type(e) for e in shown] == [ValueError, KeyboardInterrupt]
