"""`whyflow serve --data URL --table T`: chat sessions on a snapshot of a real PostgreSQL table, not an upload.

Each session keeps the rows it read, so a session opened before the table changed still answers
from the old rows and one opened after from the new; the password reaches no response, no
printed line and no file of the server's data folder.
"""

from __future__ import annotations

import signal
import sqlite3
from pathlib import Path

import httpx
import pytest

from tests.bad_inputs.common import study
from tests.conftest import start_whyflow
from tests.sources.conftest import SECRET, Postgres
from tests.test_signals import _stop, start_serve
from tests.web.conftest import run_until_done

pytestmark = [pytest.mark.usefixtures("prefect_harness"), pytest.mark.slow]

QUESTION = "Mean of outcome?\nFormat: @mean_outcome[m] rounded to two decimal places"


def _answer(port: int, session_id: str) -> str:
    from websockets.sync.client import connect

    with connect(f"ws://127.0.0.1:{port}/ws/{session_id}") as ws:
        events = run_until_done(ws, {"type": "message", "text": QUESTION}, timeout=120)
    assert not [e for e in events if e["type"] == "error"], events
    return "\n".join(str(e.get("text", "")) for e in events if e["type"] == "text")


def test_serve_opens_sessions_on_snapshots_of_a_postgres_table(postgres: Postgres, tmp_path: Path) -> None:
    before, after = study(300, seed=21), study(200, seed=22)
    after["outcome"] += 5.0  # the refreshed table: another mean
    postgres.load(before, "visits_serve")
    data_dir = tmp_path / "chat"
    proc, port = start_serve(
        data_dir, "--engine", "local", "--llm", "off", "--data", postgres.url(), "--table", "visits_serve"
    )
    try:
        api = f"http://127.0.0.1:{port}/api/sessions"
        listed = httpx.get(api, timeout=30)
        [first] = listed.json()["sessions"]  # opened on the table as the server started
        source = listed.json()["source"]
        assert source.endswith("--table visits_serve") and source.startswith("postgresql://analyst@/shop")
        postgres.load(after, "visits_serve")
        opened = httpx.post(f"{api}/source", timeout=60)
        assert opened.status_code == 201, opened.text
        second = opened.json()["session"]
        assert second["id"] != first["id"] and second["file_name"] == first["file_name"]
        old, new = _answer(port, first["id"]), _answer(port, second["id"])
        assert f"@mean_outcome[{before['outcome'].mean():.2f}]" in old, old
        assert f"@mean_outcome[{after['outcome'].mean():.2f}]" in new, new
        responses = [listed.text, opened.text, httpx.get(f"{api}/{second['id']}", timeout=30).text]
    finally:
        _, err = _stop(proc, signal.SIGTERM, group=False)
    assert "Traceback" not in err, err[-3000:]
    assert not [text for text in [*responses, err] if SECRET in text]
    held = [p for p in data_dir.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
    assert held == [] and len(list(data_dir.rglob("snapshot.parquet"))) == 2


def test_serve_on_a_source_that_cannot_be_read_is_one_line_and_no_server(tmp_path: Path) -> None:
    db = tmp_path / "study.db"
    with sqlite3.connect(db) as con:
        study(30).to_sql("visits", con, index=False)
    proc = start_whyflow(
        ["serve", "--data-dir", str(tmp_path / "chat"), "--data", f"sqlite:///{db}", "--table", "visitz"]
    )
    out, err = proc.communicate(timeout=120)
    text = err.decode()
    assert proc.returncode == 2 and len(text.strip().splitlines()) == 1, text
    assert "(did you mean 'visits'?)" in text and "Traceback" not in text and b"chat page" not in out
    assert not list((tmp_path / "chat").rglob("*.parquet"))


def test_the_session_api_opens_a_fresh_snapshot_and_says_why_it_cannot(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from whyflow.web import create_app
    from whyflow.web.sources import ServeSource

    db = tmp_path / "study.db"
    with sqlite3.connect(db) as con:
        study(40).to_sql("visits", con, index=False)
    with TestClient(create_app(tmp_path / "plain", engine="local")) as plain:
        refused = plain.post("/api/sessions/source")
        assert refused.status_code == 404 and "no --data source" in refused.json()["message"]
    app = create_app(tmp_path / "chat", engine="local", source=ServeSource(f"sqlite:///{db}", table="visits"))
    with TestClient(app) as client:
        opened = client.post("/api/sessions/source")
        assert opened.status_code == 201 and opened.json()["session"]["title"] == "visits"
        with sqlite3.connect(db) as con:
            con.execute("DROP TABLE visits")
        failed = client.post("/api/sessions/source")
        assert failed.status_code == 400 and "table 'visits' is not in" in failed.json()["message"], failed.text
        assert len(client.get("/api/sessions").json()["sessions"]) == 1
    assert len(list((tmp_path / "chat" / "sessions").iterdir())) == 1


def test_a_session_on_an_object_asks_its_copy_and_a_missing_object_is_one_line(s3: str, tmp_path: Path) -> None:
    import fsspec
    from fastapi.testclient import TestClient

    from whyflow.web import create_app
    from whyflow.web.sources import ServeSource, open_source_session

    url = f"s3://{s3}/exports/visits.csv"
    with fsspec.open(url, "w") as fh:
        study(50).to_csv(fh, index=False)
    app = create_app(tmp_path / "chat", engine="local", source=ServeSource(url))
    session = open_source_session(app.state.store, app.state.data_dir, ServeSource(url))
    copy = Path(session.dataset_path)
    assert session.file_name == url and copy.name == "source-visits.csv" and copy.parent.name == session.id
    with TestClient(create_app(tmp_path / "other", engine="local", source=ServeSource(f"s3://{s3}/nope.csv"))) as c:
        failed = c.post("/api/sessions/source")
    assert failed.status_code == 400 and failed.json()["message"].startswith("object not found: s3://"), failed.text
    assert "\n" not in failed.json()["message"] and not list((tmp_path / "other" / "sessions").glob("*"))
