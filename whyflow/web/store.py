"""The chat page's sessions and messages in one SQLite file (WAL mode).

A session is one uploaded dataset and its conversation: ``sessions(id, title, dataset_path,
file_name, created, updated)``. Its messages have a role and a type: ``user/text``,
``assistant/text``, ``assistant/table``, ``assistant/plot``, ``assistant/query_result`` and
``assistant/reasoning`` (saved, never streamed), each with its text and a JSON payload
(``data``: the headers and rows of a table, the Vega-Lite spec of a plot, the query and rows of a
query result). Every call opens its own connection, so the event loop and the run threads can
write at the same time; WAL lets readers go on while a run writes.
"""

from __future__ import annotations

import json
import math
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["ChatStore", "Message", "Session", "MESSAGE_TYPES", "clean"]

MESSAGE_TYPES = ("text", "table", "plot", "query_result", "reasoning")
"""The message types (the user writes only text)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    dataset_path TEXT NOT NULL,
    file_name TEXT NOT NULL,
    created TEXT NOT NULL,
    updated TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    type TEXT NOT NULL CHECK (type IN ('text', 'table', 'plot', 'query_result', 'reasoning')),
    text TEXT NOT NULL DEFAULT '',
    data TEXT,
    job_dir TEXT,
    created TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_by_session ON messages(session_id, id);
"""


def clean(value: Any) -> Any:
    """``value`` as strict JSON data: NaN and infinities become null, anything else unknown a string
    (a browser's JSON.parse rejects Python's ``NaN``)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    if value is None or isinstance(value, str | int | bool):
        return value
    return clean(json.loads(json.dumps(value, default=str)))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class Session:
    id: str
    title: str
    dataset_path: str
    file_name: str
    created: str
    updated: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "file_name": self.file_name,
            "created": self.created,
            "updated": self.updated,
        }


@dataclass(frozen=True)
class Message:
    id: int
    session_id: str
    role: str
    type: str
    text: str
    data: Any
    job_dir: str | None
    created: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "role": self.role,
            "type": self.type,
            "text": self.text,
            "data": self.data,
            "created": self.created,
        }


class ChatStore:
    """Sessions and messages in ``path`` (created with its folder on first use)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as con:
            con.execute("PRAGMA journal_mode=WAL")
            con.executescript(_SCHEMA)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        con = sqlite3.connect(self.path, timeout=30.0)
        con.row_factory = sqlite3.Row
        con.execute("PRAGMA foreign_keys=ON")
        try:
            with con:  # one transaction: committed on success, rolled back on error
                yield con
        finally:
            con.close()

    @property
    def journal_mode(self) -> str:
        with self._connect() as con:
            return str(con.execute("PRAGMA journal_mode").fetchone()[0])

    # ---- sessions ----------------------------------------------------------------------------
    @staticmethod
    def new_id() -> str:
        return uuid.uuid4().hex[:16]

    def create_session(self, session_id: str, title: str, dataset_path: str, file_name: str) -> Session:
        now = _now()
        with self._connect() as con:
            con.execute(
                "INSERT INTO sessions (id, title, dataset_path, file_name, created, updated) VALUES (?,?,?,?,?,?)",
                (session_id, title, dataset_path, file_name, now, now),
            )
        return Session(session_id, title, dataset_path, file_name, now, now)

    def session(self, session_id: str) -> Session | None:
        with self._connect() as con:
            row = con.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return None if row is None else Session(**dict(row))

    def sessions(self) -> list[Session]:
        """Every session, the most recently active first."""
        with self._connect() as con:
            rows = con.execute("SELECT * FROM sessions ORDER BY updated DESC, created DESC").fetchall()
        return [Session(**dict(r)) for r in rows]

    def set_title(self, session_id: str, title: str) -> None:
        with self._connect() as con:
            con.execute("UPDATE sessions SET title = ?, updated = ? WHERE id = ?", (title, _now(), session_id))

    # ---- messages ----------------------------------------------------------------------------
    def add_message(
        self, session_id: str, role: str, type_: str, text: str = "", data: Any = None, job_dir: str | None = None
    ) -> int:
        """Append one message; returns its id (and marks the session as just active)."""
        payload = None if data is None else json.dumps(clean(data), allow_nan=False)
        now = _now()
        with self._connect() as con:
            cur = con.execute(
                "INSERT INTO messages (session_id, role, type, text, data, job_dir, created) VALUES (?,?,?,?,?,?,?)",
                (session_id, role, type_, text, payload, job_dir, now),
            )
            con.execute("UPDATE sessions SET updated = ? WHERE id = ?", (now, session_id))
            return int(cur.lastrowid or 0)

    def messages(self, session_id: str, include_reasoning: bool = True) -> list[Message]:
        """The session's messages in the order they were written."""
        sql = "SELECT * FROM messages WHERE session_id = ?" + ("" if include_reasoning else " AND type != 'reasoning'")
        with self._connect() as con:
            rows = con.execute(sql + " ORDER BY id", (session_id,)).fetchall()
        out = []
        for r in rows:
            d = dict(r)
            d["data"] = None if d["data"] is None else json.loads(d["data"])
            out.append(Message(**d))
        return out
