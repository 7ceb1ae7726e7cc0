"""The ReAct data scientist's tools (seed 002) that the other tool modules did not have yet.

``profile_data``, ``write_code``, ``execute_code``, ``validate_results``, ``output_text``,
``explain_findings`` and ``finalize``: plain functions with pydantic argument models, like
``sql_query`` (:mod:`whyflow.ask.tools.sql`), ``output_table`` (:mod:`whyflow.ask.tools.render`) and
``create_plot`` (:mod:`whyflow.ask.tools.charts`). Models that take code or a timeout normalise what a
model sent first (:mod:`whyflow.ask.tools.tool_args`). Generated code runs only in the sandbox.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from whyflow.ask.tools.charts import CreatePlotArgs
from whyflow.ask.tools.errors import ColumnsMissingError, EmptyCodeError
from whyflow.ask.tools.render import OutputTableArgs
from whyflow.ask.tools.sql import SqlQueryArgs
from whyflow.ask.tools.tool_args import normalise_arguments
from whyflow.runtime.llm.parse import strip_code_fences
from whyflow.runtime.sandbox.run import ExecutionResult

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "ProfileDataArgs",
    "ColumnQuality",
    "ProfileFindings",
    "profile_data",
    "WriteCodeArgs",
    "WrittenCode",
    "write_code",
    "ExecuteCodeArgs",
    "execute_code",
    "kept_in_state",
    "ValidateResultsArgs",
    "Validation",
    "validate_results",
    "evaluate_result",
    "OutputTextArgs",
    "ExplainFindingsArgs",
    "FinalizeArgs",
    "SqlQueryCall",
    "REACT_TOOLS",
]

_FROZEN = ConfigDict(frozen=True, extra="forbid")
_CHART = re.compile(r"\b(plot|chart|graph|histogram|visuali[sz]e|draw|scatter)", re.I)


# ---- profile_data ------------------------------------------------------------------------------
class ProfileDataArgs(BaseModel):
    """Examine columns of the data (all when none are named): types, missing, distinct, samples."""

    model_config = _FROZEN
    columns: list[str] | None = Field(default=None, description="Columns to profile (None: all).")
    check_requirements: list[str] | None = Field(default=None, description="Columns the analysis needs.")


class ColumnQuality(BaseModel):
    """One column's quality as 002's profile reports it."""

    model_config = _FROZEN
    dtype: str
    missing: int
    unique: int
    sample: list[Any]


class ProfileFindings(BaseModel):
    """What ``profile_data`` found about the asked columns: which exist, their quality, whether to proceed."""

    model_config = _FROZEN
    columns_found: list[str]
    columns_missing: list[str]
    quality: dict[str, ColumnQuality]
    can_proceed: bool
    issues: list[str]


def profile_data(args: ProfileDataArgs, frame: pd.DataFrame) -> ProfileFindings:
    """Profile the asked columns of ``frame``; a column that is not there is listed as missing.

    Raises:
        ColumnsMissingError: none of the asked columns exists (nothing to profile).
    """
    wanted = [*(args.columns or []), *(args.check_requirements or [])] or [str(c) for c in frame.columns]
    names = {str(c): c for c in frame.columns}
    found = [c for c in dict.fromkeys(wanted) if c in names]
    missing = [c for c in dict.fromkeys(wanted) if c not in names]
    if not found:
        raise ColumnsMissingError(
            f"none of the columns {', '.join(missing)} is in the data (columns: {', '.join(names)})"
        )
    quality: dict[str, ColumnQuality] = {}
    issues = [f"column '{c}' is not in the data" for c in missing]
    for col in found[:60]:
        series = frame[names[col]]
        n_missing = int(series.isna().sum())
        sample = [_plain(v) for v in series.dropna().unique()[:3]]
        quality[col] = ColumnQuality(
            dtype=str(series.dtype), missing=n_missing, unique=int(series.nunique()), sample=sample
        )
        if len(series) and n_missing / len(series) > 0.2:
            issues.append(f"column '{col}' is {n_missing / len(series):.0%} missing")
    required = set(args.check_requirements or [])
    return ProfileFindings(
        columns_found=found,
        columns_missing=missing,
        quality=quality,
        can_proceed=not (required - set(found)),
        issues=issues,
    )


def _plain(value: Any) -> Any:
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value if isinstance(value, int | float | str | bool) else str(value)


# ---- write_code / execute_code -----------------------------------------------------------------
class WriteCodeArgs(BaseModel):
    """Write Python for an approach: `code` sets `result` (a number, dict, list or DataFrame) or a Vega-Lite spec."""

    model_config = _FROZEN
    approach: str = Field(default="", description="What the code does, in words.")
    code: str = Field(default="", description="The Python code; the datasets are `df` and `datasets[name]`.")
    output_var: Literal["result", "fig"] = "result"

    @model_validator(mode="before")
    @classmethod
    def _normalise(cls, data: Any) -> Any:
        return normalise_arguments(data, code=True)


class WrittenCode(BaseModel):
    """The code ``write_code`` settled on and why."""

    model_config = _FROZEN
    code: str
    explanation: str


def write_code(args: WriteCodeArgs, template: str | None = None) -> WrittenCode:
    """The code for the approach: the model's code, else the filled worked example's.

    Raises:
        EmptyCodeError: neither the arguments nor a worked example hold any code.
    """
    code = strip_code_fences(args.code).strip()
    if code:
        return WrittenCode(code=code + "\n", explanation=args.approach or "code as written")
    if template and template.strip():
        return WrittenCode(code=template, explanation=args.approach or "the filled worked example")
    raise EmptyCodeError("write_code needs a non-empty 'code' string (Python that sets `result`)")


class ExecuteCodeArgs(BaseModel):
    """Run Python in the sandbox; the datasets are `df` (the first) and `datasets[name]`; set `result`."""

    model_config = _FROZEN
    code: str = Field(default="", description="Python code that sets `result`.")
    timeout_s: float = Field(default=30.0, gt=0, le=120, description="Wall-clock limit in seconds.")

    @model_validator(mode="before")
    @classmethod
    def _normalise(cls, data: Any) -> Any:
        return normalise_arguments(data, code=True)


STATE_OUTPUT_CHARS = 4000
"""How much of a run's stdout and of its stderr the state keeps: the end, where errors are."""


def kept_in_state(outcome: ExecutionResult) -> ExecutionResult:
    """The sandbox's result as the state keeps it: stdout and stderr cut to their last :data:`STATE_OUTPUT_CHARS`."""
    return outcome.model_copy(
        update={"stdout": outcome.stdout[-STATE_OUTPUT_CHARS:], "stderr": outcome.stderr[-STATE_OUTPUT_CHARS:]}
    )


def execute_code(
    args: ExecuteCodeArgs, datasets: Mapping[str, str | Path], figures_dir: Path | None = None, memory_mb: int = 2048
) -> ExecutionResult:
    """Run the code in the sandbox (never in this process); a failure is ``ok=False``, not an exception.

    Raises:
        EmptyCodeError: the payload holds no code (the caller may ask once more for it).
    """
    from whyflow.runtime.sandbox.run import Limits, run_code

    if not args.code.strip():
        raise EmptyCodeError("execute_code requires a non-empty 'code' string (Python that sets `result`)")
    limits = Limits(wall_seconds=args.timeout_s, memory_bytes=memory_mb * 1024**2)
    outcome = run_code(args.code, {k: Path(v) for k, v in datasets.items()}, limits, figures_dir=figures_dir)
    return kept_in_state(outcome)


# ---- validate_results --------------------------------------------------------------------------
class ValidateResultsArgs(BaseModel):
    """Check that the latest result is correct, sensible and answers the question."""

    model_config = _FROZEN
    question: str = ""
    approach: str = ""


class Validation(BaseModel):
    """002's validation verdict."""

    model_config = _FROZEN
    is_valid: bool
    issues: list[str] = []
    suggestions: list[str] = []
    confidence: float = Field(ge=0.0, le=1.0)
    notes: str = ""


def _strength(r: float) -> str:
    a = abs(r)
    return "very weak" if a < 0.1 else "weak" if a < 0.3 else "moderate" if a < 0.5 else "strong"


def _find(result: Any, *names: str) -> float | None:
    if isinstance(result, dict):
        for key, value in result.items():
            if str(key).lower() in names and isinstance(value, int | float) and not isinstance(value, bool):
                return float(value)
        for value in result.values():
            found = _find(value, *names)
            if found is not None:
                return found
    return None


def evaluate_result(result: Any, kind: str, truncated: bool = False) -> str:
    """Plain statements that follow from the result alone (001's deterministic evaluation)."""
    notes: list[str] = []
    p = _find(result, "p_value", "pvalue", "p")
    if p is not None:
        verdict = "below" if p < 0.05 else "not below"
        notes.append(
            f"p = {p:.3g} is {verdict} 0.05: {'significant' if p < 0.05 else 'not significant'} at the 5% level."
        )
    r = _find(result, "r", "correlation", "pearson_r", "spearman_rho", "rho")
    if r is not None and -1.0 <= r <= 1.0:
        notes.append(f"A correlation of {r:.3g} is {_strength(r)} ({'positive' if r > 0 else 'negative'}).")
    if kind == "table" and isinstance(result, dict):
        rows = result.get("n_rows") or len(result.get("rows", result.get("data", [])) or [])
        if rows:
            notes.append(f"The table has {rows} rows.")
    if truncated:
        notes.append("The output was truncated; the figures shown are the first part only.")
    return " ".join(notes) or "The code ran and returned the result shown; nothing in it calls for a caveat."


def _non_finite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_non_finite(v) for v in value.values())
    if isinstance(value, list):
        return any(_non_finite(v) for v in value[:200])
    return False


def validate_results(args: ValidateResultsArgs, record: ExecutionResult | None) -> Validation:
    """Deterministic checks of the latest result: it ran, it holds something, its numbers are finite,
    a table is not empty, the tokens the question names are there; notes from the numbers themselves."""
    from whyflow.ask.tools.answers import format_answer, parse_output_format

    if record is None:
        return Validation(
            is_valid=False, issues=["nothing was computed yet: run code or a query first"], confidence=0.0
        )
    if not record.ok:
        return Validation(
            is_valid=False,
            issues=[f"the code failed: {(record.error or 'error').splitlines()[0][:200]}"],
            confidence=0.0,
        )
    issues: list[str] = []
    suggestions: list[str] = []
    result = record.result
    if result is None and not record.figures:
        issues.append("the code set no `result` (or it is None)")
    if (
        record.result_kind == "table"
        and isinstance(result, dict)
        and not (result.get("rows") or result.get("row_count"))
    ):
        issues.append("the result table is empty: check the filters")
    if _non_finite(result):
        issues.append("the result holds NaN or infinite numbers")
    fmt = parse_output_format(args.question)
    if fmt.tokens and result is not None and "not computed" in format_answer(args.question, result, fmt):
        issues.append("the result lacks a value the question names (" + ", ".join(t.name for t in fmt.tokens) + ")")
    if _CHART.search(args.question) and not record.figures and not (isinstance(result, dict) and "mark" in result):
        suggestions.append("the question asks for a chart; a Vega-Lite spec as `result` would draw one")
    if record.truncated:
        suggestions.append("the output was truncated: aggregate before returning it")
    notes = evaluate_result(result, record.result_kind, record.truncated)
    confidence = 0.2 if issues else (0.7 if suggestions else 0.9)
    return Validation(is_valid=not issues, issues=issues, suggestions=suggestions, confidence=confidence, notes=notes)


# ---- presenting and finishing ------------------------------------------------------------------
class OutputTextArgs(BaseModel):
    """Show text (Markdown) to the user."""

    model_config = _FROZEN
    text: str


class ExplainFindingsArgs(BaseModel):
    """Explain the validated result in plain language; numbers only from the result."""

    model_config = _FROZEN
    explanation: str = ""
    key_findings: list[str] = []
    caveats: list[str] = []


class FinalizeArgs(BaseModel):
    """End the turn (after validate_results); a session title only after an initial analysis."""

    model_config = _FROZEN
    session_title: str | None = None
    answer: str = Field(default="", description="The answer in one or two sentences (numbers from the result).")


class SqlQueryCall(SqlQueryArgs):
    """Run one DuckDB SELECT over the view `data` (and one view per further file); SELECT only."""

    @model_validator(mode="before")
    @classmethod
    def _normalise(cls, data: Any) -> Any:
        return normalise_arguments(data, query=True)


REACT_TOOLS: dict[str, type[BaseModel]] = {
    "profile_data": ProfileDataArgs,
    "sql_query": SqlQueryCall,
    "write_code": WriteCodeArgs,
    "execute_code": ExecuteCodeArgs,
    "validate_results": ValidateResultsArgs,
    "output_text": OutputTextArgs,
    "output_table": OutputTableArgs,
    "create_plot": CreatePlotArgs,
    "explain_findings": ExplainFindingsArgs,
    "finalize": FinalizeArgs,
}
"""The tools of the ReAct data scientist, by name, with their argument models."""
