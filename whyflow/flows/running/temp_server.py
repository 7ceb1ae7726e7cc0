"""whyflow's temporary Prefect API server: Prefect's own server app in a child process, started early.

With no server configured (no ``PREFECT_API_URL``, ephemeral mode on) Prefect starts a temporary
server when a flow first needs one. Doing it that way costs a run about 3 s before its first
agent: the code that starts the server imports Prefect's whole server package in this process
(2.5 s), and only then does the server's own process begin its boot (3.5 s).
:func:`temporary_server` starts the same server itself (Prefect's ``create_app`` under uvicorn,
the command Prefect's ``SubprocessASGIServer`` runs) as soon as Prefect's settings are known,
points this process's Prefect settings at it, and stops it when the run ends. The boot then
overlaps the run's imports, and this process never imports the server package.

A terminal's Ctrl-C sends SIGINT to the whole foreground process group, closing the terminal
SIGHUP. The server is spawned with both blocked (a blocked signal stays blocked in the child), so
it survives them and the flow can still record its end (see :mod:`whyflow.flows.running.interrupts`).

What the server prints goes to a log file of its own, not to the user's terminal: its services
log their own shutdown races as tracebacks, which say nothing about the run. The log is removed
when the server stops; a server that fails to start is reported with the log's last lines.
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["TemporaryServer", "temporary_server", "ServerStartError", "stop_all", "gone", "drain_prefect_services"]

_SPAWN_ATTEMPTS = 3
_RUNNING: list[TemporaryServer] = []


class ServerStartError(RuntimeError):
    """Prefect's temporary server did not answer its health check in time or exited at start."""


class TemporaryServer:
    """One Prefect API server process on a free local port."""

    def __init__(self, process: subprocess.Popen[bytes], port: int, log: Path) -> None:
        self.process = process
        self.port = port
        self.log = log
        _RUNNING.append(self)

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    def healthy(self) -> bool:
        import httpx

        try:
            return httpx.get(f"{self.api_url}/health", timeout=2.0).status_code == 200
        except httpx.HTTPError:
            return False

    def wait_healthy(self, timeout: float) -> None:
        """Block until the server answers ``/health``; :class:`ServerStartError` if it cannot."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ServerStartError(
                    f"Prefect's temporary server exited at start (code {self.process.returncode}){self._log_tail()}"
                )
            if self.healthy():
                return
            time.sleep(0.05)
        raise ServerStartError(
            f"Prefect's temporary server did not answer within {timeout:.0f} s "
            f"(PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS sets the limit){self._log_tail()}"
        )

    def _log_tail(self, lines: int = 3) -> str:
        try:
            tail = [s for s in self.log.read_text(encoding="utf-8", errors="replace").splitlines() if s.strip()]
        except OSError:
            return ""
        return f"; its last words: {' | '.join(tail[-lines:])[-600:]}" if tail else ""

    def stop(self) -> None:
        if self in _RUNNING:
            _RUNNING.remove(self)
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.unlink(missing_ok=True)


def gone() -> bool:
    """True when a temporary server this process started has exited on its own (a signal to the group)."""
    return any(server.process.poll() is not None for server in list(_RUNNING))


def drain_prefect_services() -> None:
    """Send what Prefect's event and log workers still hold, and stop them (at most 5 s each).

    They otherwise drain at interpreter exit, after the temporary server has stopped, and
    spend that time failing to reach it.
    """
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    for worker in (EventsWorker, APILogWorker):
        try:
            worker.drain_all(timeout=5)
        except Exception:  # noqa: BLE001 - nothing left to send is not an error at the end of a run
            continue


def stop_all() -> None:
    """Stop every temporary server of this process (the Ctrl-C watchdog's exit, interpreter exit)."""
    for server in list(_RUNNING):
        server.stop()


atexit.register(stop_all)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _spawn(port: int) -> TemporaryServer:
    """Prefect's server app under uvicorn, as ``SubprocessASGIServer`` runs it, SIGINT and SIGHUP blocked,
    printing into a log file of its own."""
    import prefect
    from prefect.settings import get_current_settings

    env = {
        **os.environ,
        "PREFECT_UI_ENABLED": "0",  # what Prefect's own temporary server sets
        "PREFECT__SERVER_EPHEMERAL": "1",
        "PREFECT__SERVER_FINAL": "1",
        **get_current_settings().to_environment_variables(exclude_unset=True),
    }
    command = [
        sys.executable,
        "-m",
        "uvicorn",
        "--app-dir",
        str(Path(prefect.__file__).resolve().parent.parent),
        "--factory",
        "prefect.server.api.server:create_app",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "error",
        "--lifespan",
        "on",
    ]
    shield = threading.current_thread() is threading.main_thread()
    # SIGHUP too: a closed terminal sends it to the whole group; whyflow stops the server itself.
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGHUP}) if shield else None
    fd, log = tempfile.mkstemp(prefix="whyflow-prefect-server-", suffix=".log")
    try:
        with os.fdopen(fd, "wb") as sink:
            process = subprocess.Popen(command, env=env, stdout=sink, stderr=subprocess.STDOUT)
        return TemporaryServer(process, port, Path(log))
    finally:
        if old is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)


@contextmanager
def _without_heartbeats() -> Iterator[None]:
    """Flow-run heartbeats off for runs against the temporary server.

    Heartbeats (every 180 s) let a lasting server notice a run whose process died; this server
    stops with the run, so they tell no one anything, and ending a flow waited up to a second
    for the heartbeat thread to wake and stop. A configured server keeps them.
    """
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        yield


def _needs_server() -> bool:
    """True when Prefect would start a temporary server: none configured, ephemeral mode on."""
    from prefect.settings import get_current_settings

    settings = get_current_settings()
    return not settings.api.url and bool(settings.server.ephemeral.enabled)


def _point_prefect_at(url: str | None) -> None:
    from prefect.context import refresh_global_settings_context

    if url is None:
        os.environ.pop("PREFECT_API_URL", None)
    else:
        os.environ["PREFECT_API_URL"] = url
    refresh_global_settings_context()


@contextmanager
def temporary_server(while_booting: Callable[[], None] | None = None) -> Iterator[TemporaryServer | None]:
    """Run the block with Prefect's API on a temporary server started here, then stop it.

    ``while_booting`` runs in this process while the server boots, before the health check
    waits for it (the run's heavy imports). Where a server is configured (``PREFECT_API_URL``,
    or ephemeral mode off) nothing is started, ``while_booting`` runs at once and the block
    gets ``None``.
    """
    if not _needs_server():
        if while_booting is not None:
            while_booting()
        yield None
        return
    from prefect.settings import PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS

    timeout = float(PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value())
    server = _spawn(_free_port())
    try:
        _point_prefect_at(server.api_url)
        if while_booting is not None:
            while_booting()
        for attempt in range(_SPAWN_ATTEMPTS):
            try:
                server.wait_healthy(timeout)
                break
            except ServerStartError:
                # The port was taken between choosing it and the server binding it: a new one.
                if server.process.poll() is None or attempt == _SPAWN_ATTEMPTS - 1:
                    raise
                server.stop()
                server = _spawn(_free_port())
                _point_prefect_at(server.api_url)
        with _without_heartbeats():
            yield server
    finally:
        drain_prefect_services()
        server.stop()
        _point_prefect_at(None)
