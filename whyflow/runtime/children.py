"""Child processes an agent starts (notebook kernels): a time limit that holds, no orphans.

A Jupyter kernel is a separate process. If the run is cancelled, interrupted or the
notebook runs past its time limit, the kernel must go with it; otherwise it keeps a core
busy after whyflow has exited (seen: an ``ipykernel_launcher`` left behind by a cancelled run).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["kernel_processes", "kill_kernels", "time_limit"]


def kernel_processes() -> list[int]:
    """Process ids of the Jupyter kernels this process started (directly or not)."""
    try:
        import psutil
    except ImportError:  # pragma: no cover - psutil comes with ipykernel
        return []
    out = []
    try:
        children = psutil.Process(os.getpid()).children(recursive=True)
    except psutil.Error:
        return []
    for child in children:
        try:
            cmd = " ".join(child.cmdline())
        except psutil.Error:
            continue
        if "ipykernel" in cmd:
            out.append(child.pid)
    return out


def kill_kernels() -> int:
    """Kill every Jupyter kernel this process started; return how many were killed."""
    import signal

    killed = 0
    for pid in kernel_processes():
        try:
            os.kill(pid, signal.SIGKILL)
            killed += 1
        except OSError:
            continue
    return killed


@contextmanager
def time_limit(seconds: float) -> Iterator[threading.Event]:
    """Kill this process's kernels if the block runs longer than ``seconds``.

    The event yielded is set when the limit was reached (the kernel's client then fails
    with a dead-kernel error, which the caller records). Kernels are killed on the way out
    in every case, so none outlives the block, whatever ended it.
    """
    expired = threading.Event()

    def fire() -> None:
        expired.set()
        kill_kernels()

    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()
    try:
        yield expired
    finally:
        timer.cancel()
        kill_kernels()
