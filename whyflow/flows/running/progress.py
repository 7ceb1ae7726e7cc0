"""Progress reporting: what a user sees while a run goes, on the console and in Prefect's logs."""

from __future__ import annotations

import logging
import sys
import time
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from whyflow.causal.state import AnalysisState
    from whyflow.core.agent import AgentResult
    from whyflow.flows.jobstore.store import JobFolder
    from whyflow.flows.recipes.nodes import AgentNode, Plan

__all__ = ["Reporter", "ConsoleReporter", "LogReporter", "FanOutReporter"]


class Reporter:
    """Receives the runner's events; the base class ignores them all."""

    def run_started(self, plan: Plan, state: AnalysisState) -> None: ...

    def step_started(self, key: str, node: AgentNode) -> None: ...

    def step_finished(self, key: str, node: AgentNode, result: AgentResult, state: AnalysisState) -> None: ...

    def step_skipped(self, key: str) -> None: ...

    def round_started(self, round_: int, limit: int) -> None: ...

    def loop_finished(self, state: AnalysisState) -> None: ...

    def run_finished(self, state: AnalysisState, folder: JobFolder) -> None: ...

    def run_failed(self, state: AnalysisState) -> None: ...

    def run_cancelled(self, state: AnalysisState) -> None: ...


def _seconds(result: AgentResult) -> float:
    return float(result.outputs.get("duration_ms", 0)) / 1000.0


class ConsoleReporter(Reporter):
    """One line per agent start and finish, with the agent's own one-line summary."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout
        self._started: dict[str, float] = {}

    def _say(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def run_started(self, plan: Plan, state: AnalysisState) -> None:
        self._say(f"whyflow: running recipe '{plan.name}' as job {state.job_id}")

    def step_started(self, key: str, node: AgentNode) -> None:
        self._started[key] = time.perf_counter()
        self._say(f"  … {key} ({node.status.value})")

    def step_finished(self, key: str, node: AgentNode, result: AgentResult, state: AnalysisState) -> None:
        took = time.perf_counter() - self._started.pop(key, time.perf_counter())
        summary = f" — {result.summary}" if result.summary else ""
        self._say(f"  ✓ {key} in {took:.1f}s{summary}  [{state.progress_percentage:.0f}%]")

    def step_skipped(self, key: str) -> None:
        self._say(f"  ↷ {key} already done (resumed)")

    def round_started(self, round_: int, limit: int) -> None:
        self._say(f"  critique round {round_} of at most {limit}")

    def loop_finished(self, state: AnalysisState) -> None:
        if state.critique_history:
            last = state.critique_history[-1]
            self._say(f"  critique loop ended after {state.iteration_count} round(s): {last.decision.value}")

    def run_failed(self, state: AnalysisState) -> None:
        self._say(f"  ✗ {state.error_agent} failed: {state.error_message}")

    def run_cancelled(self, state: AnalysisState) -> None:
        self._say(f"  ■ job {state.job_id} {state.error_message or 'cancelled'}")


class LogReporter(Reporter):
    """The same events as log records (Prefect's run logger shows them in the UI)."""

    def __init__(self, logger: logging.Logger | logging.LoggerAdapter[logging.Logger]) -> None:
        self.logger = logger

    def step_started(self, key: str, node: AgentNode) -> None:
        self.logger.info("%s started (%s)", key, node.status.value)

    def step_finished(self, key: str, node: AgentNode, result: AgentResult, state: AnalysisState) -> None:
        self.logger.info(
            "%s finished in %.1fs: %s [progress %.0f%%]",
            key,
            _seconds(result),
            result.summary or "done",
            state.progress_percentage,
        )

    def round_started(self, round_: int, limit: int) -> None:
        self.logger.info("critique round %d of at most %d", round_, limit)

    def loop_finished(self, state: AnalysisState) -> None:
        if state.critique_history:
            self.logger.info(
                "critique decided %s after %d round(s)",
                state.critique_history[-1].decision.value,
                state.iteration_count,
            )

    def run_failed(self, state: AnalysisState) -> None:
        self.logger.error("agent %s failed: %s", state.error_agent, state.error_message)

    def run_cancelled(self, state: AnalysisState) -> None:
        self.logger.warning("job %s cancelled", state.job_id)


class FanOutReporter(Reporter):
    """Sends every event to several reporters."""

    def __init__(self, *reporters: Reporter) -> None:
        self.reporters = reporters

    def __getattribute__(self, name: str):  # type: ignore[no-untyped-def]
        if name.startswith("_") or name == "reporters":
            return object.__getattribute__(self, name)
        reporters = object.__getattribute__(self, "reporters")

        def fan_out(*args: object) -> None:
            for reporter in reporters:
                getattr(reporter, name)(*args)

        return fan_out


class _DropRunErrors(logging.Filter):
    """Drop Prefect's own error records about task and flow runs (with their tracebacks)."""

    def filter(self, record: logging.LogRecord) -> bool:
        run_logger = record.name.startswith(("prefect.task_runs", "prefect.flow_runs", "prefect.task_engine"))
        return not (run_logger and record.levelno >= logging.ERROR)


def quiet_prefect_console() -> None:
    """Keep Prefect's console output to warnings, without run tracebacks.

    The runner already reports a failed agent in one line and keeps the traceback in the job's
    ``errors.log``; Prefect's console handler would print it again. Records still reach Prefect's
    API (and its UI) through the other handlers. ``whyflow run --verbose`` skips this.
    """
    import prefect.main  # noqa: F401 - configures Prefect's logging on import: its handlers exist from here on
    from prefect.logging.handlers import PrefectConsoleHandler

    loggers = [logging.getLogger()] + [
        logging.getLogger(name) for name in list(logging.Logger.manager.loggerDict) if name.startswith("prefect")
    ]
    for logger in loggers:
        for handler in logger.handlers:
            if isinstance(handler, PrefectConsoleHandler) and not any(
                isinstance(f, _DropRunErrors) for f in handler.filters
            ):
                handler.addFilter(_DropRunErrors())
