"""Argument normalisation for tool calls from any model.

Models send the same arguments in many shapes: the call's arguments nested once more
(``{"arguments": {...}}``, a JSON string), the code under another name (``python``, ``source``,
``script``), the code as a list of lines or inside a Markdown fence, a timeout as ``"30s"``.
:func:`normalise_arguments` turns each into the one shape the tool's argument model takes; the
models below apply it before validating, so every caller (the ReAct loop, a test, the chat page)
gets the same rescue.
"""

from __future__ import annotations

import json
import re
from typing import Any

from whyflow.runtime.llm.parse import strip_code_fences

__all__ = ["CODE_ALIASES", "normalise_arguments", "coerce_seconds"]

CODE_ALIASES = ("code", "python", "python_code", "source", "script", "code_str", "program", "snippet", "cell")
_NESTED = ("arguments", "args", "parameters", "params", "input", "kwargs")
_TIMEOUTS = ("timeout_s", "timeout", "timeout_seconds", "time_limit", "seconds")
_QUERY_ALIASES = ("query", "sql", "statement", "sql_query")
_SECONDS = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|sec|secs|seconds|m|min|minutes)?\s*$", re.I)


def coerce_seconds(value: Any) -> Any:
    """``30``, ``"30"``, ``"30s"``, ``"500ms"``, ``"2 min"`` as seconds (a float); anything else unchanged."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        match = _SECONDS.match(value)
        if match:
            number, unit = float(match.group(1)), (match.group(2) or "s").lower()
            return number / 1000 if unit == "ms" else number * 60 if unit.startswith("m") else number
    return value


def _unnest(raw: Any) -> Any:
    for _ in range(3):
        if isinstance(raw, str):
            try:
                raw = json.loads(raw)
            except json.JSONDecodeError:
                return raw
        if isinstance(raw, dict) and len(raw) == 1:
            key = next(iter(raw))
            if key in _NESTED and isinstance(raw[key], dict | str):
                raw = raw[key]
                continue
        break
    return raw


def normalise_arguments(raw: Any, *, code: bool = False, query: bool = False) -> Any:
    """The arguments in the shape the tool takes (a dict), or ``raw`` unchanged when it is no dict.

    ``code``: fold the aliases of ``code`` into it, join a list of lines, strip fences, coerce
    ``timeout_s``. ``query``: fold ``sql``/``statement`` into ``query``.
    """
    raw = _unnest(raw)
    if not isinstance(raw, dict):
        return raw
    args = dict(raw)
    if code:
        for alias in CODE_ALIASES[1:]:
            if alias in args and not args.get("code"):
                args["code"] = args.pop(alias)
            elif alias in args:
                args.pop(alias)
        value = args.get("code")
        if isinstance(value, list):
            value = "\n".join(str(v) for v in value)
        if isinstance(value, str):
            args["code"] = strip_code_fences(value)
        elif value is None and "code" in args:
            args["code"] = ""
    if query:
        for alias in _QUERY_ALIASES[1:]:
            if alias in args and not args.get("query"):
                args["query"] = args.pop(alias)
    for alias in _TIMEOUTS[1:]:
        if alias in args and "timeout_s" not in args:
            args["timeout_s"] = args.pop(alias)
    if "timeout_s" in args:
        args["timeout_s"] = coerce_seconds(args["timeout_s"])
    return args
