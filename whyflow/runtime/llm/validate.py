"""Checks every model answer passes before an agent uses it.

Each check returns a list of problems (empty = accepted), in words the trace can show and the
model can read when it is asked again. The model chooses among options the data and the rules
allow, and writes prose whose numbers all come from the state: :func:`check_numbers` drops
every sentence with a number that is not in the state.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, get_args

__all__ = [
    "ROLES",
    "unknown_columns",
    "check_roles",
    "check_edges",
    "numbers_in",
    "numbers_of",
    "number_matches",
    "check_numbers",
    "numbers_problems",
]

Role = Literal[
    "confounder",
    "mediator",
    "collider",
    "instrument",
    "effect_modifier",
    "pre_treatment",
    "post_treatment",
    "id",
    "time",
    "other",
]
"""A column's causal role, as a model may name it."""
ROLES = frozenset(get_args(Role))
"""Roles a model may suggest for a column (treatment and outcome are the user's to name)."""


def unknown_columns(names: Iterable[str], columns: Iterable[str]) -> list[str]:
    """One problem per name that is not a column of the data."""
    known = set(columns)
    return [f"'{n}' is not a column of the data" for n in dict.fromkeys(names) if n not in known]


def check_roles(
    roles: Mapping[str, str], columns: Iterable[str], *, allowed: Iterable[str] = ROLES, fixed: Mapping[str, str] = {}
) -> list[str]:
    """Columns exist, roles come from ``allowed``, and no column the user described is re-labelled."""
    allowed = set(allowed)
    problems = unknown_columns(roles, columns)
    for col, role in roles.items():
        if role not in allowed:
            problems.append(f"role '{role}' for '{col}' is not one of {', '.join(sorted(allowed))}")
        elif col in fixed and fixed[col] != role:
            problems.append(f"'{col}' already has the role '{fixed[col]}' from the user or the data")
    return problems


def _cycle(nodes: Iterable[str], edges: Iterable[tuple[str, str]]) -> list[str] | None:
    """One directed cycle as a node list, or None (iterative depth-first search)."""
    graph: dict[str, list[str]] = {n: [] for n in nodes}
    for a, b in edges:
        graph.setdefault(a, []).append(b)
        graph.setdefault(b, [])
    state: dict[str, int] = {}
    for root in graph:
        if state.get(root):
            continue
        stack: list[tuple[str, int]] = [(root, 0)]
        path: list[str] = []
        while stack:
            node, i = stack.pop()
            if i == 0:
                state[node] = 1
                path.append(node)
            children = graph[node]
            if i < len(children):
                stack.append((node, i + 1))
                child = children[i]
                if state.get(child) == 1:
                    return path[path.index(child) :] + [child]
                if not state.get(child):
                    stack.append((child, 0))
            else:
                state[node] = 2
                path.pop()
    return None


def check_edges(
    edges: Iterable[tuple[str, str]],
    columns: Iterable[str],
    *,
    fixed: Iterable[tuple[str, str]] = (),
    forbid: Callable[[str, str], str | None] | None = None,
) -> list[str]:
    """Proposed directed edges: columns exist, none forbidden, acyclic together with ``fixed``."""
    edges = list(edges)
    columns = list(columns)
    problems = unknown_columns([n for e in edges for n in e], columns)
    for a, b in edges:
        if a == b:
            problems.append(f"{a} -> {b} is a self-loop")
        reason = forbid(a, b) if forbid else None
        if reason:
            problems.append(f"{a} -> {b} is ruled out: {reason}")
    cycle = _cycle(columns, [*fixed, *edges])
    if cycle:
        problems.append("the graph would have a cycle: " + " -> ".join(cycle))
    return problems


# ---- numbers in prose --------------------------------------------------------------------------
_NUMBER = re.compile(
    r"(?<![\w.])([-−]?\d{1,3}(?:,\d{3})+(?:\.\d+)?|[-−]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)(\s?%)?(?![\w])"
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"'])")
_ALWAYS_PERCENT = (90.0, 95.0, 99.0)
"""Percentages that carry no claim about the data (the level of an interval)."""


def numbers_in(text: str) -> list[tuple[float, int, bool]]:
    """Every number written in ``text``: (value, decimals shown, written as a percentage)."""
    out = []
    for m in _NUMBER.finditer(text):
        raw = m.group(1).replace(",", "").replace("−", "-")
        try:
            value = float(raw)
        except ValueError:
            continue
        decimals = len(raw.split(".")[1]) if "." in raw and "e" not in raw.lower() else 0
        out.append((value, decimals, bool(m.group(2))))
    return out


def numbers_of(value: Any, out: set[float] | None = None) -> set[float]:
    """Every finite number in a nest of dicts, lists, models and strings (the facts given)."""
    out = set() if out is None else out
    if isinstance(value, bool):
        return out
    if isinstance(value, (int, float)):
        if math.isfinite(value):
            out.add(float(value))
    elif isinstance(value, str):
        out.update(v for v, _, _ in numbers_in(value))
    elif isinstance(value, Mapping):
        for v in value.values():
            numbers_of(v, out)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            numbers_of(v, out)
    elif hasattr(value, "model_dump"):
        numbers_of(value.model_dump(), out)
    return out


def _rounds_to(written: float, decimals: int, true: float) -> bool:
    if abs(written - true) <= 0.5 * 10 ** (-decimals) + 1e-12 * max(1.0, abs(true)):
        return True
    if true == 0 or written == 0:
        return False
    # rounded to k >= 2 significant digits ("about 1,500" for 1,523)
    for k in range(2, 7):
        if float(f"{true:.{k}g}") == written:
            return True
    return False


def number_matches(written: float, decimals: int, percent: bool, allowed: Iterable[float]) -> bool:
    """Whether a written number is one of ``allowed`` as shown (rounded, or as a percentage)."""
    if percent and written in _ALWAYS_PERCENT:
        return True
    for true in allowed:
        for c in (true, true * 100) if percent else (true,):
            # "a fall of 5.2" may describe -5.2; a written "-5.2" must be negative in the state too
            if _rounds_to(written, decimals, abs(c) if written >= 0 else c):
                return True
    return False


def check_numbers(text: str, allowed: Iterable[float]) -> tuple[str, list[str]]:
    """Keep the sentences whose every number is in ``allowed``; return (kept text, dropped sentences)."""
    allowed = list(allowed)
    kept: list[str] = []
    dropped: list[str] = []
    for sentence in _SENTENCE.split(text.strip()):
        ok = all(number_matches(v, d, p, allowed) for v, d, p in numbers_in(sentence))
        (kept if ok else dropped).append(sentence)
    return " ".join(kept).strip(), dropped


def numbers_problems(text: str, allowed: Iterable[float]) -> list[str]:
    """One problem per sentence whose numbers are not in the state (for a re-ask)."""
    _, dropped = check_numbers(text, allowed)
    return [f"numbers not in the analysis: {s!r}" for s in dropped]
