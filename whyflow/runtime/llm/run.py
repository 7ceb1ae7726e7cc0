"""What one job's model calls share: the connection, retries, the token budget, the reply cache.

One :class:`LLMRun` per job holds the OpenAI-compatible connection (official ``openai`` package),
what the server was found to support, the token budget, the reply cache in the job folder (so a
resumed job never asks twice) and the call log; each step's :class:`~whyflow.runtime.llm.client.LLMClient`
asks through it. Timeouts, 429 and 5xx are retried with backoff; after repeated failures the
run carries on without the model.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from whyflow.runtime.llm.config import LLMConfig

__all__ = ["LLMRun", "Reply", "Unsupported", "estimate_tokens"]

log = logging.getLogger("whyflow.llm")


@dataclass(frozen=True)
class Reply:
    """One completion as the client keeps it (also the cache's record)."""

    content: str
    tool_calls: tuple[tuple[str, str], ...] = ()
    usage: dict[str, int] = field(default_factory=dict)
    cached: bool = False


class Unsupported(Exception):
    """The server refused a request feature (response_format or tools) with a 4xx."""


class LLMRun:
    """What one run shares across steps and threads: connection, budget, cache, capabilities."""

    def __init__(self, config: LLMConfig, job_dir: Path | None, *, backoff_s: float = 0.5) -> None:
        from openai import OpenAI

        self.config = config
        self.backoff_s = backoff_s
        self.dir = (Path(job_dir) / "llm") if job_dir is not None else None
        self.openai = OpenAI(base_url=config.endpoint, api_key=config.api_key, timeout=config.timeout_s, max_retries=0)
        self.lock = threading.Lock()
        self.model: str | None = config.model
        self.tokens_used = 0
        self.failures_in_a_row = 0
        self.unavailable: str | None = None
        self.schema_ok = True
        self.tools_ok = True

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as its configuration (a Dask worker gets its own connection; the file cache is shared)."""
        return (_rebuild_run, (self.config, self.dir.parent if self.dir else None, self.backoff_s, self.model))

    # ---- model, budget, cache -------------------------------------------------------------
    def resolve_model(self) -> str | None:
        """The configured model, or the first one the endpoint lists (asked once)."""
        with self.lock:
            if self.model or self.unavailable:
                return self.model
        try:
            models = [m.id for m in self.openai.models.list().data]
        except Exception as exc:  # noqa: BLE001 - any failure means: no model, deterministic path
            with self.lock:
                self.unavailable = f"cannot list models at {self.config.endpoint}: {type(exc).__name__}: {exc}"
            return None
        with self.lock:
            if not models:
                self.unavailable = f"the endpoint {self.config.endpoint} lists no model"
            self.model = self.model or (models[0] if models else None)
            return self.model

    def budget_left(self) -> int:
        with self.lock:
            return self.config.max_tokens_per_run - self.tokens_used

    def charge(self, tokens: int) -> None:
        with self.lock:
            self.tokens_used += tokens

    def cache_path(self, key: str) -> Path | None:
        if not self.config.cache or self.dir is None:
            return None
        return self.dir / "cache" / f"{key}.json"

    def cache_get(self, key: str) -> Reply | None:
        path = self.cache_path(key)
        if path is None or not path.exists():
            return None
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            calls = tuple((str(n), str(a)) for n, a in raw.get("tool_calls", []))
            return Reply(str(raw["content"]), calls, dict(raw.get("usage", {})), cached=True)
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def cache_put(self, key: str, reply: Reply) -> None:
        path = self.cache_path(key)
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{threading.get_ident()}")
        record = {"content": reply.content, "tool_calls": list(reply.tool_calls), "usage": reply.usage}
        tmp.write_text(json.dumps(record), encoding="utf-8")
        tmp.replace(path)

    def log_call(self, record: dict[str, Any]) -> None:
        """Append one call (full prompt and reply) to ``llm/calls.jsonl`` and the running usage."""
        if self.dir is None:
            return
        with self.lock:
            self.dir.mkdir(parents=True, exist_ok=True)
            with (self.dir / "calls.jsonl").open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(record, default=str) + "\n")
            usage = {**self.config.public(), "model": self.model, "tokens_used": self.tokens_used}
            (self.dir / "usage.json").write_text(json.dumps(usage, indent=1), encoding="utf-8")

    # ---- one HTTP exchange ----------------------------------------------------------------
    def complete(self, body: dict[str, Any]) -> tuple[Reply | None, str]:
        """Send one chat completion with retries; (reply, "") or (None, why it failed)."""
        import openai

        transient = (
            openai.APITimeoutError,
            openai.APIConnectionError,
            openai.RateLimitError,
            openai.InternalServerError,
        )
        last = ""
        for attempt in range(self.config.max_retries + 1):
            try:
                resp = self.openai.chat.completions.create(**body)
            except transient as exc:
                last = f"{type(exc).__name__}: {exc}"
                if attempt < self.config.max_retries:
                    time.sleep(self._delay(attempt, exc))
                continue
            except openai.BadRequestError as exc:
                about_feature = any(w in str(exc).lower() for w in ("response_format", "schema", "tool", "grammar"))
                if about_feature and ("response_format" in body or "tools" in body):
                    raise Unsupported(str(exc)) from exc
                return self._failed(f"request refused: {exc}")
            except openai.APIStatusError as exc:
                return self._failed(f"HTTP {exc.status_code}: {exc}")
            except Exception as exc:  # noqa: BLE001 - a malformed response body is a failed call
                return self._failed(f"unreadable response: {type(exc).__name__}: {exc}")
            with self.lock:
                self.failures_in_a_row = 0
            return _reply_of(resp), ""
        return self._failed(f"gave up after {self.config.max_retries + 1} attempt(s): {last}")

    def _delay(self, attempt: int, exc: Exception) -> float:
        retry_after = None
        response = getattr(exc, "response", None)
        if response is not None:
            try:
                retry_after = float(response.headers.get("retry-after", ""))
            except (TypeError, ValueError):
                retry_after = None
        base = self.backoff_s * (2**attempt) * (1 + 0.25 * random.random())
        return min(10.0, retry_after if retry_after is not None else base)

    def _failed(self, why: str) -> tuple[None, str]:
        with self.lock:
            self.failures_in_a_row += 1
            if self.failures_in_a_row >= 3 and not self.unavailable:
                self.unavailable = f"3 failed calls in a row, the last: {why}"
        return None, why


def _rebuild_run(config: LLMConfig, job_dir: Path | None, backoff_s: float, model: str | None) -> LLMRun:
    run = LLMRun(config, job_dir, backoff_s=backoff_s)
    run.model = model
    return run


def _reply_of(resp: Any) -> Reply:
    choice = resp.choices[0] if getattr(resp, "choices", None) else None
    message = getattr(choice, "message", None)
    content = str(getattr(message, "content", None) or "")
    calls: list[tuple[str, str]] = []
    for tc in getattr(message, "tool_calls", None) or []:
        fn = getattr(tc, "function", None)
        if fn is not None and getattr(fn, "name", None):
            calls.append((str(fn.name), str(fn.arguments or "{}")))
    u = getattr(resp, "usage", None)
    usage = (
        {k: int(getattr(u, k, 0) or 0) for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
        if u is not None
        else {}
    )
    return Reply(content, tuple(calls), usage)


def estimate_tokens(body: dict[str, Any], reply: Reply) -> int:
    if reply.usage.get("total_tokens"):
        return int(reply.usage["total_tokens"])
    return (len(json.dumps(body.get("messages", []))) + len(reply.content)) // 4 + 1
