"""Every stop signal ends a run CANCELLED within seconds, exit 130, no traceback, no process left.

Real `whyflow run`, `whyflow ask` and `whyflow serve` processes, each in its own session as a
terminal starts a foreground job. The signal goes either to the whole process group (a
terminal's Ctrl-C, a closed terminal's SIGHUP) or to whyflow's process alone (``kill PID``, a
process supervisor, an IDE's stop button), at the moment that used to go wrong: while the
notebook's kernel runs (its client took SIGINT and SIGTERM for itself), while `whyflow ask`
runs the sandbox, while `whyflow serve` answers a question.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from benchmarks.synthetic import linear_confounding
from tests.conftest import start_whyflow

ROOT = Path(__file__).resolve().parents[1]
QUICK = "quick_estimate"
JOB_TRAINING = ROOT / "examples" / "job_training.csv"
pytestmark = [pytest.mark.usefixtures("prefect_harness"), pytest.mark.slow]


@pytest.fixture(scope="module")
def small_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "study.csv"
    linear_confounding(300, effect=2.0, seed=11)[0].to_csv(path, index=False)
    return path


def _status(out: Path) -> str | None:
    with contextlib.suppress(OSError, ValueError, KeyError):
        return str(json.loads((out / "state.json").read_text())["status"])
    return None


def _wait(proc: subprocess.Popen[bytes], ready: object, seconds: float = 120) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline and proc.poll() is None:
        if ready():  # type: ignore[operator]
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    raise AssertionError(f"never got there: {proc.communicate()[1].decode()[-3000:]}")


def _stop(proc: subprocess.Popen[bytes], sig: signal.Signals, group: bool) -> tuple[float, str]:
    """Send ``sig``; the seconds until the process ended, its stderr. Nothing of its session may be left."""
    (os.killpg if group else os.kill)(proc.pid, sig)
    sent = time.time()
    try:
        _, err = proc.communicate(timeout=40)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise AssertionError(f"still running 40 s after {sig.name}") from None
    took = time.time() - sent
    deadline = time.time() + 5  # a child that exits as its parent's socket closes takes a moment
    left = _session(proc.pid)
    while left and time.time() < deadline:
        time.sleep(0.1)
        left = _session(proc.pid)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    assert not left, f"processes left behind: {left}"
    return took, err.decode()


def _session(sid: int) -> list[str]:
    done = subprocess.run(["ps", "-o", "pid=,stat=,args=", "-s", str(sid)], capture_output=True, text=True)
    return [line for line in done.stdout.splitlines() if line.split()[1:2] != ["Z"]]


@pytest.mark.parametrize(
    ("sig", "group"),
    [(signal.SIGINT, False), (signal.SIGTERM, False), (signal.SIGHUP, True)],
    ids=["sigint-to-the-process", "sigterm-to-the-process", "sighup-to-the-group"],
)
def test_a_signal_while_the_notebook_runs_cancels_the_run(
    sig: signal.Signals, group: bool, small_csv: Path, tmp_path: Path
) -> None:
    out = tmp_path / "job"
    argv = [
        "run",
        QUICK,
        "--data",
        str(small_csv),
        "-t",
        "treated",
        "-y",
        "outcome",
        "-o",
        str(out),
        "--set",
        "notebook_generator.html=false",
    ]
    proc = start_whyflow(argv)
    _wait(proc, lambda: _status(out) == "generating_notebook")
    time.sleep(2.0)  # the notebook is written (about 1 s); its cells run for several seconds more
    took, err = _stop(proc, sig, group)
    assert proc.returncode == 130 and "Traceback" not in err and "CancelledError" not in err, err[-3000:]
    assert took < 15, f"{sig.name} took {took:.1f} s"
    state = json.loads((out / "state.json").read_text())
    assert state["status"] == "cancelled", state["status"]
    reason = "interrupted (Ctrl-C)" if sig is signal.SIGINT else f"received signal {sig.name}"
    assert reason in state["error_message"] and f"whyflow resume {out}" in err
    assert state["completed_steps"] == ["data_profiler", "effect_estimator"]


def test_sigterm_to_the_group_that_holds_the_temporary_server(small_csv: Path, tmp_path: Path) -> None:
    """The group's SIGTERM ends Prefect's temporary server too: the run is cancelled without waiting for it."""
    recipe = tmp_path / "slow.yaml"
    recipe.write_text("name: slow\nsteps:\n  - agent: toy_profiler\n  - agent: toy_estimator\n    with: {sleep: 30}\n")
    out = tmp_path / "job"
    proc = start_whyflow(
        ["run", str(recipe), "--data", str(small_csv), "-t", "treated", "-y", "outcome", "-o", str(out)], ephemeral=True
    )
    _wait(proc, lambda: _status(out) == "estimating_effects")
    took, err = _stop(proc, signal.SIGTERM, group=True)
    assert proc.returncode == 130 and "Traceback" not in err, err[-3000:]
    assert took < 6, f"took {took:.1f} s"  # the watchdog's full grace is 10 s
    state = json.loads((out / "state.json").read_text())
    assert state["status"] == "cancelled" and state["completed_steps"] == ["toy_profiler"]


@pytest.mark.parametrize("group", [False, True], ids=["sigterm-to-the-process", "sigterm-to-the-group"])
def test_sigterm_to_whyflow_ask_cancels_and_exits(group: bool, small_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "ask"
    proc = start_whyflow(
        ["ask", "average outcome by treated", "--data", str(small_csv), "-o", str(out), "--llm", "off"]
    )
    _wait(proc, lambda: _status(out) == "exploratory_analysis")  # writing or running the code
    took, err = _stop(proc, signal.SIGTERM, group)
    assert proc.returncode == 130 and "Traceback" not in err, err[-3000:]
    assert took < 15, f"took {took:.1f} s"
    state = json.loads((out / "state.json").read_text())
    assert state["status"] == "cancelled" and "received signal SIGTERM" in state["error_message"], state
    assert f"whyflow resume {out}" in err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_serve(data_dir: Path, *extra: str, ephemeral: bool = False) -> tuple[subprocess.Popen[bytes], int]:
    """`whyflow serve` on a free port, returned once its page answers."""
    import httpx

    port = _free_port()
    proc = start_whyflow(["serve", "--port", str(port), "--data-dir", str(data_dir), *extra], ephemeral=ephemeral)

    def up() -> bool:
        with contextlib.suppress(httpx.HTTPError):
            return httpx.get(f"http://127.0.0.1:{port}/", timeout=1).status_code == 200
        return False

    _wait(proc, up)
    return proc, port


def open_session(port: int) -> str:
    """Upload the shipped example to the server on ``port``; the new chat session's id."""
    import httpx

    res = httpx.post(
        f"http://127.0.0.1:{port}/api/sessions",
        params={"filename": JOB_TRAINING.name},
        content=JOB_TRAINING.read_bytes(),
        timeout=60,
    )
    return str(res.json()["session"]["id"])


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_signal_to_whyflow_serve_cancels_the_question_it_answers(sig: signal.Signals, tmp_path: Path) -> None:
    from websockets.sync.client import connect

    data_dir = tmp_path / "chat"
    proc, port = start_serve(data_dir, "--llm", "off")
    sid = open_session(port)
    with connect(f"ws://127.0.0.1:{port}/ws/{sid}") as ws:
        ws.send(json.dumps({"type": "message", "text": "What is the average earnings by region?"}))

        def running() -> list[Path]:
            return [p.parent for p in data_dir.rglob("state.json") if _status(p.parent) not in (None, "completed")]

        _wait(proc, lambda: bool(running()))
        jobs = running()
        took, err = _stop(proc, sig, group=False)
    assert proc.returncode == 130 and "Traceback" not in err, err[-3000:]
    assert took < 15, f"took {took:.1f} s"
    assert [_status(job) for job in jobs] == ["cancelled"] * len(jobs)


def test_a_signal_to_an_idle_server_exits_130(tmp_path: Path) -> None:
    proc, _ = start_serve(tmp_path / "chat")
    took, err = _stop(proc, signal.SIGTERM, group=False)
    assert proc.returncode == 130 and took < 10 and "Traceback" not in err, err
