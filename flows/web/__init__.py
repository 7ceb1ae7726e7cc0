"""`whyflow serve`: a chat page for asking the data (seed 004's events on whyflow's ask recipes).

:func:`create_app` builds the FastAPI app (:mod:`flows.web.app`), :func:`serve` runs it with
uvicorn. Sessions and messages persist in ``<data-dir>/chat.sqlite3`` (:mod:`flows.web.store`);
each question or first analysis is a Prefect flow run of an ask recipe (:mod:`flows.web.runs`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["create_app", "serve"]


def create_app(data_dir: str | Path = "runs") -> Any:
    """The chat app over ``data_dir`` (see :func:`flows.web.app.create_app`)."""
    from flows.web.app import create_app as _create

    return _create(data_dir)


def serve(host: str = "127.0.0.1", port: int = 8000, data_dir: str | Path = "runs", log_level: str = "warning") -> int:
    """Serve the chat page until interrupted (Ctrl-C); 0 on a clean stop."""
    import uvicorn

    from flows.progress import quiet_prefect_console
    from flows.temp_server import temporary_server

    app = create_app(data_dir)
    quiet_prefect_console()
    where = f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"
    print(f"whyflow: chat page at {where} (data in {Path(data_dir).resolve()}); Ctrl-C stops it", flush=True)
    if host not in ("127.0.0.1", "localhost", "::1"):
        print(f"whyflow: warning: listening on {host}: anyone who can reach it can upload files and run code in the sandbox",
              flush=True)
    with temporary_server():  # Prefect's temporary API server now, not at the first question
        uvicorn.run(app, host=host, port=port, log_level=log_level)
    return 0
