"""``whyflow llm check``: can this run's model be reached, and what does it support?

One screen: the endpoint and where its setting came from, the model (the configured one or
the first the endpoint lists), a round-trip latency, whether ``response_format`` JSON-schema
output comes back as valid JSON of the schema, and whether the server returns native
``tool_calls`` (if not, whyflow reads calls the model writes as text). Exit 0 when the model
answered, 1 when it did not.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from typing import Any

__all__ = ["cmd_llm", "check"]

_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}, "confidence": {"type": "number"}},
    "required": ["answer", "confidence"],
}
_TOOL = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two integers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
}


def _timed(fn: Any) -> tuple[Any, float, str]:
    started = time.perf_counter()
    try:
        return fn(), time.perf_counter() - started, ""
    except Exception as exc:  # noqa: BLE001 - every failure is a line of the report
        return None, time.perf_counter() - started, f"{type(exc).__name__}: {str(exc)[:160]}"


def check(settings: Any = None, base_url: str | None = None, model: str | None = None) -> tuple[list[str], bool]:
    """Probe the endpoint; return the report's lines and whether the model answered."""
    from whyflow.runtime.llm.config import resolve_config
    from whyflow.runtime.llm.run import LLMRun

    cfg = resolve_config(settings)
    flags = tuple(f for f, v in (("--base-url", base_url), ("--model", model)) if v)
    cfg = replace(
        cfg, max_retries=0, base_url=base_url or cfg.base_url, model=model or cfg.model, sources=cfg.sources + flags
    )
    run = LLMRun(cfg, None)
    lines = [f"endpoint     {cfg.endpoint}   (from: {', '.join(cfg.sources) or 'defaults'})"]
    lines.append(f"api key      {'set' if cfg.api_key != 'not-needed' else 'not set'} (${cfg.api_key_env})")
    listed, secs, err = _timed(lambda: [m.id for m in run.openai.models.list().data])
    if err:
        lines.append(f"models       unreachable after {secs:.2f} s: {err}")
        return lines, False
    chosen = cfg.model or (listed[0] if listed else None)
    lines.append(
        f"models       {len(listed)} listed in {secs:.2f} s; using {chosen!r}"
        + ("" if cfg.model else " (first listed)")
    )
    if chosen is None:
        return lines, False
    ask: Any = run.openai.chat.completions.create
    msg = [{"role": "user", "content": "Reply with the single word OK."}]
    resp, secs, err = _timed(lambda: ask(model=chosen, messages=msg, max_tokens=8, temperature=0))
    if err:
        lines.append(f"round trip   failed after {secs:.2f} s: {err}")
        return lines, False
    text = (resp.choices[0].message.content or "").strip()
    usage = getattr(resp, "usage", None)
    tokens = f", {usage.total_tokens} tokens" if usage is not None and usage.total_tokens else ""
    lines.append(f"round trip   {secs * 1000:.0f} ms{tokens}; replied {text[:40]!r}")
    lines.append("json schema  " + _json_schema(ask, chosen))
    lines.append("tool calls   " + _tools(ask, chosen))
    return lines, True


def _json_schema(ask: Any, model: str) -> str:
    fmt = {"type": "json_schema", "json_schema": {"name": "verdict", "schema": _SCHEMA, "strict": True}}
    msg = [{"role": "user", "content": "Is the sky blue? Answer as JSON with answer and confidence."}]
    resp, secs, err = _timed(lambda: ask(model=model, messages=msg, max_tokens=60, temperature=0, response_format=fmt))
    if err:
        return f"no: the server refused response_format ({err}); whyflow parses JSON from the text instead"
    content = resp.choices[0].message.content or ""
    try:
        data = json.loads(content)
        ok = (
            isinstance(data, dict)
            and data.get("answer") in ("yes", "no")
            and isinstance(data.get("confidence"), (int, float))
        )
    except json.JSONDecodeError:
        ok = False
    if ok:
        return f"yes: valid JSON of the schema in {secs * 1000:.0f} ms"
    return f"partly: accepted but the reply did not match the schema ({content[:60]!r}); whyflow validates and re-asks"


def _tools(ask: Any, model: str) -> str:
    from whyflow.runtime.llm.parse import tool_calls_in_text

    msg = [{"role": "user", "content": "Use the add tool to add 2 and 3."}]
    resp, secs, err = _timed(lambda: ask(model=model, messages=msg, max_tokens=80, temperature=0, tools=[_TOOL]))
    if err:
        return f"no: the server refused tools ({err}); whyflow asks for calls written as JSON"
    message = resp.choices[0].message
    if message.tool_calls:
        fn = message.tool_calls[0].function
        return f"yes: native tool_calls ({fn.name} {fn.arguments}) in {secs * 1000:.0f} ms"
    if tool_calls_in_text(message.content):
        return "no native tool_calls; the model wrote the call as text, which whyflow reads"
    return f"no: no tool call in the reply ({(message.content or '')[:50]!r}); agents fall back to their rules"


def cmd_llm(args: argparse.Namespace) -> int:
    """Print the check's screen; 0 when the model answered, 1 when it did not."""
    settings = None
    if args.recipe:
        from whyflow.flows.recipes.recipe import load_recipe

        settings = load_recipe(args.recipe)[0].settings.llm
    try:
        lines, ok = check(settings, args.base_url, args.model)
    except ValueError as exc:  # an unreadable WHYFLOW_LLM_* value
        print(f"whyflow: error: {exc}")
        return 2
    print("whyflow llm check")
    print("\n".join(f"  {line}" for line in lines))
    print(
        "  verdict      "
        + ("the model answers; agents validate every answer" if ok else "no model: agents use their rules")
    )
    return 0 if ok else 1
