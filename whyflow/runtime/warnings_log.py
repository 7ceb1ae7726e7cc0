"""Python warnings a run's libraries raise go to the job folder's ``warnings.log``, not the terminal.

NumPy's overflow notices, scikit-learn's convergence notes and pandas' deprecations say
something to whoever debugs a step, nothing to the user reading the run's progress: a screen of
them above the result hides it. Each is written once per place it is raised (Python's default
filter), with the file and line that raised it.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

__all__ = ["WARNINGS_LOG", "warnings_to_log"]

WARNINGS_LOG = "warnings.log"
"""The file of a job folder the warnings of its run go to."""


@contextlib.contextmanager
def warnings_to_log(job_dir: Path) -> Iterator[None]:
    """Within the block, every warning shown in this process is appended to ``job_dir/warnings.log``.

    It replaces :func:`warnings.showwarning`, process-wide (a run's steps work in threads of
    their own), and puts the previous one back on leaving. Where the log cannot be written (a
    full disk) the warning is dropped: it never fails the step that raised it.
    """
    previous = warnings.showwarning
    path = job_dir / WARNINGS_LOG

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        text = warnings.formatwarning(message, category, filename, lineno, line)
        with contextlib.suppress(OSError), path.open("a", encoding="utf-8") as fh:
            fh.write(text)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = previous
