"""A stated subgroup (``--where``): a row condition read by a small parser, never evaluated as code.

The syntax is the part of pandas' ``DataFrame.query`` an analyst writes for a subgroup: column
names (in backticks when they are not identifiers), numbers, quoted text, ``True``/``False``,
comparisons ``== != < <= > >=`` (chained too: ``18 <= age < 65``), ``in`` / ``not in`` a list of
values, and ``and``/``or``/``not`` (or ``&``/``|``/``~``) with parentheses. Anything else (a call,
an attribute, arithmetic, a name that is not a column) is refused with one line naming it: the
text is parsed with :mod:`ast` and walked here, so no user text is ever executed.

A comparison with a missing value is false, as in pandas: rows where the condition cannot be
decided are outside the subgroup.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from whyflow.core.errors import DataError

__all__ = ["BadSubgroup", "Subgroup", "parse_where"]


class BadSubgroup(DataError):
    """A ``--where`` expression that cannot be read, names a missing column, or keeps no row."""


_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_BACKTICK = re.compile(r"`([^`]+)`")


@dataclass(frozen=True)
class Subgroup:
    """A parsed ``--where`` condition: its text, its tree and the columns it reads."""

    text: str
    tree: ast.expr
    aliases: dict[str, str]
    """Placeholder identifier -> the backticked column name it stands for."""

    @property
    def columns(self) -> list[str]:
        """The column names the condition reads, in order of appearance."""
        names = [self.aliases.get(n.id, n.id) for n in ast.walk(self.tree) if isinstance(n, ast.Name)]
        return list(dict.fromkeys(n for n in names if n not in ("True", "False")))

    def mask(self, frame: pd.DataFrame) -> np.ndarray:
        """The rows of ``frame`` in the subgroup, as a boolean array (raises :class:`BadSubgroup`)."""
        missing = [c for c in self.columns if c not in frame.columns]
        if missing:
            from whyflow.runtime.data import suggest

            names = [str(c) for c in frame.columns]
            raise BadSubgroup(
                f"--where names a column that is not in the data: '{missing[0]}'{suggest(missing[0], names)}"
            )
        walker = _Walker(frame, self.aliases)
        value = walker.eval(self.tree)
        if not isinstance(value, pd.Series):
            raise BadSubgroup(f"--where '{self.text}' is not a condition (it must compare columns with values)")
        return walker.as_bool(value).to_numpy(dtype=bool)

    def apply(self, frame: pd.DataFrame) -> tuple[pd.DataFrame, str]:
        """The subgroup's rows (renumbered) and a sentence saying which and how many."""
        keep = self.mask(frame)
        n = int(keep.sum())
        if n == 0:
            raise BadSubgroup(f"--where '{self.text}' keeps no row of the {len(frame):,} in the data")
        sentence = f"subgroup {self.text}: {n:,} of {len(frame):,} rows"
        return frame.loc[keep].reset_index(drop=True), sentence


def parse_where(text: str) -> Subgroup:
    """Read a ``--where`` expression (raises :class:`BadSubgroup` with one line when it cannot)."""
    aliases: dict[str, str] = {}

    def alias(m: re.Match[str]) -> str:
        key = f"__col{len(aliases)}__"
        aliases[key] = m.group(1)
        return key

    source = _BACKTICK.sub(alias, text.strip())
    if not source:
        raise BadSubgroup("--where is empty: give a condition such as \"age >= 18 and region == 'north'\"")
    try:
        tree = ast.parse(source, mode="eval").body
    except SyntaxError as exc:
        raise BadSubgroup(f"--where '{text}' cannot be read ({exc.msg}); e.g. \"age >= 18 and sex == 'f'\"") from None
    _check(tree, text)
    return Subgroup(text.strip(), tree, aliases)


def _check(node: ast.AST, text: str) -> None:
    allowed = (
        ast.BoolOp,
        ast.And,
        ast.Or,
        ast.UnaryOp,
        ast.Not,
        ast.Invert,
        ast.USub,
        ast.BinOp,
        ast.BitAnd,
        ast.BitOr,
        ast.Compare,
        ast.In,
        ast.NotIn,
        ast.Name,
        ast.Load,
        ast.Constant,
        ast.List,
        ast.Tuple,
        *_COMPARE,
    )
    for sub in ast.walk(node):
        if not isinstance(sub, allowed):
            what = type(sub).__name__.lower()
            raise BadSubgroup(
                f"--where '{text}' uses {what}, which a subgroup condition does not allow (columns, values, "
                "comparisons, in [...], and/or/not)"
            )
        if isinstance(sub, ast.BinOp) and not isinstance(sub.op, ast.BitAnd | ast.BitOr):
            raise BadSubgroup(f"--where '{text}' uses arithmetic; compare columns with values only")
        if isinstance(sub, ast.UnaryOp) and isinstance(sub.op, ast.USub) and not isinstance(sub.operand, ast.Constant):
            raise BadSubgroup(f"--where '{text}' negates a column; compare columns with values only")


class _Walker:
    """Evaluates a checked tree on a frame: names are columns, everything else a value."""

    def __init__(self, frame: pd.DataFrame, aliases: dict[str, str]) -> None:
        self.frame, self.aliases = frame, aliases

    def eval(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in ("True", "False"):
                return node.id == "True"
            return self.frame[self.aliases.get(node.id, node.id)]
        if isinstance(node, ast.List | ast.Tuple):
            return [self.eval(e) for e in node.elts]
        if isinstance(node, ast.UnaryOp):
            value = self.eval(node.operand)
            return -value if isinstance(node.op, ast.USub) else ~self.as_bool(value)
        if isinstance(node, ast.BoolOp | ast.BinOp):
            operands = node.values if isinstance(node, ast.BoolOp) else [node.left, node.right]
            parts = [self.as_bool(self.eval(v)) for v in operands]
            conjunction = isinstance(node.op, ast.And | ast.BitAnd)
            out = parts[0]
            for p in parts[1:]:
                out = (out & p) if conjunction else (out | p)
            return out
        if isinstance(node, ast.Compare):
            return self._compare(node)
        raise BadSubgroup(f"--where cannot use {type(node).__name__.lower()}")  # _check let nothing else through

    def _compare(self, node: ast.Compare) -> pd.Series:
        left = self.eval(node.left)
        out: pd.Series | None = None
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = self.eval(right_node)
            if isinstance(op, ast.In | ast.NotIn):
                if not isinstance(right, list) or not isinstance(left, pd.Series):
                    raise BadSubgroup("--where: 'in' takes a column on the left and a list of values on the right")
                part = left.isin(right)
                part = ~part if isinstance(op, ast.NotIn) else part
            else:
                part = self._pairwise(_COMPARE[type(op)], left, right)
            out = part if out is None else out & part
            left = right
        assert out is not None
        return out.astype(bool)

    def _pairwise(self, fn: Callable[[Any, Any], Any], left: Any, right: Any) -> pd.Series:
        if not isinstance(left, pd.Series) and not isinstance(right, pd.Series):
            raise BadSubgroup("--where compares two values: one side of each comparison must be a column")
        try:
            result = fn(left, right)
        except TypeError as exc:
            raise BadSubgroup(f"--where compares values of different kinds ({exc})") from None
        return pd.Series(result, index=self.frame.index).fillna(False).astype(bool)

    def as_bool(self, value: Any) -> pd.Series:
        if isinstance(value, pd.Series) and (pd.api.types.is_bool_dtype(value) or value.isin([0, 1]).all()):
            return value.fillna(False).astype(bool)
        raise BadSubgroup("--where: and/or/not join conditions (comparisons), not bare columns or values")
