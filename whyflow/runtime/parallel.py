"""Fan-out of an agent's independent parts: ``map_parts(fn, items)``, results in order.

An agent calls :func:`map_parts` for work that splits into independent parts (cross-fitting
folds, meta-learners, bootstrap replicate blocks, refuter simulations). Who runs the parts is
not the agent's business: outside a flow (tests, notebooks, benchmarks calling an agent
directly) they run here, one after another; a flow run installs a :data:`Mapper` with
:func:`use_mapper` (``whyflow.flows.running.compile`` maps a Prefect task over the flow run's task runner, so
threads by default and Dask workers under ``task_runner: dask``). Nothing here imports Prefect.

Rules for a part, so that any mapper gives the same numbers in any order:

* it is a pure function of its item: every random draw it makes comes from a seed carried in
  the item (or fixed in ``fn``), never from shared state or the order parts run in;
* ``fn`` and the items may be pickled (a Dask worker runs them in another process): module-level
  functions or :func:`functools.partial` of them, arrays rather than open handles;
* a part never writes to anything shared; its result is all it gives back.

A part that raises makes ``map_parts`` raise (the first failure in item order).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar, copy_context
from typing import Any, Protocol, TypeVar

__all__ = ["Mapper", "map_parts", "use_mapper", "sequential", "thread_mapper"]

T = TypeVar("T")
R = TypeVar("R")


class Mapper(Protocol):
    """Runs ``fn`` on every item and returns the results in item order (``name`` labels the parts)."""

    def __call__(self, fn: Callable[[Any], Any], items: Sequence[Any], name: str) -> list[Any]: ...


_MAPPER: ContextVar[Mapper | None] = ContextVar("whyflow_part_mapper", default=None)
_IN_PART: ContextVar[bool] = ContextVar("whyflow_in_part", default=False)


def sequential(fn: Callable[[Any], Any], items: Sequence[Any], name: str = "part") -> list[Any]:
    """The default mapper: every part in this thread, in order."""
    return [fn(item) for item in items]


def _as_part(fn: Callable[[T], R], item: T) -> R:
    """Run one part marked as such, so a part's own ``map_parts`` runs its sub-parts inline."""
    token = _IN_PART.set(True)
    try:
        return fn(item)
    finally:
        _IN_PART.reset(token)


def map_parts(fn: Callable[[T], R], items: Iterable[T], *, name: str = "part") -> list[R]:
    """``[fn(item) for item in items]``, run by the installed mapper (sequential without one).

    Inside a part, or with fewer than two items, the parts run inline: nesting never waits on a
    pool that its own caller occupies.
    """
    todo = list(items)
    mapper = _MAPPER.get()
    if mapper is None or len(todo) < 2 or _IN_PART.get():
        return [fn(item) for item in todo]
    out = mapper(_PartFn(fn), todo, name)
    if len(out) != len(todo):  # a mapper bug, never silently dropped parts
        raise RuntimeError(f"the mapper returned {len(out)} results for {len(todo)} parts")
    return out


class _PartFn:
    """``fn`` wrapped by :func:`_as_part` (a class, not a closure, so it pickles by reference to ``fn``)."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def __call__(self, item: Any) -> Any:
        return _as_part(self.fn, item)


@contextmanager
def use_mapper(mapper: Mapper | None) -> Iterator[None]:
    """Install ``mapper`` for the calls to :func:`map_parts` made in this context."""
    token = _MAPPER.set(mapper)
    try:
        yield
    finally:
        _MAPPER.reset(token)


def thread_mapper(max_workers: int = 2) -> Mapper:
    """A mapper running the parts on a pool of ``max_workers`` threads (tests, benchmarks, notebooks).

    Each part runs in a copy of the caller's context. NumPy, scikit-learn and LightGBM release the
    GIL in their heavy loops, so threads overlap the fits.
    """

    def run(fn: Callable[[Any], Any], items: Sequence[Any], name: str = "part") -> list[Any]:
        with ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix=f"whyflow-{name}") as pool:
            futures = [pool.submit(copy_context().run, fn, item) for item in items]
            return [f.result() for f in futures]

    return run
