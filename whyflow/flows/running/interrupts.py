"""Signals: Ctrl-C, SIGTERM or SIGHUP end a run CANCELLED within seconds, exit 130, resumable.

Whoever sends it (a terminal's Ctrl-C to the whole foreground process group, ``kill PID``, a
process supervisor, an IDE's stop button, a closed terminal), every one of SIGINT, SIGTERM and
SIGHUP is a request to stop that the user may want to resume from:

* Prefect's temporary API server is started with SIGINT and SIGHUP blocked
  (:mod:`whyflow.flows.running.temp_server`; a blocked signal stays blocked in the child), so it survives a
  terminal's Ctrl-C or its closing and the flow can still record its end.
* While a run goes (:func:`interrupt_guard`), the signal raises KeyboardInterrupt where the main
  thread is (the runner turns it into a cancel), is remembered (:func:`received`), and starts a
  watchdog: if the process is still alive a few seconds later (a remote API that does not
  answer, a thread that does not stop, a temporary server a group's SIGTERM ended) the state is
  saved as cancelled, kernels and servers are stopped and the process exits 130. A second
  signal exits at once.
* Whatever reaches the runner after a signal, even an error an agent made of it, is a cancel
  (:func:`received`), never a failed agent.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from whyflow.flows.jobstore.store import JobFolder

__all__ = [
    "interrupt_guard",
    "stop_signals_interrupt",
    "guard_handler",
    "received",
    "ended_by_signal",
    "reason",
    "note",
    "cancel_job",
    "stop_children",
    "GRACE_SECONDS",
    "SIGNALS",
]

GRACE_SECONDS = 10.0
"""How long after the signal the process may take to finish on its own."""

SIGNALS = tuple(s for s in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None)
"""The signals that stop a run as a cancel (no SIGHUP on Windows)."""

_received: list[int] = []
"""The stop signals this process received while a guard was on (the first one names the reason)."""


def received() -> int | None:
    """The first stop signal received since the current guard began, or None."""
    return _received[0] if _received else None


def ended_by_signal(exc: BaseException, job: object) -> bool:
    """Whether a flow that raised ``exc`` was stopped by a signal (then the caller cancels the job).

    After a stop signal, whatever ends the flow (KeyboardInterrupt, Prefect's TerminationSignal, an
    event loop's CancelledError) ends it cancelled. Otherwise an error is one line on stderr naming
    the job to resume (False), and anything that is not an Exception propagates.
    """
    if isinstance(exc, KeyboardInterrupt) or received() is not None:
        return True
    if not isinstance(exc, Exception):
        raise exc
    print(f"whyflow: error: Prefect could not run the flow: {exc}", file=sys.stderr)
    print(f"whyflow: the job is saved; `whyflow resume {job}` tries again", file=sys.stderr)
    return False


def note(signum: int) -> None:
    """Remember a stop signal (also called by the runner's own SIGTERM handler, where no guard is on)."""
    _received.append(signum)


def reason(signum: int | None = None) -> str:
    """The cancel reason for a signal: ``interrupted (Ctrl-C)`` or ``received signal SIGTERM``."""
    signum = received() if signum is None else signum
    if signum is None or signum == signal.SIGINT:
        return "interrupted (Ctrl-C)"
    return f"received signal {signal.Signals(signum).name}"


@contextmanager
def stop_signals_interrupt() -> Iterator[None]:
    """SIGTERM and SIGHUP raise KeyboardInterrupt, as SIGINT does, while the block runs.

    For the start of a command, before :func:`interrupt_guard`: the default action of these
    signals ends the process at once, leaving a job created a moment before PENDING forever.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        note(signum)
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, handler) for sig in SIGNALS if sig != signal.SIGINT}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


_guard_handler: list[Callable[[int, object], None]] = []
"""The handler of the innermost guard, for the runner to put back where Prefect replaced it."""


def guard_handler() -> Callable[[int, object], None] | None:
    """The active guard's signal handler, or None outside :func:`interrupt_guard`."""
    return _guard_handler[-1] if _guard_handler else None


@contextmanager
def interrupt_guard(on_give_up: Callable[[], None], grace: float = GRACE_SECONDS) -> Iterator[None]:
    """A stop signal raises KeyboardInterrupt and arms a watchdog that calls ``on_give_up`` and exits 130.

    ``on_give_up`` saves the state as cancelled and says so; it runs at most once.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    lock = threading.Lock()
    fired: list[bool] = []
    _received.clear()  # a signal of an earlier run in this process (tests call main() repeatedly)

    def give_up() -> None:
        with lock:
            if fired:
                return
            fired.append(True)
        try:
            stop_children()
            on_give_up()
        finally:
            from whyflow.flows.running.temp_server import stop_all

            stop_all()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(130)

    def handler(signum: int, frame: object) -> None:
        note(signum)
        if timers:
            give_up()  # a second signal: the user wants out now
        # The user asked to stop: Prefect's complaints while it winds down (events it can no
        # longer send, services stopped) are noise; whyflow's own lines say what happened.
        _silence_logging()
        timer = threading.Thread(target=_watch, args=(grace, give_up), name="whyflow-stop-watchdog", daemon=True)
        timer.start()
        timers.append(timer)
        raise KeyboardInterrupt

    unraisable = sys.unraisablehook

    def drop_interrupt(info: Any) -> None:
        # The handler's KeyboardInterrupt can land where Python cannot raise it (a weakref
        # callback of the import system, a __del__): Python would print "Exception ignored in
        # ..." with a traceback. The signal is already noted and the watchdog armed, so the stop
        # goes on without it; any other such exception is shown as before.
        if not isinstance(info.exc_value, KeyboardInterrupt):
            unraisable(info)

    timers: list[threading.Thread] = []
    previous = {sig: signal.signal(sig, handler) for sig in SIGNALS}
    _guard_handler.append(handler)
    sys.unraisablehook = drop_interrupt
    try:
        yield
    finally:
        # An armed watchdog stays armed: what follows (Prefect's shutdown, thread joins at
        # exit) is where an interrupted run used to hang.
        _guard_handler.remove(handler)
        sys.unraisablehook = unraisable
        for sig, old in previous.items():
            signal.signal(sig, old)


def _watch(grace: float, give_up: Callable[[], None]) -> None:
    """Call ``give_up`` ``grace`` seconds from now, or 2 s from now once Prefect's temporary server is gone.

    A SIGTERM to the whole process group also ends the temporary server; the flow then retries
    a server that will never answer again, and only the watchdog ends the run.
    """
    import time

    start = time.monotonic()
    while (waited := time.monotonic() - start) < grace:
        if waited >= 2.0 and _temporary_server_gone():
            break
        time.sleep(0.2)
    give_up()


def _temporary_server_gone() -> bool:
    if "whyflow.flows.running.temp_server" not in sys.modules:
        return False
    from whyflow.flows.running.temp_server import gone

    return gone()


def _silence_logging() -> None:
    """No more log records on the console (Prefect's internal loggers ignore :func:`logging.disable`)."""
    logging.disable(logging.CRITICAL)
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        if name.startswith("prefect") and isinstance(logger, logging.Logger):
            logger.disabled = True


def stop_children() -> None:
    """Kill the notebook kernels this process started (the sandbox's warm interpreters end with
    the process: their socket to it closes)."""
    from whyflow.runtime.children import kill_kernels

    kill_kernels()


def cancel_job(folder: JobFolder) -> None:
    """Save the job as cancelled after a signal, unless it already ended; stop any notebook kernel."""
    stop_children()  # a notebook still executing in a worker thread then ends at once
    state = folder.load_any()
    if not state.status.is_terminal:
        state.mark_cancelled(f"Cancelled: {reason()}")
        folder.save(state)
