"""Which engine answers (`--engine auto` by default), the note saying so, and the sandbox kept warm.

Without a Prefect server configured, `whyflow ask` and `whyflow serve` run the ask recipe on the
plain runner (no Prefect imported); with one, as a flow run. The answer and the job files are
the same either way (the flow's side is covered by test_cli.py and the web tests, which run
under the Prefect harness and so take the flow).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from whyflow.cli.main import main
from whyflow.flows.ask_jobs import engine as ask_engine

ROOT = Path(__file__).resolve().parents[2]


def _no_server_env(tmp_path: Path) -> dict[str, str]:
    from tests.conftest import subprocess_env

    env = subprocess_env()
    env.pop("PREFECT_API_URL", None)
    env.pop("WHYFLOW_ASK_ENGINE", None)
    env["PREFECT_HOME"] = str(tmp_path / "prefect-home")  # no profile that names a server
    return env


# ---- choosing ----------------------------------------------------------------------------------
def test_auto_takes_prefect_only_where_a_server_is_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ask_engine.ENGINE_ENV, raising=False)
    monkeypatch.setattr(ask_engine, "prefect_api_url", lambda: None)
    assert ask_engine.resolve_engine(None)[0] == "local"
    assert ask_engine.resolve_engine("auto")[0] == "local"
    assert ask_engine.resolve_engine("prefect") == ("prefect", "asked for")
    monkeypatch.setattr(ask_engine, "prefect_api_url", lambda: "http://127.0.0.1:4200/api")
    engine, why = ask_engine.resolve_engine(None)
    assert engine == "prefect" and "http://127.0.0.1:4200/api" in why
    assert ask_engine.resolve_engine("local") == ("local", "asked for")
    monkeypatch.setenv(ask_engine.ENGINE_ENV, "local")
    assert ask_engine.resolve_engine(None)[0] == "local"
    monkeypatch.setenv(ask_engine.ENGINE_ENV, "fast")
    with pytest.raises(ValueError, match="WHYFLOW_ASK_ENGINE='fast'"):
        ask_engine.resolve_engine(None)


def test_the_server_is_read_from_the_environment_then_the_active_profile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PREFECT_API_URL", "http://example.invalid/api")
    assert ask_engine.prefect_api_url() == "http://example.invalid/api"
    monkeypatch.delenv("PREFECT_API_URL")
    monkeypatch.delenv("PREFECT_PROFILES_PATH", raising=False)
    monkeypatch.delenv("PREFECT_PROFILE", raising=False)
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path))
    assert ask_engine._profile_api_url() is None  # no profiles.toml
    (tmp_path / "profiles.toml").write_text(
        'active = "team"\n[profiles.ephemeral]\nPREFECT_SERVER_ALLOW_EPHEMERAL_MODE = "true"\n'
        '[profiles.team]\nPREFECT_API_URL = "http://10.0.0.5:4200/api"\n'
    )
    assert ask_engine._profile_api_url() == "http://10.0.0.5:4200/api"
    monkeypatch.setenv("PREFECT_PROFILE", "ephemeral")
    assert ask_engine._profile_api_url() is None


def test_a_bad_engine_setting_is_bad_input(
    shop: tuple[Path, pd.DataFrame], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(ask_engine.ENGINE_ENV, "fast")
    code = main(["--runs-dir", str(tmp_path / "runs"), "ask", "--data", str(shop[0]), "mean price?"])
    err = capsys.readouterr().err
    assert code == 2 and "WHYFLOW_ASK_ENGINE='fast'" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "runs").exists()


# ---- `whyflow ask` without a server ------------------------------------------------------------
def test_ask_without_a_server_runs_the_plain_runner_and_says_so(
    shop: tuple[Path, pd.DataFrame], tmp_path: Path
) -> None:
    path, frame = shop
    out = tmp_path / "job"
    script = (
        "import sys\nfrom whyflow.cli.main import main\n"
        f"code = main(['--runs-dir', {str(tmp_path / 'runs')!r}, 'ask', '--data', {str(path)!r}, "
        f"'What is the average price?', '--output', {str(out)!r}])\n"
        "print('PREFECT' if 'prefect' in sys.modules else 'NO-PREFECT', code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
        env=_no_server_env(tmp_path),
    )
    assert done.stdout.strip().splitlines()[-1] == "NO-PREFECT 0", done.stderr[-2000:]
    assert f"{frame.price.mean():.4g}"[:4] in done.stdout
    notes = [line for line in done.stderr.splitlines() if line.startswith("engine:")]
    assert len(notes) == 1 and notes[0].startswith("engine: local") and "no Prefect server" in notes[0], done.stderr
    run = json.loads((out / "run.json").read_text())
    assert run["engine"] == "local"
    assert "drift" in run  # compared with earlier answers, as the flow does
    assert (out / "answer.json").exists() and (out / "answer.html").exists()


def test_a_part_the_parser_cannot_read_is_said_to_need_a_model(
    shop: tuple[Path, pd.DataFrame], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No model configured: the slots read are answered, the one not read says it needs a model."""
    path, frame = shop
    monkeypatch.setenv("WHYFLOW_LLM", "off")
    q = "Mean price and its trend?\nFormat: @mean_price[m] @price_trend[t] where m is rounded to two decimal places"
    code = main(
        [
            "--runs-dir",
            str(tmp_path / "runs"),
            "ask",
            "--engine",
            "local",
            "--data",
            str(path),
            q,
            "--output",
            str(tmp_path / "job"),
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert f"@mean_price[{frame.price.mean():.2f}]" in printed
    assert "@price_trend[not computed]" in printed and "without a model: price_trend" in printed
    code = main(
        [
            "--runs-dir",
            str(tmp_path / "runs"),
            "ask",
            "--engine",
            "local",
            "--data",
            str(path),
            "Write a sonnet about the ocean tides",
            "--output",
            str(tmp_path / "sonnet"),
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0 and printed.startswith("I can't answer this without a model"), printed


# ---- the sandbox's template outlives the thread that needed it ---------------------------------
def test_the_warm_template_survives_the_threads_that_use_it(shop: tuple[Path, pd.DataFrame]) -> None:
    from whyflow.runtime.sandbox import server as sandbox_server
    from whyflow.runtime.sandbox.run import run_code

    assert ask_engine.prewarm_sandbox().wait(120)
    templates = [t for t in sandbox_server._templates.values() if t.alive()]
    if not templates:
        pytest.skip("this machine gives the sandbox no warm template")
    pids = {t.proc.pid for t in templates}
    results = []
    for _ in range(2):  # as chat turns: each in its own thread, which then ends
        worker = threading.Thread(target=lambda: results.append(run_code("result = len(df)", {"data": shop[0]})))
        worker.start()
        worker.join(120)
        time.sleep(0.3)  # bubblewrap's --die-with-parent fires when the starting thread has ended
    assert [r.result for r in results] == [300, 300]
    assert {t.proc.pid for t in sandbox_server._templates.values() if t.alive()} == pids


# ---- `whyflow serve` on the plain runner -------------------------------------------------------
@pytest.mark.slow
def test_serve_answers_on_the_plain_runner(tmp_path: Path) -> None:
    import uvicorn
    from websockets.sync.client import connect

    from tests.web.conftest import JOB_TRAINING, LiveServer, run_until_done
    from whyflow.web import create_app

    class Server(LiveServer):
        def __init__(self, data_dir: Path) -> None:
            super().__init__(data_dir)
            self.server = uvicorn.Server(
                uvicorn.Config(create_app(data_dir, "local"), host="127.0.0.1", port=self.port, log_level="warning")
            )
            self.thread = threading.Thread(target=self.server.run, daemon=True)

    server = Server(tmp_path / "chat").start()
    try:
        sid = server.upload(JOB_TRAINING).json()["session"]["id"]
        seconds = []
        with connect(server.ws_url(sid)) as ws:
            for question in ("What is the average earnings by region?", "What is the median age?"):
                start = time.monotonic()
                events = run_until_done(ws, {"type": "message", "text": question})
                seconds.append(time.monotonic() - start)
                assert [e for e in events if e["type"] == "error"] == [], events
                assert any(e["type"] in ("text", "table") for e in events), events
    finally:
        server.stop()
    runs = [json.loads(p.read_text()) for p in (tmp_path / "chat").rglob("run.json")]
    assert len(runs) == 2 and {r["engine"] for r in runs} == {"local"}
    answers = [json.loads(p.read_text()) for p in (tmp_path / "chat").rglob("answer.json")]
    assert len(answers) == 2 and all(a["output_type"] != "error" for a in answers)
    assert seconds[1] < 30, seconds  # warm: about 0.5 s on an idle 2-core machine


# ---- a stop signal on the plain runner ---------------------------------------------------------
@pytest.mark.slow
def test_sigterm_during_a_causal_question_cancels_the_plain_run(tmp_path: Path) -> None:
    """The nested causal job the signal cancels does not become the answer: the ask job ends
    cancelled (exit 130) with its answering step still to run, and a resume asks again."""
    import signal

    from tests.conftest import start_whyflow
    from tests.web.conftest import JOB_TRAINING

    out = tmp_path / "ask"
    proc = start_whyflow(
        [
            "ask",
            "What is the effect of training on earnings?",
            "--data",
            str(JOB_TRAINING),
            "-o",
            str(out),
            "--engine",
            "auto",
        ],
        ephemeral=True,
    )

    def nested_status() -> str | None:
        try:
            return str(json.loads((out / "causal" / "state.json").read_text())["status"])
        except (OSError, ValueError, KeyError):
            return None

    deadline = time.monotonic() + 180
    while nested_status() in (None, "pending", "fetching_data", "profiling") and proc.poll() is None:
        assert time.monotonic() < deadline, "the nested causal job never started estimating"
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err.decode()[-3000:]
    assert "engine: local" in err.decode() and f"whyflow resume {out}" in err.decode()
    state = json.loads((out / "state.json").read_text())
    assert state["status"] == "cancelled" and "SIGTERM" in state["error_message"]
    assert "causal_runner" not in state["completed_steps"] and state.get("final_output") is None, state[
        "completed_steps"
    ]

    env = _no_server_env(tmp_path)  # the resume starts the stopped nested job afresh, beside the old one
    done = subprocess.run(
        [sys.executable, "-m", "whyflow.cli.main", "resume", str(out)],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
        env=env,
    )
    assert done.returncode == 0 and "causal effect of 'training' on 'earnings'" in done.stdout, done.stderr[-3000:]
    assert (out / "causal.stopped" / "state.json").exists()
    assert json.loads((out / "state.json").read_text())["status"] == "completed"


@pytest.mark.slow
def test_a_signal_to_serve_on_the_plain_runner_cancels_the_question(tmp_path: Path) -> None:
    """As test_signals' serve test, on the plain runner: a signal while a question runs (or waits
    for the sandbox's first start) saves it cancelled, exit 130, nothing left behind."""
    import signal

    from websockets.sync.client import connect

    from tests.test_signals import _status, _stop, _wait, open_session, start_serve

    data_dir = tmp_path / "chat"
    proc, port = start_serve(data_dir, "--engine", "local", ephemeral=True)
    sid = open_session(port)
    with connect(f"ws://127.0.0.1:{port}/ws/{sid}") as ws:
        ws.send(json.dumps({"type": "message", "text": "What is the average earnings by region?"}))
        _wait(proc, lambda: any(data_dir.rglob("state.json")))
        jobs = [p.parent for p in data_dir.rglob("state.json")]
        took, err = _stop(proc, signal.SIGINT, group=False)
    assert proc.returncode == 130 and "Traceback" not in err, err[-3000:]
    assert took < 15, f"took {took:.1f} s"
    assert all(_status(job) in ("cancelled", "completed") for job in jobs), [_status(j) for j in jobs]
