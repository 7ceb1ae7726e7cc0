"""``sql_query``: one read-only DuckDB SELECT over the question's datasets (seed 004's tool).

The datasets are loaded once into an in-memory DuckDB database as tables, exposed as views: the
first dataset is ``data`` (seed 004's convention) and every dataset is also reachable under its
file stem, sanitised to a SQL identifier (``sales-2024.csv`` → ``sales_2024``). After loading,
external access is switched off and the configuration locked, so a SELECT cannot read other
files (``read_csv('/etc/passwd')``), URLs or environment variables.

Whether a text is "one SELECT" is decided by DuckDB's own parser (``duckdb.extract_statements``
and the statement type), never by pattern matching on the text.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import math
import re
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from whyflow.ask.tools.errors import (
    DatasetLoadError,
    EmptyQueryError,
    ExternalAccessError,
    MultipleStatementsError,
    QueryTimeoutError,
    SqlExecutionError,
    SqlSyntaxError,
    StatementNotAllowedError,
)

if TYPE_CHECKING:
    import duckdb

__all__ = [
    "SqlQueryArgs",
    "QueryResult",
    "view_names",
    "connect",
    "check_select",
    "sql_query",
    "sql_query_on",
]

MAX_ROWS_LIMIT = 1000
_IDENT = re.compile(r"[^0-9a-zA-Z_]+")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class SqlQueryArgs(BaseModel):
    """Arguments of the ``sql_query`` tool (seed 004: ``query`` and ``description``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    query: str = Field(description="Exactly one DuckDB SELECT (or WITH ... SELECT) over the view `data`.")
    description: str = Field(default="", description="One line saying what the query is for.")
    max_rows: int = Field(default=50, ge=1, le=MAX_ROWS_LIMIT, description="Rows returned; the total is still counted.")
    timeout_s: float = Field(default=10.0, gt=0, le=120, description="Interrupt the query after this many seconds.")


class QueryResult(BaseModel):
    """Columns and (possibly truncated) rows of a query, with the total row count stated."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    query: str
    description: str = ""
    columns: list[str]
    column_types: list[str]
    rows: list[list[Any]]
    row_count: int = Field(description="Rows the query produced, before truncation.")
    truncated: bool

    def summary(self) -> str:
        """One line for a model or a log: how many rows came back out of how many."""
        if self.truncated:
            return f"{self.row_count} rows (showing the first {len(self.rows)}); columns: {', '.join(self.columns)}"
        return f"{self.row_count} rows; columns: {', '.join(self.columns)}"


def view_names(paths: Sequence[Path | str]) -> dict[str, Path]:
    """Name each dataset's view: ``data`` for the first, the sanitised file stem for every file.

    A stem that sanitises to a name already taken gets ``_2``, ``_3``... so no dataset is hidden.
    """
    names: dict[str, Path] = {}
    for index, raw in enumerate(paths):
        path = Path(raw)
        if index == 0:
            names["data"] = path
        stem = _IDENT.sub("_", path.stem).strip("_").lower() or "dataset"
        if stem[0].isdigit():
            stem = f"t_{stem}"
        name, n = stem, 2
        while name in names:
            name, n = f"{stem}_{n}", n + 1
        names[name] = path
    return names


def connect(datasets: Sequence[Path | str] | Mapping[str, Path | str]) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with one view per dataset and external access switched off.

    ``datasets`` is either a list of files (named by :func:`view_names`) or an explicit mapping of
    view name to file. Files are read with the project's one reader (``read_table``), so DuckDB
    sees the same columns as the sandboxed pandas code.
    """
    import duckdb

    from whyflow.core.errors import DataError
    from whyflow.runtime.data import read_table

    named = dict(datasets) if isinstance(datasets, Mapping) else view_names(list(datasets))
    con = duckdb.connect(":memory:")
    loaded: dict[Path, str] = {}
    for name, raw in named.items():
        if not _NAME.fullmatch(name):
            raise DatasetLoadError(f"view name {name!r} is not a plain SQL identifier (letters, digits, _)")
        path = Path(raw)
        if path not in loaded:
            try:
                frame = read_table(path)
            except DataError as exc:
                raise DatasetLoadError(str(exc)) from exc
            table = f"_t{len(loaded)}"
            con.register("_incoming", frame)
            con.execute(f'CREATE TABLE "{table}" AS SELECT * FROM _incoming')
            con.unregister("_incoming")
            loaded[path] = table
        con.execute(f'CREATE VIEW "{name}" AS SELECT * FROM "{loaded[path]}"')
    con.execute("SET enable_external_access = false")
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    con.execute("SET lock_configuration = true")
    return con


def check_select(query: str) -> str:
    """Return the one statement of ``query`` if DuckDB parses it as a SELECT, else raise why not.

    Raises:
        EmptyQueryError, SqlSyntaxError, MultipleStatementsError, StatementNotAllowedError.
    """
    import duckdb

    if not query.strip():
        raise EmptyQueryError("the query is empty; send one SELECT statement")
    try:
        statements = duckdb.extract_statements(query)
    except duckdb.Error as exc:
        raise SqlSyntaxError(f"DuckDB cannot parse the query: {_first_line(exc)}") from exc
    if not statements:
        raise EmptyQueryError("the query holds no statement (only comments or semicolons?); send one SELECT")
    if len(statements) > 1:
        raise MultipleStatementsError(len(statements))
    statement = statements[0]
    if statement.type != duckdb.StatementType.SELECT:
        raise StatementNotAllowedError(statement.type.name)
    return str(statement.query)


def sql_query(args: SqlQueryArgs, datasets: Sequence[Path | str] | Mapping[str, Path | str]) -> QueryResult:
    """Run one read-only SELECT over the datasets and return its first ``max_rows`` rows.

    The statement is checked by DuckDB's parser before anything runs; the datasets are loaded
    into a fresh in-memory database for this call (use :func:`sql_query_on` to reuse one).
    """
    statement = check_select(args.query)
    con = connect(datasets)
    try:
        return _execute(con, statement, args)
    finally:
        con.close()


def sql_query_on(con: duckdb.DuckDBPyConnection, args: SqlQueryArgs) -> QueryResult:
    """Like :func:`sql_query` on a connection made by :func:`connect` (several queries, one load)."""
    return _execute(con, check_select(args.query), args)


def _execute(con: duckdb.DuckDBPyConnection, statement: str, args: SqlQueryArgs) -> QueryResult:
    """Run the checked statement under a timer; keep ``max_rows`` rows and count the rest."""
    import duckdb

    cursor = con.cursor()
    timer = threading.Timer(args.timeout_s, cursor.interrupt)
    timer.start()
    try:
        cursor.execute(statement)
        description = cursor.description or []
        rows = [list(r) for r in cursor.fetchmany(args.max_rows)]
        total = len(rows)
        while batch := cursor.fetchmany(10_000):
            total += len(batch)
    except duckdb.InterruptException as exc:
        raise QueryTimeoutError(args.timeout_s) from exc
    except duckdb.PermissionException as exc:
        raise ExternalAccessError(
            "the query tried to read outside the loaded datasets (a file, URL or setting); "
            f"only the views {_views(con)} can be queried: {_first_line(exc)}"
        ) from exc
    except duckdb.Error as exc:
        if not timer.is_alive():
            raise QueryTimeoutError(args.timeout_s) from exc
        raise SqlExecutionError(f"DuckDB failed running the query: {_first_line(exc)}") from exc
    finally:
        timer.cancel()
        cursor.close()
    return QueryResult(
        query=args.query,
        description=args.description,
        columns=[str(d[0]) for d in description],
        column_types=[str(d[1]) for d in description],
        rows=[[_json_value(v) for v in row] for row in rows],
        row_count=total,
        truncated=total > len(rows),
    )


def _views(con: duckdb.DuckDBPyConnection) -> str:
    """The user-visible view names, for error messages."""
    names = [r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()]
    return ", ".join(sorted(names))


def _json_value(value: Any) -> Any:
    """A JSON-safe version of a DuckDB value (dates as ISO text, decimals as floats, NaN as None)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, _dt.date | _dt.time | _dt.datetime):
        return value.isoformat()
    if isinstance(value, _dt.timedelta):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    return value


def _first_line(exc: BaseException) -> str:
    """The first line of a DuckDB error (the rest is a caret diagram)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
