"""The chat page in a real headless Chromium, driven over the DevTools protocol.

Uploads examples/job_training.csv through the page's file input, waits for the first analysis
(the per-column table and the session title), asks for a bar chart and checks that vega-embed
drew it, that a question full of markup stays text, and saves a screenshot (``WHYFLOW_CHAT_SCREENSHOT``
names where; docs/chat-page.png was made so).
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.sync.client import ClientConnection, connect

from tests.web.conftest import JOB_TRAINING, LiveServer, free_port

BROWSER = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        BROWSER is None, reason="no Chromium on this machine (make install adds it where apt-get works)"
    ),
]
EVIL = "<img src=x onerror=\"document.title='pwned'\">"


class Page:
    """One tab over the DevTools protocol (commands answered in order; events ignored)."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws, self.ids = ws, itertools.count(1)

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        msg_id = next(self.ids)
        self.ws.send(json.dumps({"id": msg_id, "method": method, "params": params}))
        while True:
            reply = json.loads(self.ws.recv(timeout=60))
            if reply.get("id") == msg_id:
                assert "error" not in reply, reply
                return dict(reply.get("result", {}))

    def js(self, expression: str) -> Any:
        out = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        assert "exceptionDetails" not in out, out
        return out["result"].get("value")

    def wait(self, expression: str, timeout: float = 90, what: str = "") -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.js(expression)
            if value:
                return value
            time.sleep(0.25)
        status = self.js("document.getElementById('status-text').textContent")
        raise AssertionError(f"timed out waiting for {what or expression} (status: {status})")


def _open(url: str, profile: Path) -> tuple[subprocess.Popen[bytes], Page]:
    assert BROWSER is not None
    port = free_port()
    proc = subprocess.Popen(
        [
            BROWSER,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            f"--remote-debugging-port={port}",
            "--window-size=1366,900",
            url,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            targets = httpx.get(f"http://127.0.0.1:{port}/json/list", timeout=2).json()
            page = next(t for t in targets if t.get("type") == "page")
            break
        except (httpx.HTTPError, StopIteration, ValueError):
            assert proc.poll() is None and time.monotonic() < deadline, "Chromium did not start"
            time.sleep(0.2)
    ws = connect(page["webSocketDebuggerUrl"], max_size=64 * 2**20, open_timeout=30)
    return proc, Page(ws)


def test_upload_first_analysis_and_a_chart_in_chromium(live_server: LiveServer, tmp_path: Path) -> None:
    proc, page = _open(live_server.url + "/", tmp_path / "profile")
    try:
        page.send("Emulation.setDeviceMetricsOverride", width=1366, height=900, deviceScaleFactor=1, mobile=False)
        page.wait("document.readyState === 'complete' && !!window.vegaEmbed && !!window.whyflowChat", 30, "the page")
        root = page.send("DOM.getDocument")["root"]["nodeId"]
        node = page.send("DOM.querySelector", nodeId=root, selector="#file")["nodeId"]
        page.send("DOM.setFileInputFiles", nodeId=node, files=[str(JOB_TRAINING)])

        page.wait("document.body.dataset.turns === '1'", 90, "the first analysis")
        assert page.js("document.querySelectorAll('#conversation .msg.table tbody tr').length") == 8  # every column
        assert page.js("document.querySelectorAll('#conversation .msg.table tbody tr:not([hidden])').length") == 5
        if os.environ.get("WHYFLOW_CHAT_SCREENSHOT"):  # the first analysis too, for a look by hand
            first = base64.b64decode(page.send("Page.captureScreenshot", format="png")["data"])
            Path(os.environ["WHYFLOW_CHAT_SCREENSHOT"]).with_suffix(".first.png").write_bytes(first)
        summary = page.js("document.querySelector('#conversation .msg.text .md').textContent")
        assert "job_training" in summary and "education_years" in summary  # names stay names, not emphasis
        title = page.js("document.getElementById('title').textContent")
        assert title and title != "job_training"
        assert page.js("document.querySelector('#sessions .session.current .s-title').textContent") == title

        page.js(f"""(() => {{ const t = document.getElementById('composer-text');
            t.value = {json.dumps("Is " + EVIL + " a column?")}; document.getElementById('send').click(); }})()""")
        page.wait("document.body.dataset.turns === '2'", 90, "the answer to a question with markup")
        assert page.js("document.querySelectorAll('#conversation img').length") == 0  # shown as text, never run
        assert page.js("document.title") != "pwned"
        assert EVIL in page.js("document.querySelector('#conversation .msg.user').textContent")

        page.js("""(() => { const t = document.getElementById('composer-text');
            t.value = 'Show a bar chart of the average earnings by region';
            t.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true})); })()""")
        page.wait("document.body.dataset.turns === '3'", 90, "the chart answer")
        page.wait(
            "document.querySelectorAll('#conversation .msg.plot svg .marks, #conversation .msg.plot svg.marks').length > 0",
            20,
            "the drawn chart",
        )
        bars = page.js("document.querySelectorAll('#conversation .msg.plot [role=\"graphics-symbol\"]').length")
        assert bars >= 4, bars  # one bar per region
        assert page.js("document.querySelectorAll('#conversation .msg.error').length") == 0
        # a query result as the server sends one (a model's sql_query), markup in every field: folded, shown as text
        event = {
            "type": "query_result",
            "description": EVIL,
            "query": f"SELECT '{EVIL}' AS x",
            "columns": [EVIL],
            "rows": [[EVIL]] * 7,
            "row_count": 7,
            "is_error": False,
        }
        page.js(f"window.whyflowChat.onEvent({json.dumps(event)})")
        assert page.js("document.querySelector('#conversation .msg.query_result details').open") is False
        assert (
            page.js("document.querySelectorAll('#conversation .msg.query_result tbody tr:not([hidden])').length") == 5
        )
        assert EVIL in page.js("document.querySelector('#conversation .msg.query_result summary').textContent")
        assert page.js("document.querySelectorAll('#conversation img').length") == 0
        page.js("document.querySelector('#conversation .msg.query_result').remove()")
        page.js("[...document.querySelectorAll('#conversation .msg.user')].pop().scrollIntoView({block: 'start'})")
        time.sleep(0.5)
        shot = base64.b64decode(page.send("Page.captureScreenshot", format="png")["data"])
        assert shot.startswith(b"\x89PNG")
        target = Path(os.environ.get("WHYFLOW_CHAT_SCREENSHOT") or tmp_path / "chat-page.png")
        target.write_bytes(shot)
    finally:
        page.ws.close()
        proc.terminate()
        proc.wait(timeout=20)
