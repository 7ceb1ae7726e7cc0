"""Ctrl-C from a terminal: the run ends CANCELLED within seconds, exit 130, resumable.

A terminal's Ctrl-C sends SIGINT to the whole foreground process group: whyflow, Prefect's
temporary API server and any notebook kernel. Two things follow:

* Prefect's temporary server is started here with SIGINT blocked (a blocked signal stays
  blocked in the child), so it survives the Ctrl-C and the flow can still record its end;
  before, it died with the group and the run hung retrying "All connection attempts failed".
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
from typing import Any

__all__ = ["shield_ephemeral_server", "interrupt_guard", "GRACE_SECONDS"]

GRACE_SECONDS = 10.0
"""How long after Ctrl-C the process may take to finish on its own."""


def shield_ephemeral_server(while_booting: Callable[[], None] | None = None) -> None:
    """Start Prefect's temporary API server now, immune to the terminal's Ctrl-C.

    ``while_booting`` runs in this process while the server's own process boots (about 4 s of a
    cold run), before the health check waits for it: the run's heavy imports overlap the boot
    instead of following it. Does nothing when ``PREFECT_API_URL`` names a server (that one is
    not in our group); ``while_booting`` then runs as the first agent would have.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_EPHEMERAL_ENABLED

    if PREFECT_API_URL.value() or not PREFECT_SERVER_EPHEMERAL_ENABLED.value():
        return
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()
    if server.running:
        return
    spawn = getattr(server, "_run_uvicorn_command", None)
    if spawn is None:  # pragma: no cover - a Prefect without it starts the server itself
        return
    pending = [while_booting] if while_booting is not None else []

    def spawn_shielded() -> Any:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            process = spawn()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
        while pending:  # once, even if the port was taken and the server is spawned again
            pending.pop()()
        return process

    server._run_uvicorn_command = spawn_shielded  # type: ignore[method-assign]
    server.start()


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
