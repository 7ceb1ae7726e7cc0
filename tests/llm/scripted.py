"""A scripted OpenAI-compatible HTTP server on loopback: it stands in for the remote model.

It speaks the two endpoints the client uses (``GET /v1/models``, ``POST
/v1/chat/completions``) and replays recorded replies: a normal message, a tool call, an HTTP
error with headers, a delay (for timeouts) or a raw, malformed body. Replies are taken from
``routes`` (the first key found in the request's messages) or from a plain queue; the last
reply of a route repeats. Every request body is kept in ``requests``.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Scripted", "ScriptedLLM"]


@dataclass
class Scripted:
    """One recorded reply."""

    content: str | None = ""
    tool_calls: list[tuple[str, str]] | None = None
    status: int = 200
    delay: float = 0.0
    raw: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    usage: tuple[int, int] = (20, 10)

    def body(self, model: str) -> bytes:
        if self.raw is not None:
            return self.raw.encode()
        if self.status != 200:
            return json.dumps({"error": {"message": self.content or "scripted error", "type": "error"}}).encode()
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": a}}
                for i, (n, a) in enumerate(self.tool_calls)
            ]
        p, c = self.usage
        return json.dumps(
            {
                "id": "chatcmpl-scripted",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c},
            }
        ).encode()


class ScriptedLLM:
    """The server: ``with ScriptedLLM(replies) as srv: ... srv.url ...``."""

    def __init__(
        self,
        replies: list[Scripted] | None = None,
        routes: dict[str, list[Scripted]] | None = None,
        default: Scripted | None = None,
        models: tuple[str, ...] = ("scripted-model",),
        refuse: tuple[str, ...] = (),
    ) -> None:
        self.replies = list(replies or [])
        self.routes = {k: list(v) for k, v in (routes or {}).items()}
        self.default = default or Scripted(content="")
        self.models = models
        self.refuse = refuse
        """Request keys answered with HTTP 400 (``response_format``, ``tools``), as servers that lack them do."""
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def chats(self) -> list[dict[str, Any]]:
        """The chat-completion requests received, in order."""
        return [r for r in self.requests if "messages" in r]

    def _next(self, body: dict[str, Any]) -> Scripted:
        with self._lock:
            self.requests.append(body)
            for key in self.refuse:
                if key in body:
                    return Scripted(status=400, content=f"{key} is not supported")
            text = json.dumps(body.get("messages", []))
            for key, queue in self.routes.items():
                if key in text and queue:
                    return queue.pop(0) if len(queue) > 1 else queue[0]
            return self.replies.pop(0) if self.replies else self.default

    def __enter__(self) -> ScriptedLLM:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return

            def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a scripted timeout)

            def do_GET(self) -> None:
                outer.requests.append({"path": self.path})
                data = {
                    "object": "list",
                    "data": [{"id": m, "object": "model", "owned_by": "test"} for m in outer.models],
                }
                self._send(200, json.dumps(data).encode(), {})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                reply = outer._next(body)
                if reply.delay:
                    time.sleep(reply.delay)
                self._send(reply.status, reply.body(str(body.get("model"))), reply.headers)

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        server.block_on_close = False
        self._server = server
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()
