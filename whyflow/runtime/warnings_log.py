"""Python warnings a run's libraries raise go to the job folder's ``warnings.log``, not the terminal.

NumPy's overflow notices, scikit-learn's convergence notes and pandas' deprecations say
something to whoever debugs a step, nothing to the user reading the run's progress: a screen of
them above the result hides it. Each is written once per place it is raised (Python's default
filter), with the file and line that raised it.

The runner opens the block around every run, so ``whyflow run``, ``whyflow ask``, the chat
page and a deployment's worker all route them the same way; an agent's task and the parts it
fans out open it again wherever they run, so a Dask worker process logs its own. Several jobs may run at once in one
process (the chat page's worker threads): :func:`warnings.showwarning` is replaced once while
any block is open, and each warning goes to the log of the job whose context raised it (a
context variable, which Prefect copies into its task threads), else to the newest open job's.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TextIO

__all__ = ["WARNINGS_LOG", "current_job_dir", "warnings_to_log"]

WARNINGS_LOG = "warnings.log"
"""The file of a job folder the warnings of its run go to."""

_current: ContextVar[Path | None] = ContextVar("whyflow_warnings_log", default=None)
_open: list[Path] = []
"""The logs of the blocks open now, oldest first."""
_lock = threading.Lock()
_shown_before: list[Callable[..., Any]] = []
"""The ``showwarning`` in place before the first open block, put back when the last one closes."""


def _show(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    text = warnings.formatwarning(message, category, filename, lineno, line)
    path = _current.get() or (_open[-1] if _open else None)
    if path is None:  # kept by a library's catch_warnings past the last block: shown as Python shows it
        with contextlib.suppress(OSError):
            (file or sys.stderr).write(text)
        return
    with contextlib.suppress(OSError), path.open("a", encoding="utf-8") as fh:
        fh.write(text)  # a log that cannot be written (a full disk) drops the warning: it never fails a step


def current_job_dir() -> Path | None:
    """The job folder whose log this context's warnings go to (None outside every block): work sent to another
    process (a Dask worker) takes it along and opens the block there."""
    path = _current.get()
    return path.parent if path is not None else None


@contextlib.contextmanager
def warnings_to_log(job_dir: Path) -> Iterator[None]:
    """Within the block, every warning shown in this process goes to ``job_dir/warnings.log``
    (to the log of the job whose context raised it, where several blocks are open at once)."""
    path = job_dir / WARNINGS_LOG
    token = _current.set(path)
    with _lock:
        if not _open:
            _shown_before[:] = [warnings.showwarning]
            warnings.showwarning = _show
        _open.append(path)
    try:
        yield
    finally:
        with _lock:
            _open.remove(path)
            if not _open and _shown_before:
                warnings.showwarning = _shown_before.pop()
        _current.reset(token)
