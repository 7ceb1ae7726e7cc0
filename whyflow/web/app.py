"""The chat page's FastAPI app: the page, uploads, the session list and one WebSocket per session.

``GET /`` the page; ``GET /static/*`` its script and style; ``GET /vendor/*.js`` the vendored
vega builds (``whyflow/ask/tools/static``); ``POST /api/sessions?filename=NAME`` the file as the
request body (CSV or Parquet, at most :data:`MAX_UPLOAD_BYTES`; type, size and parse are checked
and a failure is an ``error`` event as JSON); ``POST /api/sessions/source`` a session on a fresh snapshot of the server's
``--data`` source (:mod:`whyflow.web.sources`; a source that cannot be read is an ``error``
event, 400, and a server without one answers 404); ``GET /api/sessions`` (with the source as
shown, without its password) and ``GET /api/sessions/{id}`` the sessions and their messages; ``WS /ws/{id}`` the conversation:
the client sends ``message``, ``auto_analyze`` or ``stop``, the server the turn's events. One run at
a time per session; the run goes in a worker thread, as a Prefect flow run or on the plain runner
(the app's ``engine``, :mod:`whyflow.web.runs`).
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import threading
from importlib import resources
from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import FileResponse, JSONResponse, Response

from whyflow.core.errors import DataError
from whyflow.web.runs import Turn, run_turn
from whyflow.web.sources import ServeSource, open_source_session
from whyflow.web.store import ChatStore, Session

__all__ = ["create_app", "MAX_UPLOAD_BYTES", "ALLOWED_SUFFIXES"]

MAX_UPLOAD_BYTES = 200 * 1024 * 1024
"""The largest upload (200 MB), stated on the page."""
ALLOWED_SUFFIXES = (".csv", ".parquet", ".pq")
MAX_QUESTION_CHARS = 4000
_STATIC = Path(__file__).resolve().parent / "static"
_VENDOR = ("vega.min.js", "vega-lite.min.js", "vega-embed.min.js")
_CSP = (
    "default-src 'none'; script-src 'self' 'unsafe-eval'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
    "connect-src 'self'; font-src 'none'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"
)


class UploadRejected(Exception):
    """An upload that is not a readable CSV or Parquet file within the limit."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class _Hub:
    """The open sockets and the active run of each session (touched only on the event loop)."""

    def __init__(self) -> None:
        self.sockets: dict[str, set[WebSocket]] = {}
        self.turns: dict[str, Turn] = {}

    async def broadcast(self, session_id: str, event: dict[str, Any]) -> None:
        text = json.dumps(event, allow_nan=False)
        for ws in list(self.sockets.get(session_id, ())):
            try:
                await ws.send_text(text)
            except Exception:  # noqa: BLE001 - a closed socket leaves the set
                self.sockets.get(session_id, set()).discard(ws)


def create_app(data_dir: str | Path = "runs", engine: str | None = None, source: ServeSource | None = None) -> FastAPI:
    """The app over ``data_dir`` (``chat.sqlite3`` and ``sessions/<id>/`` with each upload or snapshot and its runs).

    ``engine`` runs each turn (``prefect`` or ``local``; None: :func:`whyflow.flows.ask_jobs.engine.resolve_engine`'s
    choice now). ``source``: the database or object sessions can be opened on instead of an upload.
    """
    if engine is None:
        from whyflow.flows.ask_jobs.engine import resolve_engine

        engine = resolve_engine(None)[0]
    root = Path(data_dir).resolve()
    store = ChatStore(root / "chat.sqlite3")
    hub = _Hub()
    app = FastAPI(title="whyflow chat", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.store, app.state.hub, app.state.data_dir, app.state.engine = store, hub, root, engine
    app.state.source = source

    @app.middleware("http")
    async def headers(request: Request, call_next: Any) -> Response:
        response: Response = await call_next(request)
        response.headers["Content-Security-Policy"] = _CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        return response

    @app.get("/")
    async def index() -> FileResponse:
        return FileResponse(_STATIC / "index.html", media_type="text/html")

    @app.get("/static/{name}")
    async def static(name: str) -> FileResponse:
        path = _STATIC / name
        if not re.fullmatch(r"[a-z0-9_-]+\.(js|css)", name) or not path.is_file():
            raise HTTPException(404)
        return FileResponse(path, media_type="text/javascript" if name.endswith(".js") else "text/css")

    @app.get("/vendor/{name}")
    async def vendor(name: str) -> Response:
        if name not in _VENDOR:
            raise HTTPException(404)
        text = resources.files("whyflow.ask.tools").joinpath("static", name).read_text(encoding="utf-8")
        text = re.sub(r"//# sourceMappingURL=\S+\s*$", "", text)
        return Response(text, media_type="text/javascript", headers={"Cache-Control": "max-age=86400"})

    @app.get("/api/sessions")
    async def sessions() -> dict[str, Any]:
        items = await asyncio.to_thread(store.sessions)
        return {
            "sessions": [s.as_dict() | {"running": s.id in hub.turns} for s in items],
            "max_upload_bytes": MAX_UPLOAD_BYTES,
            "source": source.shown if source is not None else None,
        }

    @app.get("/api/sessions/{session_id}")
    async def session(session_id: str) -> dict[str, Any]:
        found = await asyncio.to_thread(store.session, session_id)
        if found is None:
            raise HTTPException(404, "no such session")
        messages = await asyncio.to_thread(store.messages, session_id, False)
        return {
            "session": found.as_dict() | {"running": session_id in hub.turns},
            "messages": [m.as_dict() for m in messages],
        }

    @app.post("/api/sessions")
    async def upload(request: Request, filename: str = "") -> JSONResponse:
        try:
            created = await _receive_upload(request, filename, store, root)
        except UploadRejected as exc:
            return JSONResponse({"type": "error", "message": str(exc)}, status_code=exc.status)
        return JSONResponse({"session": created.as_dict()}, status_code=201)

    @app.post("/api/sessions/source")
    async def from_source() -> JSONResponse:
        if source is None:
            return JSONResponse(
                {"type": "error", "message": "this server has no --data source: upload a file"}, status_code=404
            )
        try:
            created = await asyncio.to_thread(open_source_session, store, root, source)
        except DataError as exc:  # the source's one line, its password already replaced
            return JSONResponse({"type": "error", "message": str(exc)}, status_code=400)
        return JSONResponse({"session": created.as_dict()}, status_code=201)

    @app.websocket("/ws/{session_id}")
    async def conversation(ws: WebSocket, session_id: str) -> None:
        found = await asyncio.to_thread(store.session, session_id)
        await ws.accept()
        if found is None:
            await ws.send_json({"type": "error", "message": "no such session"})
            await ws.close(code=4404)
            return
        hub.sockets.setdefault(session_id, set()).add(ws)
        if session_id in hub.turns:
            await ws.send_json({"type": "status", "message": hub.turns[session_id].last_status or "Working"})
        try:
            while True:
                try:
                    incoming = json.loads(await ws.receive_text())
                except ValueError:
                    await ws.send_json({"type": "error", "message": 'send JSON: {"type": "message", "text": ...}'})
                    continue
                await _handle(incoming if isinstance(incoming, dict) else {}, ws, found, store, hub, engine)
        except WebSocketDisconnect:
            pass
        finally:
            hub.sockets.get(session_id, set()).discard(ws)

    return app


async def _handle(
    incoming: dict[str, Any], ws: WebSocket, session: Session, store: ChatStore, hub: _Hub, engine: str
) -> None:
    kind = incoming.get("type")
    if kind == "stop":
        turn = hub.turns.get(session.id)
        if turn is not None:
            turn.stop.set()
            await hub.broadcast(session.id, {"type": "status", "message": "Stopping after the current step"})
        return
    if kind not in ("message", "auto_analyze"):
        await ws.send_json(
            {"type": "error", "message": f"unknown message type {kind!r}: use message, auto_analyze or stop"}
        )
        return
    text = str(incoming.get("text") or "").strip()
    if kind == "message" and not text:
        await ws.send_json({"type": "error", "message": "the question is empty"})
        return
    if len(text) > MAX_QUESTION_CHARS:
        await ws.send_json({"type": "error", "message": f"the question is longer than {MAX_QUESTION_CHARS} characters"})
        return
    if session.id in hub.turns:
        await ws.send_json(
            {"type": "error", "message": "a run is already going in this session: wait for it or stop it"}
        )
        return
    loop = asyncio.get_running_loop()

    def emit(event: dict[str, Any]) -> None:  # from the run's thread
        asyncio.run_coroutine_threadsafe(hub.broadcast(session.id, event), loop).result(timeout=30)

    turn = Turn(store, session.id, emit)

    def free() -> None:  # runs before done is sent, so the next message finds the session free
        loop.call_soon_threadsafe(hub.turns.pop, session.id, None)

    turn.on_done = free
    hub.turns[session.id] = turn
    if kind == "message":
        await asyncio.to_thread(store.add_message, session.id, "user", "text", text)

    threading.Thread(
        target=run_turn, args=(store, session, kind, text, turn, engine), name=f"chat-{session.id}", daemon=True
    ).start()


# ---- uploads -----------------------------------------------------------------------------------
async def _receive_upload(request: Request, filename: str, store: ChatStore, root: Path) -> Session:
    name = Path(filename or "").name.strip()
    suffix = Path(name).suffix.lower()
    if suffix not in ALLOWED_SUFFIXES:
        raise UploadRejected(
            f"'{name or 'the file'}' is not a CSV or Parquet file (.csv, .parquet): choose one of those", 415
        )
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > MAX_UPLOAD_BYTES:
        raise UploadRejected(f"the file is larger than the {MAX_UPLOAD_BYTES // 2**20} MB limit", 413)
    session_id = store.new_id()
    folder = root / "sessions" / session_id
    folder.mkdir(parents=True, exist_ok=True)
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", Path(name).stem).strip("._")[:80] or "data"
    target = folder / f"{safe}{suffix}"
    size = 0
    try:
        with target.open("wb") as out:
            async for chunk in request.stream():
                size += len(chunk)
                if size > MAX_UPLOAD_BYTES:
                    raise UploadRejected(f"the file is larger than the {MAX_UPLOAD_BYTES // 2**20} MB limit", 413)
                out.write(chunk)
        if size == 0:
            raise UploadRejected(f"'{name}' is empty")
        await asyncio.to_thread(_check_table, target, suffix, name)
        target.chmod(0o444)  # the user's file, as uploaded: read, never written
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return await asyncio.to_thread(store.create_session, session_id, Path(name).stem or name, str(target), name)


def _check_table(path: Path, suffix: str, name: str) -> None:
    """Raise :class:`UploadRejected` unless the file reads as a table with rows and columns."""
    head = path.open("rb").read(4096)
    if suffix in (".parquet", ".pq"):
        if not head.startswith(b"PAR1"):
            raise UploadRejected(f"'{name}' is not a Parquet file (it does not start with PAR1)")
    elif b"\x00" in head:
        raise UploadRejected(f"'{name}' does not look like a CSV text file (it holds binary data)")
    from whyflow.runtime.data import read_table

    try:
        frame = read_table(path)
    except Exception as exc:  # noqa: BLE001 - any parse failure is the user's to fix
        raise UploadRejected(f"'{name}' could not be read as a table: {exc}") from exc
    if frame.shape[1] == 0 or frame.shape[0] == 0:
        raise UploadRejected(f"'{name}' has no rows or no columns")
