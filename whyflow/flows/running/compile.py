"""Compile a plan into a Prefect 3 flow whose tasks are the agents.

Each agent step becomes a Prefect task named after the agent (retries from the recipe);
parallel groups are submitted to the flow's task runner (threads by default, Dask when the
recipe says so) and the critique loop runs inside the flow. The runner applies every update
in the flow, so the state has one writer whichever runner executes the tasks.

Prefect is imported here (and in nothing `whyflow validate` needs), so validation stays fast.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

from whyflow.core.agent import Agent, AgentContext, AgentResult
from whyflow.flows.recipes.nodes import AgentNode, Plan
from whyflow.flows.running.dispatch import dispatch
from whyflow.runtime.warnings_log import current_job_dir, warnings_to_log
from whyflow.states import JobState

__all__ = ["make_task_runner", "part_width", "PrefectExecutor", "PrefectPartMapper"]


def _agent_task(agent_cls: type[Agent], params: dict[str, Any], state: JobState, ctx: AgentContext) -> AgentResult:
    """The body of every agent task: dispatch on a private view, return the update."""
    from prefect.logging import get_run_logger

    try:
        logger = get_run_logger()
        ctx = dataclasses.replace(ctx, logger=logger)  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - outside a run context (plain call) keep the default
        pass
    with warnings_to_log(ctx.job_dir):  # in this process, which on Dask is a worker's, not the runner's
        return dispatch(agent_cls, state, params, ctx)


def make_task_runner(plan: Plan) -> Any:
    """The Prefect task runner the recipe's settings ask for."""
    from prefect.task_runners import ThreadPoolTaskRunner

    settings = plan.settings
    if settings.task_runner == "dask":
        try:
            from prefect_dask import DaskTaskRunner
        except ImportError as exc:  # pragma: no cover - prefect-dask is a dependency
            raise RuntimeError("task_runner: dask needs the prefect-dask package") from exc
        if settings.dask_address:
            return DaskTaskRunner(address=settings.dask_address)
        return DaskTaskRunner(
            cluster_kwargs={"n_workers": settings.max_workers or 2, "threads_per_worker": 1, "processes": True}
        )
    if settings.task_runner == "sequential":
        return ThreadPoolTaskRunner(max_workers=1)
    return ThreadPoolTaskRunner(max_workers=settings.max_workers)


class _Part:
    """Parts and their inputs, one opaque parameter: neither Prefect nor Dask looks inside it.

    (Prefect's ``quote`` is a named tuple, which Dask would take for a task of its own graph.)
    """

    def __init__(self, fn: Callable[[Any], Any], items: list[Any]) -> None:
        self.fn, self.items = fn, items
        self.job_dir = current_job_dir()  # the warnings of its parts go to the job's log, in any process


def _run_part(part: _Part) -> list[Any]:
    """The body of every part task on Dask: independent parts of an agent's work (folds, learners), in order."""
    if part.job_dir is None:
        return [part.fn(item) for item in part.items]
    with warnings_to_log(part.job_dir):
        return [part.fn(item) for item in part.items]


class _Shared:
    """A fan-out's parts for the worker tasks of a thread pool: each worker takes the next part until none is left.

    One opaque parameter, like :class:`_Part`; it never leaves the process (threads share it).
    Parts are taken in item order, and none is taken after a part failed, so every part before
    a failure has run and the first failure in item order is known.
    """

    def __init__(self, fn: Callable[[Any], Any], items: list[Any]) -> None:
        self.fn, self.items = fn, items
        self.results: list[Any] = [None] * len(items)
        self.errors: dict[int, BaseException] = {}
        self._next = 0
        self._stopped = False
        self._lock = threading.Lock()

    def take(self) -> int | None:
        with self._lock:
            if self.errors or self._stopped or self._next >= len(self.items):
                return None
            self._next += 1
            return self._next - 1

    def stop(self) -> None:
        """No part is taken after this (the run is being cancelled); parts in flight finish."""
        with self._lock:
            self._stopped = True

    def failed(self, index: int, exc: BaseException) -> None:
        with self._lock:
            self.errors[index] = exc


def _drain(shared: _Shared) -> int:
    """The body of a worker task on threads: run parts until none is left; how many it ran.

    A part's failure is recorded for the caller (which raises the first in item order) and
    re-raised, so the worker's task run ends Failed in Prefect.
    """
    ran = 0
    while (index := shared.take()) is not None:
        try:
            shared.results[index] = shared.fn(shared.items[index])
        except BaseException as exc:
            shared.failed(index, exc)
            raise
        ran += 1
    return ran


class PrefectPartMapper:
    """Runs an agent's parts (:func:`whyflow.runtime.parallel.map_parts`) as Prefect tasks on the flow's task runner.

    On threads (the default runner) a fan-out is ``width`` worker tasks, each taking the next
    part until none is left, so at most ``width`` parts are in flight (which bounds the memory
    of concurrent fits) and a slow part never holds up the others. A task run costs Prefect and
    its server about 20 ms of both CPUs (a run, its states, its log lines): a task per part
    added 1.3 s to a 100,000-row analysis's 68 parts.
    Under ``task_runner: sequential`` the one worker runs every part in turn. Under
    ``task_runner: dask`` one task per worker thread takes a round-robin share of the parts
    (a task cannot share a queue across processes), so a cluster pays Prefect's per-task cost
    and ships the inputs a few times a fan-out, not once a part. Results come back in order and
    every part carries its own seed, so the numbers do not depend on the runner.

    Parts are only submitted from the thread running the flow, where a sequential step's agent
    runs. An agent that itself runs as a submitted task (a member of a ``parallel:`` group, on a
    pool thread or a Dask worker) runs its parts inline, one after another: waiting on the pool
    it occupies could deadlock a bounded thread pool or a Dask cluster whose every worker thread
    holds such an agent, and Prefect's Dask runner gives a worker no flow context to submit from
    that would avoid it. A part's own fan-out also runs inline.
    """

    def __init__(self, flow_thread: int, width: int | None = None) -> None:
        from prefect import task
        from prefect.cache_policies import NO_CACHE

        self.flow_thread = flow_thread
        self.width = width
        self._task = task(_run_part, name="part", cache_policy=NO_CACHE, persist_result=False)  # type: ignore[call-overload]
        self._worker = task(_drain, name="part", cache_policy=NO_CACHE, persist_result=False)  # type: ignore[call-overload]

    def __call__(self, fn: Callable[[Any], Any], items: Sequence[Any], name: str = "part") -> list[Any]:
        from prefect.context import FlowRunContext

        runner = getattr(FlowRunContext.get(), "task_runner", None)
        if runner is None or threading.get_ident() != self.flow_thread:
            return [fn(item) for item in items]
        threads = _cluster_threads(runner)
        width = self.width or threads or len(items)
        part = self._task.with_options(name=name)
        if threads is not None:
            return self._batched(part, fn, list(items), width, name)
        if _in_process(runner):
            return self._shared(fn, list(items), width, name)
        futures: list[Any] = []  # another runner (one whose cluster cannot be asked its size): a task a part
        results: list[Any] = []
        for i, item in enumerate(items):
            if i >= width:  # keep at most `width` in flight: wait for the oldest before the next
                results.extend(futures[i - width].result())
            futures.append(part.with_options(task_run_name=f"{name}-{i}").submit(_Part(fn, [item])))
        for future in futures[len(results) :]:
            results.extend(future.result())
        return results

    def _shared(self, fn: Callable[[Any], Any], items: list[Any], width: int, name: str) -> list[Any]:
        """On threads: ``width`` worker tasks, each taking the next part until none is left."""
        shared = _Shared(fn, items)
        worker = self._worker.with_options(name=name)
        futures = [
            worker.with_options(task_run_name=f"{name}-{k}").submit(shared) for k in range(min(width, len(items)))
        ]
        try:
            for future in futures:
                future.wait()
        except BaseException:  # Ctrl-C or a cancel while waiting: the workers take no further part
            shared.stop()
            raise
        if shared.errors:
            raise shared.errors[min(shared.errors)]
        for future in futures:
            future.result()  # a worker that failed outside its parts (Prefect itself) raises here
        return shared.results

    @staticmethod
    def _batched(part: Any, fn: Callable[[Any], Any], items: list[Any], width: int, name: str) -> list[Any]:
        """On a Dask cluster: one task per worker thread, taking every ``width``-th part in turn.

        A task on a Dask worker costs about 0.2 s of Prefect's own work there (a run, its states)
        and ships its inputs (the covariate matrix) once: a task per part made the estimator
        slower on a 2-worker cluster than in one process. Round-robin keeps the learners and
        folds of unequal cost spread over the tasks.
        """
        groups = [list(range(k, len(items), width)) for k in range(min(width, len(items)))]
        futures = [
            part.with_options(
                task_run_name=f"{name}-{g[0]}" + (f"-and-{len(g) - 1}-more" if len(g) > 1 else "")
            ).submit(_Part(fn, [items[i] for i in g]))
            for g in groups
        ]
        results: list[Any] = [None] * len(items)
        for g, future in zip(groups, futures, strict=True):
            for i, value in zip(g, future.result(), strict=True):
                results[i] = value
        return results


def _in_process(runner: Any) -> bool:
    """Whether the runner's tasks run in this process (Prefect's thread pool), so they can share a queue."""
    from prefect.task_runners import ThreadPoolTaskRunner

    return isinstance(runner, ThreadPoolTaskRunner)


def _cluster_threads(runner: Any) -> int | None:
    """The worker threads of a started Dask task runner's cluster (None for another runner)."""
    client = getattr(runner, "_client", None)
    if client is None:
        return None
    try:
        return max(1, sum(client.nthreads().values()))
    except Exception:  # noqa: BLE001 - an unreachable scheduler: no bound from it
        return None


def part_width(plan: Plan) -> int | None:
    """Parts in flight at once: the recipe's ``max_workers``, else the CPUs (threads) or, under Dask, the
    cluster's worker threads (asked when the parts are mapped)."""
    settings = plan.settings
    if settings.max_workers:
        return int(settings.max_workers)
    if settings.task_runner == "dask":
        return None
    if settings.task_runner == "sequential":
        return 1  # its pool's one thread: a second worker task would only find the parts taken
    return max(1, os.cpu_count() or 1)


class PrefectExecutor:
    """Runs each agent as a Prefect task: called in the flow, or submitted for parallel groups."""

    def __init__(self, plan: Plan) -> None:
        from prefect import task
        from prefect.cache_policies import NO_CACHE

        self._tasks = {
            node.key: task(  # type: ignore[call-overload]
                _agent_task,
                name=node.name,
                retries=node.retries,
                retry_delay_seconds=plan.settings.retry_delay_seconds,
                cache_policy=NO_CACHE,
                persist_result=False,
            )
            for node in plan.agent_nodes()
        }

    def _task(self, node: AgentNode, ctx: AgentContext) -> Any:
        return self._tasks[node.key].with_options(task_run_name=ctx.step)

    def run(self, node: AgentNode, state: JobState, ctx: AgentContext) -> AgentResult:
        result: AgentResult = self._task(node, ctx)(node.agent_cls, node.params.model_dump(), state, ctx)
        return result

    def run_many(self, jobs: list[tuple[AgentNode, JobState, AgentContext]]) -> list[AgentResult | BaseException]:
        futures = [self._task(n, ctx).submit(n.agent_cls, n.params.model_dump(), s, ctx) for n, s, ctx in jobs]
        out: list[AgentResult | BaseException] = []
        for future in futures:
            try:
                out.append(future.result())
            except BaseException as exc:  # noqa: BLE001 - each member's failure is reported
                out.append(exc)
        return out
