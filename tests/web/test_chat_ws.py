"""The chat server end to end: upload, the first analysis, a question, stop, one run per session.

A real uvicorn server on a loopback port, a real WebSocket client, the ask recipes run as
Prefect flow runs (the test harness's API), and the SQLite rows checked afterwards.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from websockets.sync.client import connect

from tests.web.conftest import JOB_TRAINING, LiveServer, run_until_done

pytestmark = pytest.mark.slow
CONTENT = {"text", "table", "plot", "query_result"}


def _types(events: list[dict]) -> list[str]:
    return [e["type"] for e in events]


def _check_order(events: list[dict]) -> None:
    """status first, content after it, done last and only once."""
    types = _types(events)
    assert types[0] == "status", types
    assert types[-1] == "done" and types.count("done") == 1, types
    assert any(t in CONTENT for t in types), types
    assert all(
        t in {"status", "text", "table", "plot", "query_result", "session_update", "error", "done"} for t in types
    )


def test_upload_first_analysis_then_a_question(live_server: LiveServer) -> None:
    original = JOB_TRAINING.read_bytes()
    res = live_server.upload(JOB_TRAINING)
    assert res.status_code == 201, res.text
    session = res.json()["session"]
    sid = session["id"]
    with connect(live_server.ws_url(sid)) as ws:
        first = run_until_done(ws, {"type": "auto_analyze"})
        _check_order(first)
        types = _types(first)
        assert "error" not in types, first
        table = next(e for e in first if e["type"] == "table")
        assert table["headers"][:4] == ["Column", "Type", "Non-Null Count", "Unique Count"]
        assert {r[0] for r in table["rows"]} >= {"training", "earnings", "region"}  # every column
        assert any(e["type"] == "text" and e["text"].strip() for e in first)
        update = next(e for e in first if e["type"] == "session_update")
        assert update["title"] and types.index("session_update") < types.index("done")

        answer = run_until_done(ws, {"type": "message", "text": "What is the average earnings by region?"})
        _check_order(answer)
        assert "error" not in _types(answer), answer
        result = next(e for e in answer if e["type"] == "table")
        assert [r[0] for r in result["rows"]] == ["east", "north", "south", "west"]
        assert abs(result["rows"][3][1] - 22691.93) < 0.01  # README: west 22,691.93
        text = next(e for e in answer if e["type"] == "text")["text"]
        assert "region" in text.lower()

    rows = (
        sqlite3.connect(live_server.data_dir / "chat.sqlite3")
        .execute("SELECT role, type, text FROM messages WHERE session_id = ? ORDER BY id", (sid,))
        .fetchall()
    )
    kinds = [(r, t) for r, t, _ in rows]
    assert ("user", "text") in kinds and ("assistant", "reasoning") in kinds
    assert kinds.count(("assistant", "table")) == 2 and kinds.count(("assistant", "text")) >= 2
    user = [text for r, t, text in rows if r == "user"]
    assert user == ["What is the average earnings by region?"]
    assert kinds.index(("user", "text")) > kinds.index(("assistant", "table"))  # the question after the first analysis
    journal = sqlite3.connect(live_server.data_dir / "chat.sqlite3").execute("PRAGMA journal_mode").fetchone()[0]
    assert journal == "wal"
    listed = live_server.upload  # the session list names the title the first analysis gave
    import httpx

    sessions = httpx.get(f"{live_server.url}/api/sessions").json()["sessions"]
    assert sessions[0]["id"] == sid and sessions[0]["title"] == update["title"]
    detail = httpx.get(f"{live_server.url}/api/sessions/{sid}").json()
    assert all(m["type"] != "reasoning" for m in detail["messages"])  # saved, not shown
    assert JOB_TRAINING.read_bytes() == original and listed is not None
    uploaded = Path(live_server.data_dir / "sessions" / sid / "job_training.csv")
    assert uploaded.read_bytes() == original  # the session's copy, untouched by the runs


def test_uploads_are_checked(live_server: LiveServer, tmp_path: Path) -> None:
    bad = tmp_path / "notes.txt"
    bad.write_text("hello")
    res = live_server.upload(bad)
    assert res.status_code == 415 and res.json()["type"] == "error" and "CSV or Parquet" in res.json()["message"]
    fake = tmp_path / "fake.parquet"
    fake.write_bytes(b"this is not parquet at all")
    res = live_server.upload(fake)
    assert res.status_code == 400 and "Parquet" in res.json()["message"]
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    assert live_server.upload(empty).status_code == 400
    binary = tmp_path / "binary.csv"
    binary.write_bytes(b"\x00\x01\x02" * 100)
    res = live_server.upload(binary)
    assert res.status_code == 400 and "binary" in res.json()["message"]
    assert not list((live_server.data_dir / "sessions").glob("*/*")), "a rejected upload leaves nothing behind"
    with connect(live_server.ws_url("nope")) as ws:
        assert json.loads(ws.recv(timeout=10)) == {"type": "error", "message": "no such session"}


def test_stop_ends_the_run_after_the_current_tool_and_one_run_per_session(
    live_server: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from whyflow.ask.tools import analysis

    slow_started = threading.Event()
    original = analysis.execute_code

    def slow_execute(*args, **kwargs):  # type: ignore[no-untyped-def]
        slow_started.set()
        time.sleep(2.0)
        return original(*args, **kwargs)

    monkeypatch.setattr(analysis, "execute_code", slow_execute)
    sid = live_server.upload(JOB_TRAINING).json()["session"]["id"]
    with connect(live_server.ws_url(sid)) as ws:
        ws.send(json.dumps({"type": "message", "text": "What is the average earnings by region?"}))
        events = []
        while not any(e["type"] == "status" and "sandbox" in e["message"] for e in events):
            events.append(json.loads(ws.recv(timeout=60)))
        ws.send(json.dumps({"type": "message", "text": "a second question at once"}))
        ws.send(json.dumps({"type": "stop"}))
        events += run_until_done(ws)
        types = _types(events)
        busy = [e for e in events if e["type"] == "error"]
        assert busy and "already going" in busy[0]["message"], events
        assert events[-1] == {"type": "done", "data_updated": False, "stopped": True}
        assert "text" not in types and "table" not in types  # ended before any answer
        # the session stays usable
        monkeypatch.setattr(analysis, "execute_code", original)
        again = run_until_done(ws, {"type": "message", "text": "What is the average earnings by region?"})
        assert "error" not in _types(again) and again[-1] == {"type": "done", "data_updated": False}
    rows = (
        sqlite3.connect(live_server.data_dir / "chat.sqlite3")
        .execute("SELECT role, text FROM messages WHERE session_id = ? AND role = 'user'", (sid,))
        .fetchall()
    )
    assert [t for _, t in rows] == ["What is the average earnings by region?"] * 2  # the refused one is not saved
