"""One turn's tools behind the runtime's guards: what both the deterministic path and the
model's ReAct loop call, so the two see the same tool functions and the same safeguards.

:meth:`Toolbox.call` checks a call against the runtime (a duplicate is skipped with a reason, an
empty code payload gets one guided retry, an invalid state is refused), runs the tool function
and records the call, its artifacts and the observation the model reads next. The mandatory
validation lives in :meth:`Toolbox.finalize`: a computed result is validated before any final
answer, by the runtime itself when the caller did not.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from whyflow.ask.answering import render_chart
from whyflow.ask.react_state import InvalidStateTransition, Runtime, RuntimeState, intent_summary
from whyflow.ask.state import CausalRunResult, FailedAttempt
from whyflow.ask.tools import analysis as T
from whyflow.ask.tools.errors import ToolError
from whyflow.runtime.sandbox.run import ExecutionResult

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Observation", "Toolbox", "NO_DEDUP"]

NO_DEDUP = frozenset({"validate_results", "finalize", "explain_findings"})
"""Tools whose effect depends on the turn so far: the same arguments may rightly run again."""

Status = Literal["ok", "failed", "skipped", "refused"]


@dataclass(frozen=True)
class Observation:
    """What a tool call gave back: its status, the text the model reads, and why."""

    call_id: str
    tool: str
    status: Status
    text: str
    reason: str | None = None

    @property
    def is_error(self) -> bool:
        return self.status != "ok"


@dataclass
class Toolbox:
    """The turn's tools, results and runtime."""

    question: str
    frame: pd.DataFrame
    datasets: dict[str, str]
    job_dir: Path
    runtime: Runtime = field(default_factory=Runtime)
    template: str | None = None
    author: Callable[[str], str | None] | None = None
    """Writes code for an approach in words (a model); write_code without code asks it first."""
    wall_seconds: float = 30.0
    memory_mb: int = 2048
    code: str | None = None
    pending_code: str | None = None
    current: ExecutionResult | None = None
    current_source: str = ""
    best: ExecutionResult | None = None
    best_code: str | None = None
    best_source: str = ""
    validation: T.Validation | None = None
    attempts: int = 0
    failed: list[FailedAttempt] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    explanation: str | None = None
    caveats: list[str] = field(default_factory=list)
    figures: list[dict[str, Any]] = field(default_factory=list)
    charts: list[str] = field(default_factory=list)
    session_title: str | None = None
    allow_rerun: bool = False
    """The user asked to run it again: identical calls are not skipped."""
    finalized: bool = False
    causal: CausalRunResult | None = None
    _con: Any = None

    def restart(self) -> Toolbox:
        """A fresh set of results on the same runtime (its states, artifacts and counters go on)."""
        self.close()
        self.runtime.forget_calls()
        return Toolbox(
            question=self.question,
            frame=self.frame,
            datasets=self.datasets,
            job_dir=self.job_dir,
            runtime=self.runtime,
            template=self.template,
            wall_seconds=self.wall_seconds,
            memory_mb=self.memory_mb,
        )

    # ---- the one entry point ---------------------------------------------------------------
    def call(self, tool: str, args: BaseModel, origin: str = "deterministic") -> Observation:
        """Run one validated call under the runtime's guards; never raises for a tool failure."""
        rt = self.runtime
        raw = args.model_dump(mode="json")
        if tool not in NO_DEDUP and not self.allow_rerun:
            earlier = rt.duplicate_of(tool, raw)
            if earlier is not None:
                text = (
                    f"skipped: identical to {earlier.call_id}, which {earlier.status}: {earlier.observation[:400]}. "
                    "Do not repeat it; change the approach."
                )
                return self._record(tool, raw, "skipped", text, "duplicate_tool_call_skipped", origin)
        if tool == "execute_code":
            assert isinstance(args, T.ExecuteCodeArgs)
            if not args.code.strip() and self.pending_code:
                args = args.model_copy(update={"code": self.pending_code})  # "run the code I just wrote"
            if not args.code.strip():
                if rt.empty_payload():
                    text = (
                        "execute_code requires a non-empty 'code' string: send the whole Python program in "
                        "`code` (it must set `result`)."
                    )
                    return self._record(tool, raw, "refused", text, "empty_python_payload_retried", origin)
                return self._record(tool, raw, "failed", "the code payload was empty again", "empty_code", origin)
            rt.code_arrived()
        if tool == "finalize":
            assert isinstance(args, T.FinalizeArgs)
            return self.finalize(args, origin)
        try:
            rt.enter_for(tool)
        except InvalidStateTransition as exc:
            return self._record(tool, raw, "refused", str(exc), InvalidStateTransition.code, origin)
        try:
            status, text = self._run(tool, args)
        except ToolError as exc:
            rt.fail(f"{tool} failed")
            return self._record(tool, raw, "failed", exc.reason, type(exc).__name__, origin)
        if status == "failed":
            rt.fail(f"{tool} failed")
        return self._record(tool, raw, status, text, None, origin)

    def _record(
        self, tool: str, raw: dict[str, Any], status: Status, text: str, reason: str | None, origin: str
    ) -> Observation:
        rec = self.runtime.record_call(tool, raw, status, text, reason, origin)
        return Observation(rec.call_id, tool, status, text, reason)

    # ---- the tools -------------------------------------------------------------------------
    def _run(self, tool: str, args: BaseModel) -> tuple[Status, str]:
        call_id = self.runtime.next_call_id()
        if isinstance(args, T.ProfileDataArgs):
            profile = T.profile_data(args, self.frame)
            return "ok", _short(profile.model_dump(mode="json"))
        if isinstance(args, T.SqlQueryCall):
            return self._sql(args, call_id)
        if isinstance(args, T.WriteCodeArgs):
            if not args.code.strip() and args.approach.strip() and self.author is not None:
                args = args.model_copy(update={"code": self.author(args.approach) or ""})
            written = T.write_code(args, self.template)
            self.pending_code = written.code
            art, new = self.runtime.add_artifact("code", "code", "python", call_id, written.code)
            same = "" if new else f" (the same code as {art.id})"
            return "ok", f"code ready, {len(written.code.splitlines())} lines{same}; run it with execute_code"
        if isinstance(args, T.ExecuteCodeArgs):
            return self._execute(args, call_id)
        if isinstance(args, T.ValidateResultsArgs):
            return self._validate(args)
        if isinstance(args, T.OutputTextArgs):
            self.texts.append(args.text)
            art, new = self.runtime.add_artifact("text", "text", "model", call_id, args.text)
            return "ok", "shown" if new else f"not shown again: equivalent to {art.id} (duplicate_artifact_prevented)"
        if isinstance(args, T.OutputTableArgs):
            from whyflow.ask.tools.render import output_table

            table = output_table(args)
            art, new = self.runtime.add_artifact(
                table.title or "table",
                "table",
                "tool",
                call_id,
                {"headers": table.headers, "rows": table.rows},
                logical_key=table.title or None,
            )
            return "ok", (
                f"table shown as {art.id}"
                if new
                else f"not shown again: equivalent to {art.id} (duplicate_artifact_prevented)"
            )
        if isinstance(args, T.CreatePlotArgs):
            return self._plot(args, call_id)
        if isinstance(args, T.ExplainFindingsArgs):
            return self._explain(args)
        raise ToolError(f"'{tool}' is not a tool of this agent")

    def _sql(self, args: T.SqlQueryCall, call_id: str) -> tuple[Status, str]:
        from whyflow.ask.tools.sql import connect, sql_query_on

        if self._con is None:
            self._con = connect({k: Path(v) for k, v in self.datasets.items()})
        result = sql_query_on(self._con, args)
        content = {"columns": result.columns, "rows": result.rows, "row_count": result.row_count}
        art, new = self.runtime.add_artifact(
            args.description or "query result",
            "query_result",
            "sql",
            call_id,
            content,
            logical_key=args.description or None,
        )
        self._set_current(
            _query_record(result.columns, result.rows, content, result.truncated),
            f"-- sql_query\n{args.query.strip()}\n",
            "sql",
        )
        intent = intent_summary(args.description, result.columns, result.column_types, result.row_count, result.rows)
        self.runtime.add_intent(intent)
        note = "" if new else f" (equivalent to {art.id}; duplicate_artifact_prevented)"
        return "ok", f"{result.summary()}{note}\nrows: {_short(result.rows[:20], 1500)}\nintent: {intent}"

    def _execute(self, args: T.ExecuteCodeArgs, call_id: str) -> tuple[Status, str]:
        record = T.execute_code(args, self.datasets, self.job_dir / "plots", self.memory_mb)
        self.attempts += 1
        self.pending_code = None
        if not record.ok:
            error = record.error or "the code failed"
            detail = f"{error}\n{record.traceback}" if record.traceback else error
            self.failed.append(FailedAttempt(attempt=self.attempts, code=args.code, error=detail))
            self.runtime.count("code_failures")
            return "failed", f"the code failed: {detail[-1500:]}"
        art, new = self.runtime.add_artifact("result", "result", "python", call_id, record.result)
        self._set_current(record, args.code, "python")
        note = "" if new else f" (equivalent to {art.id}: duplicate_artifact_prevented)"
        return "ok", f"ran in {record.wall_seconds:.2f}s, {record.result_kind}{note}: {_short(record.result, 1500)}"

    def _set_current(self, record: ExecutionResult, code: str, source: str) -> None:
        self.current, self.code, self.current_source, self.validation = record, code, source, None
        if record.result is None and not record.figures:
            return  # nothing to show: never the best result
        if self.best is None or source == "python" or self.best_source != "python":  # code results win
            self.best, self.best_code, self.best_source = record, code, source

    def _validate(self, args: T.ValidateResultsArgs) -> tuple[Status, str]:
        question = args.question or self.question
        verdict = T.validate_results(args.model_copy(update={"question": question}), self.current)
        self.validation = verdict
        if not verdict.is_valid:
            self.runtime.count("validation_failures")
        return "ok", _short(verdict.model_dump(mode="json"))

    def _plot(self, args: T.CreatePlotArgs, call_id: str) -> tuple[Status, str]:
        from whyflow.ask.tools.charts import create_plot

        spec = create_plot(args)
        art, new = self.runtime.add_artifact(args.title, "plot", "tool", call_id, spec, logical_key=args.title)
        if not new:
            return "ok", f"not drawn again: equivalent to {art.id} (duplicate_artifact_prevented)"
        figure, charts, problems = render_chart(spec, self.job_dir, name=f"plot_{len(self.figures) + 1}")
        if figure is not None:
            self.figures.append(figure)
        self.charts += charts
        self.caveats += problems
        return "ok", f"plot {art.id} drawn" + (f": {charts[0]}" if charts else "")

    def _explain(self, args: T.ExplainFindingsArgs) -> tuple[Status, str]:
        from whyflow.runtime.llm.validate import check_numbers, numbers_of

        text = " ".join([args.explanation, *args.key_findings]).strip()
        kept, dropped = check_numbers(text, numbers_of(self.current.result if self.current else None))
        self.explanation = kept or None
        self.caveats += [c for c in args.caveats if c not in self.caveats]
        note = f"; dropped {len(dropped)} sentence(s) whose numbers are not in the result" if dropped else ""
        return "ok", f"explanation kept{note}"

    # ---- mandatory validation ----------------------------------------------------------------
    def finalize(self, args: T.FinalizeArgs, origin: str = "deterministic") -> Observation:
        """End the turn if the result is validated (validating it first when nobody did)."""
        raw = args.model_dump(mode="json")
        if self.current is None:
            self.runtime.count("validation_failures")
            text = "refused: nothing was computed; run execute_code or sql_query, then validate_results"
            return self._record("finalize", raw, "refused", text, "no_result", origin)
        if self.validation is None:
            self.runtime.count("forced_validations")
            obs = self.call("validate_results", T.ValidateResultsArgs(question=self.question), "runtime")
            if obs.status != "ok":
                return self._record("finalize", raw, "refused", obs.text, "validation_not_run", origin)
        assert self.validation is not None
        if not self.validation.is_valid:
            text = "refused: validation failed: " + "; ".join(self.validation.issues) + ". Address the issues."
            return self._record("finalize", raw, "refused", text, "validation_failed", origin)
        try:
            if self.runtime.state in (RuntimeState.ANALYZING, RuntimeState.DATA_FETCHING):
                self.runtime.transition(RuntimeState.PRESENTING, "final answer")
            self.runtime.transition(RuntimeState.COMPLETED, "finalize")
        except InvalidStateTransition as exc:
            return self._record("finalize", raw, "refused", str(exc), InvalidStateTransition.code, origin)
        if args.session_title:
            self.session_title = args.session_title.strip()[:80]
        if args.answer and not self.explanation:
            self._explain(T.ExplainFindingsArgs(explanation=args.answer))
        self.finalized = True
        return self._record("finalize", raw, "ok", "turn complete", None, origin)

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None


def _query_record(columns: list[str], rows: list[list[Any]], table: dict[str, Any], truncated: bool) -> ExecutionResult:
    """A query's rows as a result: one value as a scalar, one row as a dict, else the table."""
    if len(rows) == 1 and len(columns) == 1:
        return ExecutionResult(ok=True, result=rows[0][0], result_kind="scalar")
    if len(rows) == 1:
        return ExecutionResult(ok=True, result=dict(zip(columns, rows[0], strict=False)), result_kind="dict")
    return ExecutionResult(ok=True, result=table, result_kind="table", truncated=truncated)


def _short(value: Any, limit: int = 1200) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= limit else text[:limit] + f"... [{len(text)} chars]"
