"""Ctrl-C from a terminal: the run ends CANCELLED within seconds, exit 130, resumable.

A terminal's Ctrl-C sends SIGINT to the whole foreground process group: whyflow, Prefect's
temporary API server and any notebook kernel. Two things follow:

* Prefect's temporary server is started with SIGINT blocked (:mod:`flows.temp_server`; a
  blocked signal stays blocked in the child), so it survives the Ctrl-C and the flow can still
  record its end; before, it died with the group and the run hung retrying "All connection
  attempts failed".
* While a run goes, SIGINT raises KeyboardInterrupt as usual (the runner turns it into a
  cancel) and starts a watchdog: if the process is still alive a few seconds later (a
  remote API that does not answer, a thread that does not stop) the state is saved as
  cancelled, kernels are killed and the process exits 130. A second Ctrl-C exits at once.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["interrupt_guard", "GRACE_SECONDS"]

GRACE_SECONDS = 10.0
"""How long after Ctrl-C the process may take to finish on its own."""


@contextmanager
def interrupt_guard(on_give_up: Callable[[], None], grace: float = GRACE_SECONDS) -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt and arms a watchdog that calls ``on_give_up`` and exits 130.

    ``on_give_up`` saves the state as cancelled and says so; it runs at most once.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    lock = threading.Lock()
    fired: list[bool] = []

    def give_up() -> None:
        with lock:
            if fired:
                return
            fired.append(True)
        try:
            from agents.base.children import kill_kernels

            kill_kernels()
            on_give_up()
        finally:
            from flows.temp_server import stop_all

            stop_all()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(130)

    def handler(signum: int, frame: object) -> None:
        if timers:
            give_up()  # a second Ctrl-C: the user wants out now
        # The user asked to stop: Prefect's complaints while it winds down (events it can no
        # longer send, services stopped) are noise; whyflow's own lines say what happened.
        logging.disable(logging.CRITICAL)
        timer = threading.Timer(grace, give_up)
        timer.daemon = True
        timer.start()
        timers.append(timer)
        raise KeyboardInterrupt

    timers: list[threading.Timer] = []
    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        # An armed watchdog stays armed: what follows (Prefect's shutdown, thread joins at
        # exit) is where a run interrupted by Ctrl-C used to hang.
        signal.signal(signal.SIGINT, previous)
