"""Reading what a model wrote: JSON in text (fenced or not), tool calls written as text, code in a fence.

Small local models ignore ``response_format`` and ``tools`` more often than not: they write
``{"role": ...}`` after a sentence, inside a Markdown fence, or a call as
``<tool_call>{"name": ..., "arguments": ...}</tool_call>``. These functions find the JSON;
validating it against the expected model is the client's job. Code a model wrote comes the same
way, fenced or bare: :func:`strip_code_fences` takes it out of its fence.

Markdown fences are read with two patterns because the two readings differ: JSON is tried from
every fenced block (untagged, ``json`` or ``tool_call``), which may start on the fence's own line;
code is the first block (untagged, ``python``, ``py`` or ``sql``), which starts on the line after
the fence (code on the fence's own line is left as written).
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["extract_json", "json_candidates", "strip_code_fences", "tool_calls_in_text"]

_JSON_FENCE = re.compile(r"```(?:json|JSON|tool_call)?\s*\n?(.*?)```", re.DOTALL)
_CODE_FENCE = re.compile(r"```(?:python|py|sql)?\s*\n(.*?)```", re.DOTALL)
_TAG = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)


def _balanced(text: str, start: int) -> str | None:
    """The balanced ``{...}`` or ``[...]`` starting at ``start`` (strings respected), or None."""
    opening = text[start]
    closing = "}" if opening == "{" else "]"
    depth, in_str, escaped = 0, False, False
    for i in range(start, len(text)):
        ch = text[i]
        if in_str:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"':
            in_str = True
        elif ch == opening:
            depth += 1
        elif ch == closing:
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return None


def json_candidates(text: str) -> list[Any]:
    """Every JSON value found in ``text``: the whole text, fenced blocks, then balanced spans."""
    out: list[Any] = []
    chunks = [text.strip(), *(m.group(1).strip() for m in _JSON_FENCE.finditer(text))]
    for chunk in chunks:
        try:
            out.append(json.loads(chunk))
        except (json.JSONDecodeError, ValueError):
            continue
    i = 0
    while i < len(text) and len(out) < 20:
        if text[i] in "{[":
            span = _balanced(text, i)
            if span is not None:
                try:
                    out.append(json.loads(span))
                    i += len(span)
                    continue
                except (json.JSONDecodeError, ValueError):
                    pass
        i += 1
    return out


def extract_json(text: str | None) -> Any:
    """The first JSON object (preferred) or array in ``text``; None when there is none."""
    if not text:
        return None
    found = json_candidates(text)
    return next((v for v in found if isinstance(v, dict)), found[0] if found else None)


def strip_code_fences(text: str) -> str:
    """The code of the first Markdown code fence in ``text``; ``text`` itself when it holds none."""
    match = _CODE_FENCE.search(text)
    return match.group(1) if match else text


def _as_call(value: Any) -> tuple[str, Any] | None:
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict):  # {"type": "function", "function": {...}}
        value = value["function"]
    name = value.get("name") or value.get("tool") or value.get("tool_name")
    if not isinstance(name, str):
        return None
    args = value.get("arguments", value.get("args", value.get("parameters", value.get("input", {}))))
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError:
            return None
    return name, args if args is not None else {}


def tool_calls_in_text(text: str | None) -> list[tuple[str, Any]]:
    """Tool calls a model wrote as text: ``<tool_call>`` tags first, then any call-shaped JSON."""
    if not text:
        return []
    calls: list[tuple[str, Any]] = []
    for m in _TAG.finditer(text):
        for value in json_candidates(m.group(1)):
            call = _as_call(value)
            if call:
                calls.append(call)
                break
    if calls:
        return calls
    for value in json_candidates(text):
        items = value if isinstance(value, list) else [value]
        for item in items:
            call = _as_call(item)
            if call:
                calls.append(call)
        if calls:
            break
    return calls
