"""The runner: walks a plan, dispatches agents, applies and persists every update.

It is the only writer of the state. For each agent step it checks the cancel request, moves
the job to the agent's phase, checks the required fields, dispatches the agent through an
executor (Prefect tasks in a flow, or plain calls), applies the update under the contract,
records the step, recomputes progress and saves ``state.json`` atomically. Steps already in
``completed_steps`` are skipped, which is how a killed run resumes.
"""

from __future__ import annotations

import importlib
import logging
import os
import signal
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from whyflow.core.agent import AgentContext, AgentResult
from whyflow.core.errors import MissingStateField, WhyflowError
from whyflow.core.status import JobStatus
from whyflow.flows.errors import CancelRequested, RunCancelled, RunFailed
from whyflow.flows.jobstore.store import JobFolder
from whyflow.flows.recipes.nodes import AgentNode, LoopNode, ParallelNode, Plan
from whyflow.flows.running import interrupts
from whyflow.flows.running.dispatch import apply_result, dispatch, missing_required
from whyflow.flows.running.progress import Reporter
from whyflow.runtime.data import long_lived_frozen, release_unused_memory, unmap_large_blocks
from whyflow.runtime.warnings_log import warnings_to_log
from whyflow.states import JobState

log = logging.getLogger(__name__)

__all__ = ["Executor", "LocalExecutor", "Runner", "run_nested_recipe", "step_key"]


class Executor(Protocol):
    """Runs agents: one in the flow's thread, or several concurrently."""

    def run(self, node: AgentNode, state: JobState, ctx: AgentContext) -> AgentResult: ...

    def run_many(self, jobs: list[tuple[AgentNode, JobState, AgentContext]]) -> list[AgentResult | BaseException]: ...


class LocalExecutor:
    """Plain in-process calls, no Prefect (used by tests of the runner's own logic)."""

    def run(self, node: AgentNode, state: JobState, ctx: AgentContext) -> AgentResult:
        return dispatch(node.agent_cls, state, node.params, ctx)

    def run_many(self, jobs: list[tuple[AgentNode, JobState, AgentContext]]) -> list[AgentResult | BaseException]:
        out: list[AgentResult | BaseException] = []
        for node, state, ctx in jobs:
            try:
                out.append(self.run(node, state, ctx))
            except Exception as exc:  # noqa: BLE001 - reported per member by the runner
                out.append(exc)
        return out


_PRELOAD = (
    "scipy.stats",
    "statsmodels.api",
    "sklearn.linear_model",
    "sklearn.model_selection",
    "narwhals.stable.v1",
    "matplotlib.pyplot",
    "networkx",
)
"""Libraries several agents import lazily; imported once before any parallel group."""


def preload(nodes: list[AgentNode]) -> None:
    """Import the heavy modules a parallel group will use, in this thread, before it starts.

    Two threads importing a library for the first time can deadlock on its module locks
    (seen with narwhals under scikit-learn); after this, the threads find them in sys.modules.
    """
    os.environ.setdefault("MPLBACKEND", "Agg")
    for name in (*_PRELOAD, *(m for n in nodes for m in n.agent_cls.PRELOAD_MODULES)):
        try:
            importlib.import_module(name)
        except ImportError:
            continue


def step_key(node: AgentNode, round_: int | None = None) -> str:
    """The name a step is recorded under in ``completed_steps`` (``key@round`` inside loops)."""
    return node.key if round_ is None else f"{node.key}@{round_}"


class _StopRun(Exception):
    """A loop's ``on_exhausted`` step ran: the run ends there, completed (the ask recipe's error reporter)."""


class _AgentFailed(Exception):
    def __init__(self, agent: str, message: str) -> None:
        super().__init__(message)
        self.agent = agent
        self.message = message


def _describe(exc: BaseException) -> str:
    if isinstance(exc, WhyflowError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


@contextmanager
def _signals_as_cancel() -> Iterator[None]:
    """Turn SIGTERM (a worker or Prefect stopping the run) into a graceful cancel.

    Under a command's :func:`~whyflow.flows.running.interrupts.interrupt_guard` its handler (with its watchdog)
    takes SIGINT, SIGTERM and SIGHUP again: Prefect's flow engine put its own on SIGTERM.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        interrupts.note(signum)
        raise CancelRequested(interrupts.reason(signum))

    guard = interrupts.guard_handler()
    signals = interrupts.SIGNALS if guard is not None else (signal.SIGTERM,)
    previous = {sig: signal.signal(sig, guard or handler) for sig in signals}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


class Runner:
    """Runs one plan on one job's state, persisting after every agent."""

    def __init__(
        self,
        plan: Plan,
        folder: JobFolder,
        state: JobState,
        executor: Executor,
        reporter: Reporter,
        *,
        context_factory: Callable[[AgentNode, str, int], AgentContext] | None = None,
    ) -> None:
        self.plan = plan
        self.folder = folder
        self.state = state
        self.executor = executor
        self.reporter = reporter
        self._context = context_factory or self._default_context
        self._weights = {n.key: n.weight for n in plan.agent_nodes()}

    # ---- public ---------------------------------------------------------------------------
    def run(self) -> JobState:
        """Run every step not yet completed; raise RunFailed or RunCancelled after saving."""
        state = self.state
        info = getattr(state, "dataset_info", None)  # on large data, freed arrays go back to the system at once
        unmap_large_blocks(int(getattr(info, "n_samples", 0) or 0) * int(getattr(info, "n_features", 0) or 0))
        try:
            with _signals_as_cancel(), long_lived_frozen(), warnings_to_log(self.folder.path):
                if state.status is JobStatus.PENDING:
                    state.transition(JobStatus.FETCHING_DATA)
                    self._save()
                self.reporter.run_started(self.plan, state)  # type: ignore[arg-type]
                releases = self._warm_up()
                try:
                    for index, step in enumerate(self.plan.steps):
                        self._run_step(step, index)
                except _StopRun:
                    pass
                finally:
                    for release in releases:
                        release()
                state.mark_completed()
                self._save()
        except _AgentFailed as exc:
            if state.status not in (JobStatus.FAILED,):
                state.mark_failed(exc.message, exc.agent)
            self._save()
            self.reporter.run_failed(state)  # type: ignore[arg-type]  # reporters take either state
            raise RunFailed(exc.agent, exc.message, str(self.folder.path)) from None
        except BaseException as exc:
            # After a stop signal anything may arrive here: KeyboardInterrupt, or what an event
            # loop (the notebook's client) or a library made of it (asyncio.CancelledError).
            if not isinstance(exc, (CancelRequested, KeyboardInterrupt)) and interrupts.received() is None:
                raise
            reason = interrupts.reason() if interrupts.received() is not None else str(exc) or interrupts.reason()
            self._finish_cancel(reason)
            raise RunCancelled(f"job {state.job_id} cancelled: {reason}") from None
        self.reporter.run_finished(state, self.folder)  # type: ignore[arg-type]  # reporters take either state
        return state

    def _warm_up(self) -> list[Callable[[], None]]:
        """Each agent still to run starts what it can prepare early (the notebook's kernel).

        A sequential step's agent runs in the flow's process, under every task runner; one in a
        ``parallel:`` group on a Dask worker does not find what was prepared here and prepares
        as before, and what it left unused is released at the end. A warm-up that fails is only
        a lost head start: the agent then prepares as it would have, when it runs.
        """
        releases = []
        for node in self.plan.agent_nodes():
            if node.key in self.state.completed_steps:
                continue
            try:
                release = node.agent_cls.warm_up(node.params, self.folder.path)
            except Exception as exc:  # noqa: BLE001 - see the docstring
                log.debug("warm-up of %s failed: %s", node.key, exc)
                continue
            if release is not None:
                releases.append(release)
        return releases

    # ---- steps ----------------------------------------------------------------------------
    def _run_step(self, step: AgentNode | ParallelNode | LoopNode, index: int, round_: int | None = None) -> None:
        if isinstance(step, AgentNode):
            if step.when is not None and not step.when(self.state):
                return  # the condition is false on the persisted state, so a resume decides the same
            self._run_agent(step, round_)
        elif isinstance(step, ParallelNode):
            self._run_parallel(step, round_)
        else:
            self._run_loop(step, index)

    def _check_cancel(self) -> None:
        if self.folder.cancel_requested():
            raise CancelRequested("cancel requested (whyflow cancel)")

    def _enter(self, status: JobStatus, agent: str) -> None:
        try:
            self.state.transition(status)
        except WhyflowError as exc:
            raise _AgentFailed(agent, str(exc)) from exc

    def _run_agent(self, node: AgentNode, round_: int | None) -> None:
        key = step_key(node, round_)
        if key in self.state.completed_steps:
            self.reporter.step_skipped(key)
            return
        self._check_cancel()
        self._enter(node.status, node.name)
        missing = missing_required(node.agent_cls, self.state)
        if missing:
            raise _AgentFailed(node.name, str(MissingStateField(node.name, missing[0])))
        self._save()
        self.reporter.step_started(key, node)
        ctx = self._context(node, key, round_ or 0)
        try:
            result = self.executor.run(node, self.state, ctx)
        except (CancelRequested, KeyboardInterrupt):
            raise
        except Exception as exc:  # noqa: BLE001 - any agent error fails the job, cleanly
            if interrupts.received() is not None:  # what the agent made of the signal: a cancel
                raise CancelRequested(interrupts.reason()) from exc
            self._record_error(node, exc)
            raise _AgentFailed(node.name, _describe(exc)) from exc
        self._apply(node, key, result)
        release_unused_memory()  # what the agent freed leaves the process before the next one starts

    def _run_parallel(self, group: ParallelNode, round_: int | None) -> None:
        todo = [n for n in group.nodes if step_key(n, round_) not in self.state.completed_steps]
        for n in group.nodes:
            if n not in todo:
                self.reporter.step_skipped(step_key(n, round_))
        if not todo:
            return
        self._check_cancel()
        self._enter(group.status, todo[0].name)
        for n in todo:
            missing = missing_required(n.agent_cls, self.state)
            if missing:
                raise _AgentFailed(n.name, str(MissingStateField(n.name, missing[0])))
        self._save()
        for n in todo:
            self.reporter.step_started(step_key(n, round_), n)
        preload(todo)
        jobs = [(n, self.state.model_copy(deep=True), self._context(n, step_key(n, round_), round_ or 0)) for n in todo]
        results = self.executor.run_many(jobs)
        failure: tuple[AgentNode, BaseException] | None = None
        for n, result in zip(todo, results, strict=True):
            if isinstance(result, BaseException):
                self._record_error(n, result)
                failure = failure or (n, result)
                continue
            self._apply(n, step_key(n, round_), result)
        release_unused_memory()
        if failure is not None:
            if isinstance(failure[1], (CancelRequested, KeyboardInterrupt)):
                raise failure[1]
            if interrupts.received() is not None:
                raise CancelRequested(interrupts.reason()) from failure[1]
            raise _AgentFailed(failure[0].name, _describe(failure[1]))

    def _run_loop(self, loop: LoopNode, index: int) -> None:
        """Rounds until ``loop.until`` holds or the limit; then ``on_exhausted`` (ending the run)."""
        done_key, exhausted_key = f"{loop.kind}[{index}]#done", f"{loop.kind}[{index}]#exhausted"
        if exhausted_key in self.state.completed_steps:
            self._exhausted(loop, index)
        if done_key in self.state.completed_steps:
            return
        if loop.when is not None and not loop.when(self.state):
            return
        critique = loop.kind == "critique_loop"
        if not critique and not self._loop_started(loop):
            self.state.iteration_count = 0  # a later loop counts its own rounds
        self.state.max_iterations = loop.max_iterations
        exhausted = False
        while True:
            round_ = self.state.iteration_count + 1
            if round_ > 1 and self.state.status is JobStatus.CRITIQUE_REVIEW:
                self.state.transition(JobStatus.ITERATING)
                self._save()
            if critique:
                self.reporter.round_started(round_, loop.max_iterations)
            for inner in loop.steps:
                self._run_step(inner, index, round_)
            self.state.iteration_count = round_
            self._save()
            if loop.until(self.state):
                break
            if round_ >= loop.max_iterations:
                exhausted = True
                break
        if exhausted and loop.on_exhausted is not None:
            self.state.completed_steps = [*self.state.completed_steps, exhausted_key]
            self._save()
            self._exhausted(loop, index)
        self.state.completed_steps = [*self.state.completed_steps, done_key]
        self._save()
        if critique:
            self.reporter.loop_finished(self.state)  # type: ignore[arg-type]

    def _exhausted(self, loop: LoopNode, index: int) -> None:
        """Run the loop's ``on_exhausted`` step (skipped if done before a resume) and end the run."""
        assert loop.on_exhausted is not None
        self._run_step(loop.on_exhausted, index)
        raise _StopRun

    def _loop_started(self, loop: LoopNode) -> bool:
        keys = {n.key for s in loop.steps for n in ((s,) if isinstance(s, AgentNode) else s.nodes)}
        return any(k.split("@")[0] in keys for k in self.state.completed_steps if "@" in k)

    # ---- applying -------------------------------------------------------------------------
    def _apply(self, node: AgentNode, key: str, result: AgentResult) -> None:
        try:
            apply_result(self.state, node.agent_cls, result, writes=node.writes, step=key)
        except _AgentFailed:
            raise
        except Exception as exc:  # noqa: BLE001 - contract violations and bad values fail the job
            self._record_error(node, exc)
            raise _AgentFailed(node.name, _describe(exc)) from exc
        self.state.completed_steps = [*self.state.completed_steps, key]
        self.state.progress_percentage = self._progress()
        self._save()
        self.reporter.step_finished(key, node, result, self.state)  # type: ignore[arg-type]

    def _progress(self) -> float:
        done = {k.split("@")[0] for k in self.state.completed_steps if "#" not in k}
        total = self.plan.total_weight or 1.0
        return round(min(99.9, 100.0 * sum(w for k, w in self._weights.items() if k in done) / total), 1)

    def _record_error(self, node: AgentNode, exc: BaseException) -> None:
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        try:
            with (self.folder.path / "errors.log").open("a", encoding="utf-8") as fh:
                fh.write(f"--- agent {node.name} ---\n{text}\n")
        except OSError:  # a full disk: the reason still reaches state.json and the console
            pass

    def _finish_cancel(self, reason: str) -> None:
        state = self.state
        if state.status.is_terminal:
            return
        if state.status is not JobStatus.PENDING and state.status is not JobStatus.CANCELLING:
            state.mark_cancelling()
            self._save()
        state.mark_cancelled(f"Cancelled: {reason}")
        self._save()
        self.reporter.run_cancelled(state)  # type: ignore[arg-type]  # reporters take either state

    def _save(self) -> None:
        self.folder.save(self.state)

    def _default_context(self, node: AgentNode, key: str, round_: int) -> AgentContext:
        return AgentContext(
            job_dir=Path(self.folder.path).resolve(),
            step=key,
            seed=self.plan.settings.seed,
            iteration=round_,
            run_recipe=run_nested_recipe,
            llm=_llm_client(self.plan.settings.llm, self.folder.path, key),  # None unless switched on
        )


def _llm_client(settings: object, job_dir: object, key: str) -> object:
    """The step's LLM client (whyflow.runtime.llm), or None when the model is off."""
    from whyflow.runtime.llm import client_for

    return client_for(settings, Path(str(job_dir)).resolve(), key)


def run_nested_recipe(
    recipe: str, data: str, output: str, treatment: str | None = None, outcome: str | None = None
) -> dict[str, Any]:
    """Run ``recipe`` on ``data`` as a nested job in the folder ``output``; return its headline and caveats.

    Agents may not import :mod:`flows`, so the runner hands them this function as
    ``ctx.run_recipe`` (a causal question asked through `whyflow ask`). The nested job is prepared
    exactly like ``whyflow run`` and run by this runner in the calling agent's thread, so it works
    inside a Prefect task or a Dask worker alike.

    Never raises for a failed nested run: the answer says what failed. Bad input (a column the
    data lacks) raises the usual :class:`~whyflow.core.errors.DataError`.
    """
    from whyflow.flows.jobstore.jobs import RunRequest, prepare_job
    from whyflow.flows.jobstore.summary import job_summary
    from whyflow.flows.recipes.plan import load_plan

    plan = load_plan(recipe)
    folder = prepare_job(
        RunRequest(recipe=recipe, data=data, treatment=treatment, outcome=outcome, output=output), plan
    )
    state = folder.load()
    failure = None
    try:
        Runner(plan, folder, state, LocalExecutor(), Reporter()).run()
    except (RunFailed, RunCancelled) as exc:
        failure = str(exc)
    from whyflow.causal.dataprep.column_names import read_from_values

    head = _headline(state)
    critique = state.critique_history[-1] if state.critique_history else None
    found = state.confounder_discovery
    return {
        "job_dir": str(Path(folder.path).resolve()),
        "status": state.status.value,
        "error": failure,
        "treatment": state.get_primary_pair()[0],
        "outcome": state.get_primary_pair()[1],
        "headline": head,
        "critique": None if critique is None else critique.decision.value,
        "caveats": list(critique.issues if critique else [])[:6] + list(state.recommendations)[:4],
        "summary": job_summary(state, folder.path),
        "adjusted_for": list(found.adjustment_set) if found is not None else [],
        "left_out": [
            {**r.model_dump(), "from_values": read_from_values(r.role)} for r in (found.column_roles if found else [])
        ],
    }


def _headline(state: Any) -> dict[str, Any] | None:
    from whyflow.causal.queries import headline_estimate

    e = headline_estimate(state)
    if e is None:
        return None
    return {
        "method": e.method,
        "estimand": e.estimand,
        "estimate": e.estimate,
        "ci_lower": e.ci_lower,
        "ci_upper": e.ci_upper,
        "p_value": e.p_value,
    }
