"""A chat session opened on a data source instead of an upload: a database table or query, or an object.

``whyflow serve --data URL [--table T | --query Q]`` names the source; each session opened on it
(one at the server's start, one per ``POST /api/sessions/source``) reads it through the readers
``whyflow run`` and ``whyflow ask`` use (:mod:`whyflow.runtime.sources`,
:mod:`whyflow.runtime.object_store`) and keeps what it read in its own folder: a database's rows
as ``snapshot.parquet``, an object's copy. Every question of the session asks that snapshot, so
its answers agree with one another whatever the table holds by then, and a new session reads
the source afresh. The session names the source without its password; the password (in the
URL or the environment) stays in the server's memory and reaches no file and no response.
"""

from __future__ import annotations

import shutil
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from whyflow.core.errors import DataError
from whyflow.runtime.object_store import fetch, is_object_url, probe
from whyflow.runtime.sources import SqlSource, is_sql_url, read_sql_source
from whyflow.web.store import ChatStore, Session

__all__ = ["ServeSource", "SourceNotServable", "check_source", "open_source_session"]


class SourceNotServable(DataError):
    """``whyflow serve --data`` names something that is not a database or object-store URL, or misuses --table/--query."""


@dataclass(frozen=True)
class ServeSource:
    """The server's data source; ``url`` may hold a password and is never shown or stored as given."""

    url: str
    table: str | None = None
    query: str | None = None

    @property
    def sql(self) -> SqlSource | None:
        return SqlSource(self.url, self.table, self.query) if is_sql_url(self.url) else None

    @property
    def shown(self) -> str:
        """The source as sessions and the page name it: a database without its password, and what is read."""
        sql = self.sql
        return sql.name if sql is not None else self.url


def check_source(source: ServeSource) -> None:
    """Raise :class:`SourceNotServable` unless ``source`` is a database URL with a table or query, or an object URL."""
    if source.sql is not None:
        if bool(source.table) == bool(source.query):
            raise SourceNotServable(
                f"{source.sql.shown}: name what to read with --table NAME or --query 'SELECT ...' (one of the two)"
            )
        return
    if not is_object_url(source.url):
        raise SourceNotServable(
            "serve --data takes a database URL (sqlite:///, duckdb:///, postgresql://) or an object-store URL "
            "(s3://, gs://, az://, file://); upload a local file on the page"
        )
    if source.table or source.query:
        raise SourceNotServable(f"--table and --query name what to read from a database; {source.url} is an object")


def open_source_session(store: ChatStore, root: Path, source: ServeSource) -> Session:
    """A new session on a fresh snapshot of ``source`` in ``root/sessions/<id>/``.

    Raises :class:`~whyflow.core.errors.DataError` (one line naming the source) if it cannot be
    read; no session and no folder are left then.
    """
    from whyflow.runtime.data import read_table, write_parquet

    check_source(source)
    session_id = store.new_id()
    folder = root / "sessions" / session_id
    folder.mkdir(parents=True, exist_ok=True)
    sql = source.sql
    try:
        if sql is not None:
            frame = read_sql_source(sql)[0]
            path = write_parquet(frame, folder / "snapshot.parquet")
            title = sql.table or "query"
        else:
            probe(source.url)  # a missing object or bucket, no permission: one line
            path = fetch(source.url, folder)
            frame = read_table(path)
            title = Path(urllib.parse.urlparse(source.url).path).stem or "data"
            if frame.shape[0] == 0 or frame.shape[1] == 0:
                raise DataError(f"{source.url} has no rows or no columns")
        path.chmod(0o444)  # the snapshot, as read: every question of the session reads it unchanged
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return store.create_session(session_id, title, str(path), source.shown)
