"""sql_query: one SELECT decided by DuckDB's parser, truncation with the total stated, no file access."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

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
from whyflow.ask.tools.sql import SqlQueryArgs, check_select, connect, sql_query, sql_query_on, view_names


@pytest.fixture
def sales(tmp_path: Path) -> Path:
    """250 rows: id 0..249, region cycling North/South, amount = id * 2."""
    path = tmp_path / "sales-2024.csv"
    pd.DataFrame({"id": range(250), "region": ["North", "South"] * 125, "amount": [i * 2 for i in range(250)]}).to_csv(
        path, index=False
    )
    return path


def test_views_are_data_and_the_sanitised_stem(sales: Path, tmp_path: Path) -> None:
    other = tmp_path / "2nd file.csv"
    pd.DataFrame({"k": [1, 2]}).to_csv(other, index=False)
    assert list(view_names([sales, other])) == ["data", "sales_2024", "t_2nd_file"]
    result = sql_query(
        SqlQueryArgs(query="SELECT (SELECT count(*) FROM data) AS a, (SELECT count(*) FROM t_2nd_file) AS b"),
        [sales, other],
    )
    assert result.rows == [[250, 2]]


def test_select_aggregates_correctly(sales: Path) -> None:
    result = sql_query(
        SqlQueryArgs(query="SELECT region, sum(amount) AS total FROM data GROUP BY region ORDER BY region"), [sales]
    )
    frame = pd.read_csv(sales)
    assert result.columns == ["region", "total"]
    assert result.rows == [[r, int(v)] for r, v in frame.groupby("region")["amount"].sum().items()]
    assert result.row_count == 2 and not result.truncated


def test_with_statement_is_a_select(sales: Path) -> None:
    query = "WITH big AS (SELECT * FROM data WHERE amount > 400) SELECT count(*) FROM big"
    assert sql_query(SqlQueryArgs(query=query), [sales]).rows == [[49]]


def test_truncation_states_the_total(sales: Path) -> None:
    result = sql_query(SqlQueryArgs(query="SELECT * FROM data ORDER BY id", max_rows=10), [sales])
    assert len(result.rows) == 10 and result.row_count == 250 and result.truncated
    assert result.rows[-1] == [9, "South", 18]
    assert "250 rows (showing the first 10)" in result.summary()


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        ("CREATE TABLE x AS SELECT 1", "CREATE"),
        ("DROP VIEW data", "DROP"),
        ("INSERT INTO data VALUES (1, 'x', 2)", "INSERT"),
        ("UPDATE data SET amount = 0", "UPDATE"),
        ("DELETE FROM data", "DELETE"),
        ("COPY data TO 'out.csv'", "COPY"),
        ("ATTACH 'other.db'", "ATTACH"),
        ("INSTALL httpfs", "LOAD"),
        ("SET enable_external_access = true", "SET"),
        ("PRAGMA database_list", "PRAGMA"),
        ("CALL pragma_version()", "CALL"),
        ("EXPLAIN SELECT 1", "EXPLAIN"),
    ],
)
def test_non_select_statements_are_refused_with_their_type(query: str, kind: str) -> None:
    with pytest.raises(StatementNotAllowedError) as info:
        check_select(query)
    assert info.value.statement_type == kind
    assert kind in info.value.reason


def test_two_statements_are_refused(sales: Path) -> None:
    with pytest.raises(MultipleStatementsError) as info:
        sql_query(SqlQueryArgs(query="SELECT 1; DROP VIEW data"), [sales])
    assert info.value.count == 2


def test_the_parser_not_a_pattern_decides() -> None:
    # Keywords and semicolons inside a string literal or a comment are not statements.
    statement = check_select("SELECT 'DROP TABLE data; DELETE FROM data' AS s -- ; DROP VIEW data")
    assert statement.startswith("SELECT")
    # ... and a statement that starts with a comment is still seen for what it is.
    with pytest.raises(StatementNotAllowedError):
        check_select("/* SELECT */ DELETE FROM data")


@pytest.mark.parametrize("query", ["", "   ", ";", "-- only a comment"])
def test_empty_queries_are_refused(query: str) -> None:
    with pytest.raises(EmptyQueryError):
        check_select(query)


def test_syntax_error_is_named() -> None:
    with pytest.raises(SqlSyntaxError, match="syntax error"):
        check_select("SELEC 1")


@pytest.mark.parametrize(
    "query",
    [
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM read_text('/etc/hostname')",
        "SELECT * FROM glob('/*')",
    ],
)
def test_file_reading_functions_are_refused(sales: Path, query: str) -> None:
    with pytest.raises(ExternalAccessError) as info:
        sql_query(SqlQueryArgs(query=query), [sales])
    assert "data" in info.value.reason


def test_configuration_is_locked(sales: Path) -> None:
    con = connect([sales])
    try:
        with pytest.raises(Exception, match="locked"):
            con.execute("SET enable_external_access = true")
    finally:
        con.close()


def test_runtime_error_and_timeout(sales: Path) -> None:
    con = connect([sales])
    try:
        with pytest.raises(SqlExecutionError, match="nope"):
            sql_query_on(con, SqlQueryArgs(query="SELECT nope FROM data"))
        with pytest.raises(QueryTimeoutError):
            sql_query_on(con, SqlQueryArgs(query="SELECT count(*) FROM range(100000000000) a", timeout_s=0.3))
        # the connection is still usable afterwards
        assert sql_query_on(con, SqlQueryArgs(query="SELECT count(*) FROM data")).rows == [[250]]
    finally:
        con.close()


def test_user_file_is_not_modified_and_bad_files_are_named(sales: Path, tmp_path: Path) -> None:
    before = sales.read_bytes()
    sql_query(SqlQueryArgs(query="SELECT * FROM data"), [sales])
    assert sales.read_bytes() == before
    with pytest.raises(DatasetLoadError, match="not found"):
        connect([tmp_path / "missing.csv"])
