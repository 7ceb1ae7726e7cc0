"""Exceptions raised by the ask-the-data tools, one class per failure mode.

Every class carries a ``reason`` meant to be shown to the user (or fed back to a model as a tool
error) as it is: one sentence naming what was refused and why.
"""

from __future__ import annotations

from whyflow.core.errors import WhyflowError

__all__ = [
    "ToolError",
    "DatasetLoadError",
    "SqlSyntaxError",
    "EmptyQueryError",
    "MultipleStatementsError",
    "StatementNotAllowedError",
    "ExternalAccessError",
    "SqlExecutionError",
    "QueryTimeoutError",
    "ChartSchemaError",
    "ChartTooManyRowsError",
    "ChartDataError",
    "ChartRenderError",
    "ExampleLibraryError",
    "EmptyCodeError",
    "ColumnsMissingError",
]


class ToolError(WhyflowError):
    """Base class of every refusal or failure of a tool; ``reason`` is the user-facing sentence."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class DatasetLoadError(ToolError):
    """A dataset could not be loaded into DuckDB (missing file, bad format, clashing view name)."""


class SqlSyntaxError(ToolError):
    """DuckDB's parser rejected the query text."""


class EmptyQueryError(ToolError):
    """The query text holds no statement at all."""


class MultipleStatementsError(ToolError):
    """The query text holds more than one statement; exactly one SELECT/WITH is accepted."""

    def __init__(self, count: int) -> None:
        self.count = count
        super().__init__(f"the query holds {count} statements; send exactly one SELECT (or WITH ... SELECT)")


class StatementNotAllowedError(ToolError):
    """The statement is not a query (DDL, DML, COPY, ATTACH, INSTALL, PRAGMA, SET, ...)."""

    def __init__(self, statement_type: str) -> None:
        self.statement_type = statement_type
        super().__init__(
            f"only SELECT (or WITH ... SELECT) queries are allowed; DuckDB parsed this as a {statement_type} "
            "statement, which could change data or settings"
        )


class ExternalAccessError(ToolError):
    """The query tried to read a file, a URL or an environment variable outside the loaded datasets."""


class SqlExecutionError(ToolError):
    """DuckDB accepted the query but failed while running it (unknown column, type mismatch, ...)."""


class QueryTimeoutError(ToolError):
    """The query ran past its time limit and was interrupted."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        super().__init__(f"the query ran longer than {seconds:g} s and was interrupted; aggregate or filter more")


class ChartSchemaError(ToolError):
    """A chart spec does not validate against the Vega-Lite v5 JSON schema (or is not inline-data)."""


class ChartTooManyRowsError(ToolError):
    """A chart carries more than the allowed rows of inline data; aggregate first."""

    def __init__(self, rows: int, limit: int) -> None:
        self.rows = rows
        self.limit = limit
        super().__init__(
            f"the chart carries {rows} rows of data, more than the limit of {limit}; aggregate first "
            "(group, bin or sample explicitly) so that at most {limit} rows remain".replace("{limit}", str(limit))
        )


class ChartDataError(ToolError):
    """The chart helpers cannot build the asked chart from the data (missing or non-numeric column)."""


class ChartRenderError(ToolError):
    """A valid spec could not be rendered to PNG or SVG."""


class ExampleLibraryError(ToolError):
    """An example YAML file in the library is malformed (bad key, bad slot, duplicate id)."""


class EmptyCodeError(ToolError):
    """``write_code`` or ``execute_code`` got no code to work with (an empty payload)."""


class ColumnsMissingError(ToolError):
    """``profile_data`` was asked about columns the data does not have."""
