"""A restarted server shows every conversation: `whyflow serve` over the same data folder."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from websockets.sync.client import connect

from tests.conftest import subprocess_env
from tests.web.conftest import JOB_TRAINING, LiveServer, free_port, run_until_done

pytestmark = pytest.mark.slow


def test_messages_survive_a_restart(tmp_path: Path, prefect_harness: None) -> None:
    data_dir = tmp_path / "chat"
    first = LiveServer(data_dir).start()
    try:
        sid = first.upload(JOB_TRAINING).json()["session"]["id"]
        with connect(first.ws_url(sid)) as ws:
            run_until_done(ws, {"type": "auto_analyze"})
            run_until_done(ws, {"type": "message", "text": "What is the average earnings by region?"})
        before = httpx.get(f"{first.url}/api/sessions/{sid}").json()
    finally:
        first.stop()
    assert len(before["messages"]) >= 5

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "whyflow.cli.main", "serve", "--port", str(port), "--data-dir", str(data_dir)],
        env=subprocess_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            try:
                listed = httpx.get(f"{url}/api/sessions", timeout=2).json()
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "`whyflow serve` did not answer within 60 s"
                time.sleep(0.2)
        assert [s["id"] for s in listed["sessions"]] == [sid]
        assert listed["sessions"][0]["title"] == before["session"]["title"] != "job_training"
        after = httpx.get(f"{url}/api/sessions/{sid}").json()
        assert after["messages"] == before["messages"]
        page = httpx.get(url)
        assert page.status_code == 200 and "default-src 'none'" in page.headers["content-security-policy"]
        assert httpx.get(f"{url}/vendor/vega-embed.min.js").status_code == 200
        assert httpx.get(f"{url}/vendor/../app.py").status_code == 404
    finally:
        proc.terminate()
        out = proc.communicate(timeout=20)[0]
    assert f"chat page at http://127.0.0.1:{port}/" in out
