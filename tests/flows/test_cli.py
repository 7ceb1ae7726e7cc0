"""The `whyflow` command as a user meets it: runs through Prefect, errors, resume after kill -9."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from benchmarks.synthetic import linear_confounding
from tests.conftest import subprocess_env
from whyflow.cli.main import main

RECIPES = Path(__file__).resolve().parents[1] / "fixtures" / "recipes"
ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.usefixtures("prefect_harness")


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    frame, _ = linear_confounding(800, effect=2.0, seed=11)
    path = tmp_path_factory.mktemp("data") / "study.csv"
    frame.to_csv(path, index=False)
    return path


def run_cli(*argv: str) -> int:
    return main(list(argv))


def run_toy(data: Path, *extra: str) -> int:
    """`whyflow run` of the toy recipe on ``data`` with the test question."""
    return run_cli(
        "run", str(RECIPES / "valid_toy.yaml"), "--data", str(data), "-t", "treated", "-y", "outcome", *extra
    )


def test_run_through_prefect_leaves_state_and_summary(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "job"
    code = run_cli(
        "run",
        str(RECIPES / "valid_toy.yaml"),
        "--data",
        str(data),
        "--treatment",
        "treated",
        "--outcome",
        "outcome",
        "--output",
        str(out),
    )
    printed = capsys.readouterr().out
    assert code == 0, printed
    state = json.loads((out / "state.json").read_text())
    assert state["status"] == "completed"
    assert "✓ toy_profiler" in printed and "critique round 2" in printed
    assert "Effect of treated on outcome:" in printed and f"State:      {out / 'state.json'}" in printed
    assert (out / "recipe.yaml").exists() and json.loads((out / "run.json").read_text())["data_sha256"]


def test_task_runs_are_named_after_agents(data: Path, tmp_path: Path) -> None:
    from prefect import get_client

    out = tmp_path / "job"
    assert run_toy(data, "-o", str(out)) == 0
    job_id = json.loads((out / "state.json").read_text())["job_id"]

    async def task_names() -> list[str]:
        async with get_client() as client:
            runs = await client.read_flow_runs()
            run = next(r for r in runs if r.name == f"toy-{job_id}")
            assert run.state is not None and run.state.is_completed()
            tasks = await client.read_task_runs()
            return sorted(t.name for t in tasks if t.flow_run_id == run.id)

    import asyncio

    names = asyncio.run(task_names())
    assert names.count("toy_estimator@1") == 1 and "toy_critique@2" in names and "toy_profiler" in names


@pytest.mark.parametrize(
    ("make", "args", "message"),
    [
        (lambda p: p.write_text(""), ("-t", "treated", "-y", "outcome"), "data file is empty"),
        (lambda p: p.write_text('a,b\n1,2\n3,4,5,6\n"x'), ("-t", "a", "-y", "b"), "malformed CSV"),
        (None, ("-t", "treatment", "-y", "outcome"), "treatment column 'treatment' is not in"),
        (None, ("-t", "treated", "-y", "outcom"), "(did you mean 'outcome'?)"),
        (
            lambda p: pd.DataFrame({"t": [1] * 5, "y": range(5)}).to_csv(p, index=False),
            ("-t", "t", "-y", "y"),
            "treatment column 't' is constant",
        ),
        (lambda p: p.write_text("a,b\n"), ("-t", "a", "-y", "b"), "has a header but no rows"),
    ],
    ids=["empty", "malformed", "wrong-column", "misspelt", "constant-treatment", "header-only"],
)
def test_bad_input_gets_one_clear_line(
    make, args, message, data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:  # type: ignore[no-untyped-def]
    path = data
    if make is not None:
        path = tmp_path / "bad.csv"
        make(path)
    before = path.read_bytes()
    code = run_cli(
        "run", str(RECIPES / "valid_toy.yaml"), "--data", str(path), *args, "--output", str(tmp_path / "job")
    )
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert path.read_bytes() == before


def test_missing_data_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli("run", str(RECIPES / "valid_toy.yaml"), "--data", str(tmp_path / "nope.csv")) == 2
    assert "data file not found" in capsys.readouterr().err


def test_failed_run_exits_nonzero_with_reason(data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text("name: r\nsteps:\n  - agent: toy_profiler\n  - agent: bad_writer\n")
    code = run_cli(
        "run", str(recipe), "--data", str(data), "-t", "treated", "-y", "outcome", "-o", str(tmp_path / "job")
    )
    err = capsys.readouterr().err
    assert code == 1
    assert "run failed in bad_writer: agent 'bad_writer' wrote state field 'treatment_effects'" in err
    state = json.loads((tmp_path / "job" / "state.json").read_text())
    assert state["status"] == "failed" and state["data_profile"] is not None


def test_validate_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli("validate", str(RECIPES / "valid_toy.yaml")) == 0
    assert "recipe 'toy' is valid" in capsys.readouterr().out
    assert run_cli("validate", "ask_react") == 0
    assert "is valid — 1 agent: data_scientist" in capsys.readouterr().out
    assert run_cli("validate", str(RECIPES / "unknown_agent.yaml"), str(RECIPES / "valid_toy.yaml")) == 1
    err = capsys.readouterr().err
    assert "unknown_agent.yaml:4:5 step 'toy_estimater'" in err


def test_status_list_and_cancel_commands(data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = tmp_path / "runs"
    toy = ("run", str(RECIPES / "valid_toy.yaml"), "--data", str(data), "-t", "treated", "-y", "outcome")
    assert run_cli("--runs-dir", str(runs), *toy, "--job-id", "job-a") == 0
    capsys.readouterr()
    assert run_cli("--runs-dir", str(runs), "list") == 0
    listing = capsys.readouterr().out
    assert "job-a" in listing and "completed" in listing
    assert run_cli("--runs-dir", str(runs), "status", "job-a") == 0
    assert "Job job-a: completed (100%)" in capsys.readouterr().out
    assert run_cli("--runs-dir", str(runs), "cancel", "job-a") == 0
    assert "already completed" in capsys.readouterr().out
    assert run_cli("--runs-dir", str(runs), "status", "nope") == 2


def test_kill_minus_nine_then_resume(data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    proc, out = _start_slow_run(data, tmp_path, sleep=3)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    killed = json.loads((out / "state.json").read_text())
    assert killed["completed_steps"] == ["toy_profiler"] and killed["status"] == "estimating_effects"

    assert run_cli("resume", str(out)) == 0
    printed = capsys.readouterr().out
    assert "resuming job" in printed and "↷ toy_profiler already done" in printed
    final = json.loads((out / "state.json").read_text())
    assert final["status"] == "completed" and final["completed_steps"] == ["toy_profiler", "toy_estimator"]
    assert len(final["treatment_effects"]) == 1


def _start_slow_run(data: Path, tmp_path: Path, sleep: float = 20) -> tuple[subprocess.Popen[bytes], Path]:
    """Start `whyflow run` in a subprocess and return once its slow estimator is running."""
    recipe = tmp_path / "slow.yaml"
    recipe.write_text(
        f"name: slow\nsteps:\n  - agent: toy_profiler\n  - agent: toy_estimator\n    with: {{sleep: {sleep}}}\n"
    )
    out = tmp_path / "job"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "whyflow.cli.main",
            "run",
            str(recipe),
            "--data",
            str(data),
            "-t",
            "treated",
            "-y",
            "outcome",
            "-o",
            str(out),
        ],
        env=subprocess_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.time() + 120
    while time.time() < deadline:
        if (out / "state.json").exists() and json.loads((out / "state.json").read_text())[
            "status"
        ] == "estimating_effects":
            return proc, out
        time.sleep(0.1)
    proc.kill()
    raise AssertionError("the run never reached the estimator")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_interrupt_cancels_and_saves(sig: signal.Signals, data: Path, tmp_path: Path) -> None:
    proc, out = _start_slow_run(data, tmp_path)
    time.sleep(0.5)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    state = json.loads((out / "state.json").read_text())
    assert state["status"] == "cancelled", err.decode()
    assert state["completed_steps"] == ["toy_profiler"] and state["data_profile"] is not None
    assert proc.returncode == 130
    assert b"whyflow resume" in err


def test_parquet_input(data: Path, tmp_path: Path) -> None:
    parquet = tmp_path / "study.parquet"
    pd.read_csv(data).to_parquet(parquet, index=False)
    out = tmp_path / "job"
    assert run_toy(parquet, "-o", str(out)) == 0
    state = json.loads((out / "state.json").read_text())
    assert state["dataset_info"]["n_samples"] == 800 and state["status"] == "completed"


def test_http_url_input_is_downloaded_into_the_job_folder(data: Path, tmp_path: Path) -> None:
    import functools
    import http.server
    import threading

    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(data.parent))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/{data.name}"
        out = tmp_path / "job"
        assert (
            run_cli(
                "run", str(RECIPES / "valid_toy.yaml"), "--data", url, "-t", "treated", "-y", "outcome", "-o", str(out)
            )
            == 0
        )
        missing = run_cli("run", str(RECIPES / "valid_toy.yaml"), "--data", url + ".nope", "-o", str(tmp_path / "job2"))
    finally:
        server.shutdown()
    state = json.loads((out / "state.json").read_text())
    assert state["dataset_info"]["url"] == url
    assert Path(state["dataset_info"]["local_path"]).parent == out / "data"
    assert missing == 2


def test_heavy_imports_overlap_the_temporary_server_boot(tmp_path: Path) -> None:
    """With no server configured, whyflow starts Prefect's server in a child process before the
    run's imports, which happen while it boots (once); the run's Prefect settings point at it, this
    process never imports Prefect's server package, the run sends no heartbeats to it, what the server
    prints goes to its own log file instead of the terminal, and the server and its log are gone afterwards."""
    script = (
        "import os, sys, httpx\n"
        "from prefect.settings import PREFECT_API_URL\n"
        "from whyflow.flows.running.temp_server import temporary_server\n"
        "calls = []\n"
        "def warm():\n"
        "    try:\n"
        "        up = httpx.get(os.environ['PREFECT_API_URL'] + '/health').status_code == 200\n"
        "    except httpx.ConnectError:\n"
        "        up = False\n"
        "    calls.append(not up)  # spawned, not yet answering\n"
        "    import statsmodels.api  # noqa: F401\n"
        "from prefect.settings import get_current_settings\n"
        "with temporary_server(while_booting=warm) as server:\n"
        "    ok = httpx.get(f'{server.api_url}/health').status_code == 200\n"
        "    same = PREFECT_API_URL.value() == server.api_url\n"
        "    beats = get_current_settings().flows.heartbeat_frequency\n"
        "    logged = server.log.exists()\n"
        "stopped = server.process.poll() is not None and PREFECT_API_URL.value() is None\n"
        "stopped = stopped and logged and not server.log.exists()\n"
        "print(calls, ok, same, stopped, 'statsmodels.api' in sys.modules, 'prefect.server.api.server' in sys.modules,\n"
        "      beats, get_current_settings().flows.heartbeat_frequency)\n"
    )
    env = {k: v for k, v in subprocess_env(PREFECT_HOME=str(tmp_path / "prefect")).items() if k != "PREFECT_API_URL"}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    # no flow-run heartbeats against a server that stops with the run (Prefect's default after it)
    assert out.stdout.strip().splitlines()[-1] == "[True] True True True True False None 180"
    assert "uvicorn" not in out.stderr and "Traceback" not in out.stderr


def test_a_configured_server_is_used_as_it_is(tmp_path: Path) -> None:
    """PREFECT_API_URL set: nothing is started, the imports still run, the block gets None."""
    script = (
        "from whyflow.flows.running.temp_server import temporary_server\n"
        "calls = []\n"
        "with temporary_server(while_booting=lambda: calls.append(1)) as server:\n"
        "    print(server, calls)\n"
    )
    env = subprocess_env(PREFECT_HOME=str(tmp_path / "prefect"), PREFECT_API_URL="http://127.0.0.1:9/api")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "None [1]"


def test_the_console_script_exits_with_the_runs_code_and_its_whole_summary(data: Path, tmp_path: Path) -> None:
    """`python -m whyflow.cli.main` ends through console_main (no interpreter teardown): the summary is all
    printed, the exit code is the run's, the temporary Prefect server is stopped, and bad input
    still exits 2 with its one line."""
    import psutil

    env = {k: v for k, v in subprocess_env(PREFECT_HOME=str(tmp_path / "prefect")).items() if k != "PREFECT_API_URL"}
    cmd = [sys.executable, "-m", "whyflow.cli.main", "run", str(RECIPES / "valid_toy.yaml"), "--data", str(data)]
    out = subprocess.run(
        [*cmd, "-t", "treated", "-y", "outcome", "-o", str(tmp_path / "job")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.rstrip().splitlines()[-1].startswith("State:")  # the last line of the summary
    assert json.loads((tmp_path / "job" / "state.json").read_text())["status"] == "completed"
    home = str(tmp_path / "prefect")
    left = [p.pid for p in psutil.process_iter(["environ"]) if (p.info["environ"] or {}).get("PREFECT_HOME") == home]
    assert not left  # neither the temporary server nor a kernel outlived the exit
    bad = subprocess.run(
        [*cmd, "-t", "nope", "-y", "outcome", "-o", str(tmp_path / "bad")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert bad.returncode == 2 and bad.stderr.strip().startswith("whyflow: error: treatment column 'nope'")
