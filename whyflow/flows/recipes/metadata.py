"""The ``--metadata`` file: a strict, typed spec of what the analyst knows beyond the data's values.

A misspelt key must not be skipped: ``forbiden_edges:`` read permissively would drop the
forbidden edges without a word, and the discovered graph would be free to draw them. So the
file is loaded with the recipes' strict YAML loader (duplicate keys rejected, every key's line
known) and validated against :class:`MetadataSpec`, which forbids unknown keys; a problem is one
line naming the file, the line, the key and the closest valid key.

The agents receive the validated file's own values (``raw_metadata``) in their typed
:class:`~whyflow.causal.knowledge.Metadata`, so a valid file means exactly what it meant before and
``state.json`` keeps what the file said (a tag written 2024 stays a number, a one-column tier
stays bare), which the spec's coerced values would not. The keys are the ones the agents read:
``whyflow/causal/dataprep/domain_knowledge.py`` (all of them), ``whyflow/causal/dataprep/profiling.py`` (``roles``,
``columns.<col>.role`` and ``.measured``) and ``whyflow/causal/report/context.py``
(``description``). A key added there must be added here and to ``Metadata`` too.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, model_validator
from pydantic_core import ErrorDetails

from whyflow.causal.knowledge import Metadata
from whyflow.flows.errors import MetadataError, RecipeSyntaxError
from whyflow.flows.recipes.yamlload import LocDict, LocList, load_yaml, locate

__all__ = ["ColumnSpec", "MetadataSpec", "load_metadata", "read_metadata", "state_metadata"]


def _tier(value: Any) -> Any:
    """A temporal-order tier of one column may be written without brackets."""
    return value if isinstance(value, (list, tuple)) else [value]


Edge = tuple[str, str]
Tier = Annotated[tuple[str, ...], BeforeValidator(_tier)]


class _Strict(BaseModel):
    # Numbers are accepted where text is expected: a column may be called 1990, a tag 2024.
    model_config = ConfigDict(extra="forbid", frozen=True, coerce_numbers_to_str=True)


class ColumnSpec(_Strict):
    """What the metadata says about one column (a bare text is its description)."""

    description: str | None = None
    """What the column holds."""
    unit: str | None = None
    """Its unit of measurement (years, USD, ...)."""
    role: str | None = None
    """treatment, outcome, confounder, instrument, mediator, id, time, ..."""
    measured: str | None = None
    """When it was measured relative to the treatment: pre (before, baseline) or post (after, follow-up)."""

    @model_validator(mode="before")
    @classmethod
    def _text_is_description(cls, value: Any) -> Any:
        return {"description": value} if isinstance(value, (str, int, float)) else value


class MetadataSpec(_Strict):
    """The whole metadata file; every key is optional, no other key is allowed."""

    name: str | None = None
    """The dataset's name."""
    source: str | None = None
    """Where the data comes from."""
    description: str | None = None
    """What the data is, in a sentence or two."""
    domain: str | None = None
    """The field of study (labour economics, ...)."""
    tags: tuple[str, ...] | None = None
    """Free keywords."""
    columns: dict[str, ColumnSpec | None] | None = None
    """Per column: description, unit, role, measured."""
    roles: dict[str, str] | None = None
    """Roles by column, as an alternative to ``columns.<col>.role``."""
    treatment: str | None = None
    """The treatment column (a role)."""
    outcome: str | None = None
    """The outcome column (a role)."""
    temporal_order: tuple[Tier, ...] | None = None
    """Tiers of columns, earliest first: nothing in a later tier causes anything in an earlier one."""
    forbidden_edges: tuple[Edge, ...] | None = None
    """[cause, effect] pairs that cannot hold."""
    required_edges: tuple[Edge, ...] | None = None
    """[cause, effect] pairs that are known to hold."""
    notes: tuple[str, ...] | None = None
    """Free remarks, kept with the domain knowledge."""


def read_metadata(path: str | Path) -> tuple[MetadataSpec, dict[str, Any]]:
    """Load and validate a metadata file: the spec and the file's values as a plain dict.

    Raises:
        MetadataError: the file is missing, is not YAML/JSON, repeats a key, or breaks the spec.
    """
    p = Path(path)
    text = _read(p)
    data, document = _parse(p, text)
    if not isinstance(data, dict):
        raise MetadataError(str(p), None, "metadata must hold a mapping (description, columns, temporal_order, ...)")
    try:
        spec = MetadataSpec.model_validate(data)
    except ValidationError as exc:
        raise _spec_error(str(p), document, exc) from None
    return spec, _plain(data)


def load_metadata(path: str | Path) -> dict[str, Any]:
    """The validated metadata file's own values, as a plain dict."""
    return read_metadata(path)[1]


def state_metadata(path: str | Path) -> Metadata:
    """The validated metadata file as the agents read it (``raw_metadata``): its own values, typed."""
    return Metadata.model_validate(load_metadata(path))


def _read(p: Path) -> str:
    if not p.exists():
        raise MetadataError(str(p), None, "metadata file not found")
    if p.is_dir():
        raise MetadataError(str(p), None, "metadata path is a folder, not a file")
    try:
        return p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise MetadataError(str(p), None, f"cannot read the metadata file: {exc}") from None


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _parse(p: Path, text: str) -> tuple[Any, Any]:
    """The file's values, and the same file loaded so that each key knows its line (or None)."""
    kind = "JSON" if p.suffix.lower() == ".json" else "YAML"
    try:
        document = load_yaml(p, text)  # JSON is YAML too: the same load finds each key's line
    except RecipeSyntaxError as exc:
        if kind == "YAML" or exc.problem.startswith("duplicate key"):
            raise _syntax_error(str(p), exc, kind) from None
        document = None
    if kind == "YAML":
        return document, document
    try:  # JSON's own reading of its values (1e3 is a number in JSON, a string in YAML 1.1)
        return json.loads(text, object_pairs_hook=_unique_keys), document
    except json.JSONDecodeError as exc:
        raise MetadataError(str(p), exc.lineno, f"metadata is not valid JSON: {exc.msg}", exc.colno) from None
    except _DuplicateKey as exc:
        raise MetadataError(str(p), None, f"metadata: duplicate key '{exc}'") from None


def _syntax_error(path: str, exc: RecipeSyntaxError, kind: str) -> MetadataError:
    problem = " ".join(exc.problem.split())
    if problem.startswith("duplicate key"):
        return MetadataError(path, exc.line, f"metadata: {problem}", exc.column)
    return MetadataError(path, exc.line, f"metadata is not valid {kind}: {problem}", exc.column)


def _plain(value: Any) -> Any:
    """Plain dicts and lists (no line bookkeeping) for the state."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _spec_error(path: str, document: Any, exc: ValidationError) -> MetadataError:
    """Every problem, in the order of the file; the first one carries the error's attributes."""
    found = sorted(
        ((_line(document, e["loc"]), i, e) for i, e in enumerate(exc.errors())), key=lambda t: (t[0] or 0, t[1])
    )
    line, _, first = found[0]
    more = tuple(f"{path}{f':{n}' if n else ''} → {_message(e)}" for n, _, e in found[1:])
    return MetadataError(path, line, _message(first), key=_dotted(first["loc"]), more=more)


def _line(document: Any, loc: tuple[Any, ...]) -> int | None:
    if not isinstance(document, (LocDict, LocList)):
        return None
    pos = locate(document, loc)
    return pos[0] if pos else None


def _dotted(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _known_keys(loc: tuple[Any, ...]) -> list[str]:
    model = ColumnSpec if len(loc) == 3 and loc[0] == "columns" else MetadataSpec
    return list(model.model_fields)


def _message(error: ErrorDetails) -> str:
    loc, kind = tuple(error["loc"]), error["type"]
    if kind == "extra_forbidden":
        key, parent = str(loc[-1]), _dotted(loc[:-1])
        close = difflib.get_close_matches(key, _known_keys(loc), n=1, cutoff=0.6)
        hint = f"did you mean '{close[0]}'?" if close else f"known keys: {', '.join(_known_keys(loc))}"
        where = f"{parent}: unknown key" if parent else "unknown metadata key"
        return f"{where} '{key}' ({hint})"
    if loc[0] in ("forbidden_edges", "required_edges") and len(loc) >= 2 and kind in _NOT_A_PAIR:
        return f"{_dotted(loc[:2])}: must be a [cause, effect] pair of columns, got {_plain(error['input'])!r}"
    return f"{_dotted(loc)}: {_TYPES.get(kind, error['msg'])}, got {_shown(error['input'])}"


_TYPES = {
    "string_type": "must be text",
    "dict_type": "must be a mapping",
    "tuple_type": "must be a list",
    "list_type": "must be a list",
    "model_type": "must be a mapping, or a text describing the column",
}
_NOT_A_PAIR = {"too_long", "too_short", "tuple_type", "missing"}


def _shown(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return repr(_plain(value))
