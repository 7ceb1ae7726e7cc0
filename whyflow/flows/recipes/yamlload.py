"""Strict YAML loading: duplicate keys are errors, and every node remembers its line.

PyYAML silently keeps the last of two equal keys; a recipe that says ``max_iterations`` twice
must not run with whichever came last. Mappings load as :class:`LocDict` and sequences as
:class:`LocList`, which carry the line and column of each key and item so that validation
errors can point at the user's file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from whyflow.flows.errors import RecipeSyntaxError

__all__ = ["LocDict", "LocList", "load_yaml", "locate"]

Position = tuple[int, int]


class LocDict(dict[str, Any]):
    """A dict that knows where it and each of its keys start (1-based line, column)."""

    pos: Position = (0, 0)
    key_pos: dict[Any, Position]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.key_pos = {}  # a mapping made in code (a `--set` on a recipe without `settings:`) has no lines


class LocList(list[Any]):
    """A list that knows where it and each of its items start."""

    pos: Position = (0, 0)
    item_pos: list[Position]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.item_pos = []


def _position(node: yaml.Node) -> Position:
    return node.start_mark.line + 1, node.start_mark.column + 1


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that records positions and rejects duplicate keys."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> LocDict:
    loader.flatten_mapping(node)
    result = LocDict()
    result.pos = _position(node)
    result.key_pos = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in result:
            first = result.key_pos[key]
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"duplicate key '{key}' (first defined on line {first[0]})",
                key_node.start_mark,
            )
        result[key] = loader.construct_object(value_node, deep=True)
        result.key_pos[key] = _position(key_node)
    return result


def _construct_sequence(loader: _StrictLoader, node: yaml.SequenceNode) -> LocList:
    result = LocList(loader.construct_object(child, deep=True) for child in node.value)
    result.pos = _position(node)
    result.item_pos = [_position(child) for child in node.value]
    return result


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)


def _snippet(text: str, line: int, column: int | None) -> str:
    lines = text.splitlines()
    start, end = max(1, line - 2), min(len(lines), line + 2)
    out = []
    for n in range(start, end + 1):
        marker = ">" if n == line else " "
        out.append(f"  {marker} {n:4d} | {lines[n - 1]}")
        if n == line and column:
            out.append("         | " + " " * (column - 1) + "^")
    return "\n".join(out)


def load_yaml(path: str | Path, text: str | None = None) -> Any:
    """Parse a YAML file strictly; raise :class:`RecipeSyntaxError` with file, line and a snippet."""
    p = str(path)
    if text is None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError as exc:
            raise RecipeSyntaxError(p, None, None, "recipe file not found") from exc
        except (OSError, UnicodeDecodeError) as exc:
            raise RecipeSyntaxError(p, None, None, f"cannot read recipe: {exc}") from exc
    try:
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        column = mark.column + 1 if mark else None
        problem = exc.problem or str(exc)
        if exc.context and "duplicate" not in problem:
            problem = f"{exc.context}: {problem}"
        raise RecipeSyntaxError(p, line, column, problem, _snippet(text, line, column) if line else "") from exc
    except yaml.YAMLError as exc:
        raise RecipeSyntaxError(p, None, None, str(exc)) from exc


def locate(document: Any, loc: tuple[Any, ...]) -> Position | None:
    """The position of the deepest node along ``loc`` (keys and indexes) in a loaded document.

    Path parts that are not in the document (pydantic's union tags, a missing key) are
    skipped, so a missing field reports the line of its parent mapping.
    """
    node = document
    found: Position | None = getattr(document, "pos", None)
    for part in loc:
        if isinstance(node, LocDict) and part in node:
            found = node.key_pos.get(part, found)
            node = node[part]
        elif isinstance(node, LocList) and isinstance(part, int) and 0 <= part < len(node):
            found = node.item_pos[part]
            node = node[part]
    return found
