"""A real chat server on a free loopback port: uvicorn in a thread of the test process."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
JOB_TRAINING = ROOT / "examples" / "job_training.csv"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LiveServer:
    """``whyflow.web.create_app(data_dir)`` served by uvicorn on 127.0.0.1 in a daemon thread."""

    def __init__(self, data_dir: Path) -> None:
        import uvicorn

        from whyflow.web import create_app

        self.data_dir = data_dir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(
            uvicorn.Config(create_app(data_dir), host="127.0.0.1", port=self.port, log_level="warning")
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(15)

    def upload(self, path: Path, name: str | None = None) -> httpx.Response:
        return httpx.post(
            f"{self.url}/api/sessions", params={"filename": name or path.name}, content=path.read_bytes(), timeout=60
        )

    def ws_url(self, session_id: str) -> str:
        return f"ws://127.0.0.1:{self.port}/ws/{session_id}"


def run_until_done(ws: Any, first: dict[str, Any] | None = None, timeout: float = 90) -> list[dict[str, Any]]:
    """Send ``first`` (if any) and collect events up to and including ``done``."""
    if first is not None:
        ws.send(json.dumps(first))
    events: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        assert left > 0, f"no done within {timeout}s: {[e['type'] for e in events]}"
        event = json.loads(ws.recv(timeout=left))
        events.append(event)
        if event["type"] == "done":
            return events


@pytest.fixture
def live_server(tmp_path: Path, prefect_harness: None) -> Iterator[LiveServer]:
    server = LiveServer(tmp_path / "chat").start()
    try:
        yield server
    finally:
        server.stop()
