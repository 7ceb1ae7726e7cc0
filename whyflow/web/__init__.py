"""`whyflow serve`: a chat page for asking the data, each question a run of one of whyflow's ask recipes.

:func:`create_app` builds the FastAPI app (:mod:`whyflow.web.app`), :func:`serve` runs it with
uvicorn. Sessions and messages persist in ``<data-dir>/chat.sqlite3`` (:mod:`whyflow.web.store`);
each question or first analysis is a run of an ask recipe (:mod:`whyflow.web.runs`): a Prefect flow
run when a Prefect server is configured or ``--engine prefect`` asks for it, else the plain
runner in a worker thread (:mod:`whyflow.flows.ask_jobs.engine`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from whyflow.web.sources import ServeSource

__all__ = ["create_app", "serve"]


@contextmanager
def _no_server() -> Iterator[None]:
    yield None


def create_app(data_dir: str | Path = "runs", engine: str | None = None, source: ServeSource | None = None) -> Any:
    """The chat app over ``data_dir`` (see :func:`whyflow.web.app.create_app`)."""
    from whyflow.web.app import create_app as _create

    return _create(data_dir, engine, source)


def serve(
    host: str = "127.0.0.1",
    port: int = 8000,
    data_dir: str | Path = "runs",
    log_level: str = "warning",
    engine: str | None = None,
    why: str = "",
    source: ServeSource | None = None,
) -> int:
    """Serve the chat page until a signal stops it; 130 then (SIGINT, SIGTERM or SIGHUP).

    ``source`` (a database table or query, or an object): a first session is opened on a
    snapshot of it before the server listens, so a source that cannot be read is one line
    (:class:`~whyflow.core.errors.DataError`, exit 2) and no server.

    uvicorn takes the signal and shuts down (open connections get 5 s), then raises it again
    here: every run still going is stopped and saved CANCELLED (:func:`whyflow.web.runs.stop_runs`)
    while Prefect's temporary server still records their end. A second signal, or runs that
    do not end within :data:`~whyflow.flows.running.interrupts.GRACE_SECONDS`, end the process at once with
    their jobs saved cancelled.
    """
    import uvicorn

    from whyflow.flows.ask_jobs.engine import engine_note, prewarm_sandbox, resolve_engine
    from whyflow.flows.running.interrupts import GRACE_SECONDS, interrupt_guard, received
    from whyflow.web.runs import cancel_runs, stop_runs

    if engine is None:
        engine, why = resolve_engine(None)
    app = create_app(data_dir, engine, source)
    if source is not None:
        from whyflow.web.sources import open_source_session

        first = open_source_session(app.state.store, app.state.data_dir, source)
        print(f"whyflow: session {first.id} on {source.shown}", flush=True)
    server: Any = _no_server
    if engine == "prefect":
        from whyflow.flows.running.progress import quiet_prefect_console
        from whyflow.flows.running.temp_server import temporary_server

        quiet_prefect_console()
        server = temporary_server
    prewarm_sandbox()  # the first question then finds the sandbox's interpreter ready
    where = f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"
    print(f"whyflow: chat page at {where} (data in {Path(data_dir).resolve()}); Ctrl-C stops it", flush=True)
    print(f"whyflow: {engine_note(engine, why)}", flush=True)
    if host not in ("127.0.0.1", "localhost", "::1"):
        print(
            f"whyflow: warning: listening on {host}: anyone who can reach it can upload files and run code in the sandbox",
            flush=True,
        )
    with interrupt_guard(cancel_runs):
        try:
            with server():  # Prefect's temporary API server now (prefect engine), not at the first question
                try:
                    uvicorn.run(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=5)
                except KeyboardInterrupt:  # the signal uvicorn stopped on, raised again by it
                    pass
                if received() is not None:
                    stop_runs(GRACE_SECONDS - 2)
        except KeyboardInterrupt:  # a signal while the server started or its runs stopped
            cancel_runs()
    if received() is None:
        return 0
    print("whyflow: stopped", file=sys.stderr)
    return 130
