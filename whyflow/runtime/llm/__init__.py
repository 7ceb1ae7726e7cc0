"""The LLM layer: one optional, validated client for every agent (``ctx.llm``).

API (what an agent sees)::

    ctx.llm is None                      # the model is off: take the deterministic path
    ctx.llm.structured(messages, Model, purpose="roles", check=fn) -> Model | None
        # JSON validated as the pydantic Model (json_schema response_format when the server
        # takes it, else JSON parsed from the text, fenced or not), then by check(value) ->
        # list of problems; one re-ask with the problems, then None.
    ctx.llm.tool_call(messages, {"name": ArgsModel, ...}, purpose="next_tool", check=fn)
        -> ToolCall(name, arguments: ArgsModel, native) | str | None
        # native tool_calls, <tool_call>{...}</tool_call> tags or call-shaped JSON in the text;
        # str when the model answered in prose; None on failure.
    ctx.llm.text(messages, purpose="summary", check=fn) -> str | None
    ctx.llm.reject(purpose, reason, answer)   # the caller rejected a parsed answer: logged
    ctx.llm.annotate(result, changed=[...])   # into AgentResult: outputs["llm_use"] (used?,
        # what it changed, rejections), outputs["llm_calls"] (full prompts and replies,
        # hence traces.jsonl) and token_usage. Call it before returning the result.

``messages`` are OpenAI chat messages (``[{"role": "user", "content": ...}]``). Wrap anything
from the user's files with :func:`data_block` so the model reads it as data, never as
instructions. Validation helpers for answers live in :mod:`whyflow.runtime.llm.validate`
(columns, roles, acyclic graphs against declared knowledge, known methods, numbers in prose).

Every call returns None rather than raising: no server, a timeout after retries, 429/5xx after
backoff, junk, an empty reply, a spent token budget — the reason is recorded and the caller
falls back. Replies are cached in ``<job>/llm/cache`` keyed by model and prompt, so ``whyflow
resume`` and a re-run of the job never ask twice; ``<job>/llm/calls.jsonl`` logs every call.
The model never produces or edits an estimate.

Configuration: the recipe's ``settings.llm`` block, ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``,
``WHYFLOW_LLM_*`` and ``WHYFLOW_LLM=on|off`` (``whyflow run --llm on|off``); see
:mod:`whyflow.runtime.llm.config`. :func:`client_for` builds a step's client (the runner calls it).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from whyflow.runtime.llm.config import LLMConfig, resolve_config

__all__ = ["LLMConfig", "resolve_config", "client_for", "data_block", "reset_runs"]

_RUNS: dict[tuple[str, LLMConfig], Any] = {}
_LOCK = threading.Lock()


def client_for(settings: Any, job_dir: str | Path | None, step: str, *, backoff_s: float = 0.5) -> Any:
    """The step's :class:`~whyflow.runtime.llm.client.LLMClient`, or None when the model is off.

    One :class:`~whyflow.runtime.llm.run.LLMRun` (connection, token budget, cache) is shared
    by every step of a job folder in this process. ``settings`` is the recipe's ``llm`` block
    (a model or a mapping); the environment is read here.
    """
    config = settings if isinstance(settings, LLMConfig) else resolve_config(settings)
    if not config.enabled:
        return None
    from whyflow.runtime.llm.client import LLMClient
    from whyflow.runtime.llm.run import LLMRun

    folder = Path(job_dir).resolve() if job_dir is not None else None
    key = (str(folder), config)
    with _LOCK:
        run = _RUNS.get(key)
        if run is None:
            run = _RUNS[key] = LLMRun(config, folder, backoff_s=backoff_s)
    return LLMClient(run, step)


def reset_runs() -> None:
    """Forget every shared run (budgets, unavailable endpoints): for tests and long-lived workers."""
    with _LOCK:
        _RUNS.clear()


def data_block(label: str, text: Any) -> str:
    """Untrusted text from the user's files, fenced as data (tags inside it are neutralised)."""
    body = str(text).replace("<", "‹").replace(">", "›")
    return f'<data name="{label}">\n{body}\n</data>'
