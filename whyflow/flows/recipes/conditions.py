"""A small, safe expression language over state fields: step conditions and loop exits.

Recipes say ``when: plan.needs_code`` or ``until: execution_success``. An expression is parsed
with Python's :mod:`ast` and accepted only if every node is one of: a state field name, an
attribute of it (``plan.needs_evaluation``), an integer index (``critique_history[-1]``), a
literal (string, number, ``True``/``False``/``None``, or a list/tuple of them), a comparison
(``== != < <= > >= in not in``), ``and``/``or``/``not``. Nothing is ever passed to ``eval``:
:func:`evaluate` walks the checked tree itself.

:func:`check` validates an expression statically against a state model's types (an unknown
field or attribute is an error naming the close match), so ``whyflow validate`` reports it at
the recipe's ``file:line``. At run time a missing value (``None``, an index past the end)
reads as ``None``, so ``critique_history[-1].decision`` on an empty history is ``None``.
"""

from __future__ import annotations

import ast
import difflib
import operator
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from whyflow.core.errors import WhyflowError

__all__ = ["Condition", "ConditionError", "parse_condition", "check_condition", "evaluate"]


class ConditionError(WhyflowError):
    """A condition is not in the expression language, or names what the state does not have."""


_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: b is not None and a in b,
    ast.NotIn: lambda a, b: b is None or a not in b,
}


@dataclass(frozen=True)
class Condition:
    """A parsed, syntax-checked expression and the text it came from."""

    text: str
    tree: ast.expr

    def __call__(self, state: Any) -> bool:
        return bool(evaluate(self, state))


def parse_condition(text: str) -> Condition:
    """Parse ``text``; raise :class:`ConditionError` for anything outside the language."""
    if not isinstance(text, str) or not text.strip():
        raise ConditionError("an empty condition")
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ConditionError(f"'{text}' is not a valid expression ({exc.msg})") from None
    _check_syntax(tree, text)
    return Condition(text.strip(), tree)


def _check_syntax(node: ast.expr, text: str) -> None:
    if isinstance(node, ast.BoolOp):
        for value in node.values:
            _check_syntax(value, text)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        _check_syntax(node.operand, text)
    elif isinstance(node, ast.Compare):
        for op in node.ops:
            if type(op) not in _COMPARE:
                raise ConditionError(f"'{text}': the operator {type(op).__name__} is not allowed")
        for part in (node.left, *node.comparators):
            _check_syntax(part, text)
    elif isinstance(node, ast.Attribute):
        _check_syntax(node.value, text)
    elif isinstance(node, ast.Subscript):
        _check_syntax(node.value, text)
        if _index(node.slice) is None:
            raise ConditionError(f"'{text}': only an integer index such as [0] or [-1] is allowed")
    elif isinstance(node, (ast.List, ast.Tuple)):
        for element in node.elts:
            if _literal(element) is _NO:
                raise ConditionError(f"'{text}': a list may only hold literals")
    elif isinstance(node, ast.Name):
        return
    elif _literal(node) is _NO:
        raise ConditionError(
            f"'{text}': {type(node).__name__} is not allowed; use field names, attributes, literals, "
            f"comparisons, and, or, not"
        )


_NO = object()


def _literal(node: ast.expr) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float, bool, type(None))):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        value = node.operand.value
        return -value if isinstance(value, (int, float)) and not isinstance(value, bool) else _NO
    return _NO


def _index(node: ast.expr) -> int | None:
    value = _literal(node)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# ---- static check against a state model ------------------------------------------------------
def _unwrap(annotation: Any) -> Any:
    """Drop ``None`` from an optional annotation."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else Any
    return annotation


def _attr_type(owner: Any, name: str, path: str) -> Any:
    owner = _unwrap(owner)
    if isinstance(owner, type) and issubclass(owner, BaseModel):
        fields = owner.model_fields
        if name not in fields:
            close = difflib.get_close_matches(name, sorted(fields), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ConditionError(f"'{path}': {owner.__name__} has no field '{name}'{hint}")
        return fields[name].annotation
    if owner is Any or typing.get_origin(owner) in (dict, Mapping) or owner is dict:
        return Any
    raise ConditionError(f"'{path}': a {getattr(owner, '__name__', owner)} value has no attribute '{name}'")


def _item_type(owner: Any, path: str) -> Any:
    owner = _unwrap(owner)
    if typing.get_origin(owner) in (list, tuple):
        args = typing.get_args(owner)
        return args[0] if args else Any
    if owner is Any:
        return Any
    raise ConditionError(f"'{path}': only a list field can be indexed")


def _type_of(node: ast.expr, model: type[BaseModel], text: str) -> Any:
    if isinstance(node, ast.Name):
        if node.id in ("true", "false", "null"):
            raise ConditionError(f"'{text}': write {node.id.capitalize() if node.id != 'null' else 'None'}")
        return _attr_type(model, node.id, text)
    if isinstance(node, ast.Attribute):
        return _attr_type(_type_of(node.value, model, text), node.attr, text)
    if isinstance(node, ast.Subscript):
        return _item_type(_type_of(node.value, model, text), text)
    return Any


def check_condition(condition: Condition, model: type[BaseModel]) -> None:
    """Raise :class:`ConditionError` if ``condition`` names a field ``model`` does not have."""
    for node in ast.walk(condition.tree):
        if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)):
            _type_of(node, model, condition.text)


# ---- evaluation ------------------------------------------------------------------------------
def _get(value: Any, name: str) -> Any:
    if value is None:
        return None
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


def _value(node: ast.expr, state: Any) -> Any:
    if isinstance(node, ast.Name):
        return _get(state, node.id)
    if isinstance(node, ast.Attribute):
        return _get(_value(node.value, state), node.attr)
    if isinstance(node, ast.Subscript):
        seq, i = _value(node.value, state), _index(node.slice)
        if not isinstance(seq, (list, tuple)) or i is None or not -len(seq) <= i < len(seq):
            return None
        return seq[i]
    if isinstance(node, ast.BoolOp):
        if isinstance(node.op, ast.And):
            return all(_value(v, state) for v in node.values)
        return any(_value(v, state) for v in node.values)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return not _value(node.operand, state)
    if isinstance(node, ast.Compare):
        left = _value(node.left, state)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = _value(right_node, state)
            try:
                if not _COMPARE[type(op)](left, right):
                    return False
            except TypeError:
                return False
            left = right
        return True
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(e) for e in node.elts]
    return _literal(node)


def evaluate(condition: Condition, state: Any) -> Any:
    """The value of ``condition`` on ``state`` (a state object or a view of it)."""
    return _value(condition.tree, state)
