"""Fan-out of an agent's parts: identical numbers sequentially, on threads, as Prefect tasks and on Dask."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks import synthetic_effects as S
from tests.flows.test_dask import cluster  # noqa: F401 - the module-scoped Dask cluster fixture
from tests.helpers import make_state
from whyflow.flows.running.dispatch import run_single_agent
from whyflow.runtime.parallel import map_parts, sequential, thread_mapper, use_mapper

METHODS = {"methods": ["naive", "aipw", "t_learner", "x_learner", "dr_learner"], "bootstrap": 20}


def _square_seeded(item: tuple[int, int]) -> tuple[int, float]:
    """A part drawing from its own seed: the same value whoever runs it."""
    k, seed = item
    return k, float(np.random.default_rng(seed).normal())


def _thread_name(_: int) -> str:
    return threading.current_thread().name


def _nested(k: int) -> list[str]:
    return map_parts(_thread_name, range(k + 2))


def _fail_on(k: int) -> int:
    if k in (2, 3):
        raise ValueError(f"part {k}")
    return k


def test_map_parts_in_order_whatever_runs_them() -> None:
    items = [(k, 100 + k) for k in range(9)]
    alone = map_parts(_square_seeded, items)
    with use_mapper(thread_mapper(3)):
        pooled = map_parts(_square_seeded, items)
        names = map_parts(_thread_name, range(6))
        nested = map_parts(_nested, range(3))
        with pytest.raises(ValueError, match="part 2"):  # the first failure in item order
            map_parts(_fail_on, range(5))
    assert alone == pooled == [(k, float(np.random.default_rng(100 + k).normal())) for k in range(9)]
    assert all(n.startswith("whyflow-part") for n in names)
    # a part's own fan-out runs inline, on the part's thread (never waits on the pool it occupies)
    assert all(len(set(sub)) == 1 and sub[0].startswith("whyflow-part") for sub in nested)
    assert sequential(_square_seeded, items) == alone


def _estimates(state: Any) -> list[tuple[str, float, float, float]]:
    return [(e.details.method_key, e.estimate, e.ci_lower, e.ci_upper) for e in state.treatment_effects]


def test_effect_estimator_identical_sequential_and_on_threads(tmp_path: Path) -> None:
    frame, truth = S.nonlinear_heterogeneous(n=1500, seed=4)
    runs = []
    for name, mapper in (("seq", None), ("threads", thread_mapper(4))):
        state = make_state(frame, tmp_path / name, "treated", "outcome")
        with use_mapper(mapper):
            run_single_agent("effect_estimator", state, tmp_path / name, METHODS, seed=5)
        runs.append(_estimates(state))
    assert runs[0] == runs[1]  # bit-identical: same parts, same seeds, results in order
    assert [r[0] for r in runs[0]] == METHODS["methods"]


def test_refuters_identical_sequential_and_on_threads() -> None:
    from whyflow.causal.review.refuters import REFUTERS, run_refuters

    frame, _ = S.nonlinear_heterogeneous(n=1200, seed=2)
    covariates = [c for c in frame.columns if c not in ("treated", "outcome")]
    alone = run_refuters(frame, "treated", "outcome", covariates, simulations=30, seed=4)
    with use_mapper(thread_mapper(4)):
        pooled = run_refuters(frame, "treated", "outcome", covariates, simulations=30, seed=4)
    assert alone == pooled and all(name in alone for name in REFUTERS)


def _flow_estimates(frame: Any, job: Path, runner: Any) -> tuple[list[Any], set[str]]:
    """effect_estimator as a Prefect task in a flow with ``runner``, parts mapped by the flow's mapper."""
    from prefect import flow, task

    from whyflow.flows.running.compile import PrefectPartMapper

    seen: set[str] = set()

    @task
    def estimate() -> list[Any]:
        state = make_state(frame, job, "treated", "outcome")
        run_single_agent("effect_estimator", state, job, METHODS, seed=5)
        return _estimates(state)

    @flow(task_runner=runner)
    def fan_out() -> list[Any]:
        from prefect.context import FlowRunContext

        ctx = FlowRunContext.get()
        assert ctx is not None
        with use_mapper(_Recording(PrefectPartMapper(threading.get_ident(), 3), seen)):
            return estimate()

    return fan_out(), seen


class _Recording:
    """A mapper that notes the part names it was asked to run, then defers to the real one."""

    def __init__(self, inner: Any, seen: set[str]) -> None:
        self.inner, self.seen = inner, seen

    def __call__(self, fn: Any, items: Any, name: str = "part") -> list[Any]:
        self.seen.add(name)
        return list(self.inner(fn, items, name))


@pytest.mark.usefixtures("prefect_harness")
def test_prefect_threads_and_sequential_runners_identical(tmp_path: Path) -> None:
    from prefect.task_runners import ThreadPoolTaskRunner

    frame, _ = S.nonlinear_heterogeneous(n=1500, seed=4)
    state = make_state(frame, tmp_path / "plain", "treated", "outcome")
    run_single_agent("effect_estimator", state, tmp_path / "plain", METHODS, seed=5)
    plain = _estimates(state)
    threads, seen = _flow_estimates(frame, tmp_path / "threads", ThreadPoolTaskRunner(max_workers=4))
    one, _ = _flow_estimates(frame, tmp_path / "seq", ThreadPoolTaskRunner(max_workers=1))
    assert {"estimator", "outcome-fold"} <= seen  # the learners and the nuisance folds were fanned out
    assert plain == threads == one


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_dask_runner_gives_the_same_numbers(cluster: str, tmp_path: Path) -> None:  # noqa: F811
    from prefect_dask import DaskTaskRunner

    frame, _ = S.nonlinear_heterogeneous(n=1500, seed=4)
    state = make_state(frame, tmp_path / "plain", "treated", "outcome")
    run_single_agent("effect_estimator", state, tmp_path / "plain", METHODS, seed=5)
    dask, seen = _flow_estimates(frame, tmp_path / "dask", DaskTaskRunner(address=cluster))
    assert "estimator" in seen
    for a, b in zip(_estimates(state), dask, strict=True):  # BLAS summation order may differ across processes
        assert a[0] == b[0] and np.allclose(a[1:], b[1:], rtol=1e-9, atol=1e-12), (a, b)


def _slow_then_value(k: int) -> tuple[int, str]:
    """Parts of unequal cost (the first is the slowest): which worker ran each is recorded."""
    import time

    time.sleep(0.3 if k == 0 else 0.02)
    return k, threading.current_thread().name


@pytest.mark.usefixtures("prefect_harness")
def test_prefect_mapper_on_threads_runs_a_worker_task_per_thread() -> None:
    """Under threads a fan-out is `width` worker tasks taking the next part: results in item order,
    the first failure in item order raised, and a slow part does not hold up the others."""
    from prefect import flow
    from prefect.context import FlowRunContext
    from prefect.task_runners import ThreadPoolTaskRunner

    from whyflow.flows.running.compile import PrefectPartMapper

    @flow(task_runner=ThreadPoolTaskRunner(max_workers=4))
    def fan_out() -> tuple[list[Any], list[str], str]:
        ctx = FlowRunContext.get()
        assert ctx is not None
        with use_mapper(PrefectPartMapper(threading.get_ident(), 2)):
            values = map_parts(_slow_then_value, range(8), name="demo")
            with pytest.raises(ValueError) as failed:
                map_parts(_fail_on, range(6), name="failing")
        from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

        this_run = FlowRunFilter(id=FlowRunFilterId(any_=[ctx.flow_run.id]))  # type: ignore[union-attr]
        runs = ctx.client.read_task_runs(flow_run_filter=this_run)  # type: ignore[union-attr]
        return values, sorted(r.name for r in runs), str(failed.value)

    values, runs, failure = fan_out()
    assert [k for k, _ in values] == list(range(8))
    # part 0 sleeps 0.3 s: the other worker took every other part meanwhile
    assert {name for k, name in values if k > 0} != {values[0][1]}
    assert [n for n in runs if n.startswith("demo")] == ["demo-0", "demo-1"]  # two tasks for eight parts
    assert failure == "part 2"  # parts 2 and 3 fail; the first in item order is raised


def test_worker_tasks_take_no_part_after_a_failure_or_a_cancel() -> None:
    """Parts go out in item order; after a failure or a cancel (Ctrl-C while waiting) none is taken."""
    from whyflow.flows.running.compile import _Shared

    failing, cancelled = _Shared(_fail_on, list(range(6))), _Shared(_fail_on, list(range(6)))
    assert [failing.take(), failing.take(), failing.take()] == [0, 1, 2]
    failing.failed(2, ValueError("part 2"))
    assert failing.take() is None
    assert cancelled.take() == 0
    cancelled.stop()
    assert cancelled.take() is None
