"""Figures drawn in a process of their own while the run goes on, or here when there is none.

An agent's PNG figures (the EDA's histograms, correlation map and balance plot; the propensity
overlap and love plots) cost matplotlib about 1.6 s at 100,000 rows, all of it Python holding
the GIL: on a thread it would only slow the agent running alongside. :func:`start_worker`
starts one worker process when the run starts (the agents' ``warm_up`` hook), which imports
matplotlib on the core the analysis leaves idle; :func:`draw` then sends ``fn(*args)`` there
and returns at once, and the agent reports the paths ``fn`` writes. The runner calls the
returned release (:func:`settle`) when the run ends, before the job is marked completed: it
waits for every figure, draws here any the worker could not, and stops the worker, so every
path a result names exists once the job is done. Without a worker (an agent called directly,
in tests or a notebook; a Dask worker) :func:`draw` draws here and now, as before.

``fn`` must be a module-level function and its arguments picklable (the worker is a spawned
process): plain arrays, frames and dicts, never the agent's context.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

__all__ = ["draw", "settle", "start_worker"]

log = logging.getLogger(__name__)

_LOCK = threading.Lock()
_WORKER: list[Any] = []
_PENDING: list[tuple[Future[Any], Callable[..., Any], tuple[Any, ...]]] = []
SETTLE_TIMEOUT = 300.0
"""Seconds :func:`settle` waits for one figure before drawing it here instead."""


def _ignore_interrupts() -> None:
    """The worker's initializer: a terminal's Ctrl-C reaches the whole process group, and the run
    (which saves itself as cancelled, then calls :func:`settle`) is what stops the worker."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _ready(modules: Sequence[str]) -> None:
    """The worker's first job: matplotlib with its renderer and a font loaded, and the drawing modules."""
    import importlib
    import io

    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(1, 1))
    fig.text(0.5, 0.5, "x")
    fig.savefig(io.BytesIO(), format="png")
    for name in modules:
        importlib.import_module(name)


def start_worker(modules: Sequence[str] = ()) -> Callable[[], None]:
    """Start the figure worker if none runs (importing ``modules`` there); return :func:`settle`."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with _LOCK:
        if not _WORKER:
            pool = ProcessPoolExecutor(
                max_workers=1, mp_context=multiprocessing.get_context("spawn"), initializer=_ignore_interrupts
            )
            pool.submit(_ready, tuple(modules))  # the process starts now and warms up while the run goes on
            _WORKER.append(pool)
        else:
            _WORKER[0].submit(_ready, tuple(modules))
    return settle


def draw(fn: Callable[..., Any], *args: Any) -> None:
    """``fn(*args)`` in the figure worker when one runs (not waited for here), else here and now."""
    with _LOCK:
        pool = _WORKER[0] if _WORKER else None
        if pool is not None:
            try:
                _PENDING.append((pool.submit(fn, *args), fn, args))
                return
            except RuntimeError:  # the worker broke or was shut down: draw here
                pass
    fn(*args)


def settle() -> None:
    """Wait for every figure sent to the worker, draw here any it could not, and stop it.

    Never raises: a figure that cannot be drawn here either is logged, as the agents' own
    figure failures are recorded rather than failing the run.
    """
    with _LOCK:
        pending, workers = list(_PENDING), list(_WORKER)
        _PENDING.clear()
        _WORKER.clear()
    for future, fn, args in pending:
        try:
            future.result(timeout=SETTLE_TIMEOUT)
        except Exception as exc:  # noqa: BLE001 - the worker died or the figure failed there
            log.warning("the figure worker could not draw %s (%s); drawing it here", fn.__name__, exc)
            try:
                fn(*args)
            except Exception as again:  # noqa: BLE001 - see the docstring
                log.error("figure %s could not be drawn: %s", fn.__name__, again)
    for pool in workers:
        pool.shutdown(wait=True, cancel_futures=True)
