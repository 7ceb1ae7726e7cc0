"""Which columns, and which group, one slot of a stated format names.

A slot's name (``mean_fare_class1``) spells its columns (``Fare``) and may carry words that set it
apart from the other slots: a group (``class1``: Pclass is 1) the request must honour, or a word
nobody understood, in which case the request is not computed rather than answered for the
whole table. Used by :func:`whyflow.ask.tools.requests.parse_requests`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from whyflow.ask.tools.request_groups import group_conditions
from whyflow.ask.tools.request_rules import _ORDINALS, _norm, _numeric, words_of
from whyflow.ask.tools.slots import ColumnInfo, find_columns

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["group_filter", "leftover_words", "name_words", "own_columns", "qualified_columns", "slot_words"]


def slot_words(text: str) -> str:
    """Lower-case text with snake_case and camelCase split into words."""
    text = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)
    return re.sub(r"[_\-]+", " ", text).lower()


_GENERIC = frozenset(
    "mean average avg median std stdev stddev sd dev standard deviation deviations variance var min minimum max maximum "
    "sum total count number num n no skew skewness kurtosis correlation corr coefficient coef p value values pvalue "
    "pval r outlier outliers missing null nan na unique distinct rows row entries records of the in for and a an new "
    "after before original with without clean cleaned removed removal within one data dataset overall all slope "
    "intercept squared r2 rsquared calculated computed test statistic stat result by per norm normality shapiro wilk range "
    "percentage percent column w pre post has "
    "ks pearson spearman kendall significance level".split()
)


def name_words(name: str) -> list[str]:
    return [w for w in words_of(name) if w not in _GENERIC]


def own_columns(name: str, infos: list[ColumnInfo]) -> list[str]:
    """Numeric columns a slot's name spells out: exactly (``familysize`` for FamilySize), then as
    the question-style matching finds them."""
    words = words_of(name)
    joins = {"".join(words[i:j]) for i in range(len(words)) for j in range(i + 1, len(words) + 1)}
    exact = sorted(
        (c.name for c in infos if c.numeric and _norm(c.name) in joins and len(_norm(c.name)) > 1),
        key=lambda n: -len(_norm(n)),
    )  # the longest name the slot spells: "income per member" over "income"
    found = [m.column for m in find_columns(slot_words(name), infos) if _numeric(m.column, infos)]
    return list(dict.fromkeys(exact + found))


def leftover_words(name: str, own: list[str], shared: set[str]) -> list[str]:
    """Words of a slot's name that set it apart from the other slots and are neither an operation
    nor its column: a qualifier such as a group ("class1", "female") the request must honour or refuse."""
    col_words = {w for c in own for w in words_of(c)} | {_norm(c) for c in own}
    return [w for w in name_words(name) if w not in shared and w not in col_words]


def group_filter(left: list[str], frame: pd.DataFrame, infos: list[ColumnInfo]) -> dict[str, Any] | None:
    """``{"column", "value"}`` when the leftover words name one value of one categorical column."""
    wanted = [_ORDINALS.get(w, w) for w in left]
    for info in infos:
        if info.name not in frame.columns or (info.n_unique or 0) > 50:
            continue
        name_words = set(re.findall(r"[a-z]+", slot_words(info.name)))
        rest = [w for w in wanted if not any(w in nw or nw in w for nw in name_words if len(w) > 2)]
        if len(rest) != 1:
            continue
        for value in frame[info.name].dropna().unique():
            text = str(value).lower()
            if text.endswith(".0"):
                text = text[:-2]
            if text == rest[0] and (not text.isdigit() or len(rest) < len(wanted)):
                return {"column": info.name, "value": value.item() if hasattr(value, "item") else value}
    return None


def qualified_columns(
    name: str,
    op: str,
    cols: list[str],
    own: list[str],
    asked: list[str],
    shared: set[str],
    frame: pd.DataFrame,
    infos: list[ColumnInfo],
) -> tuple[list[str], Any] | None:
    """The request's columns and its group (``mean_fare_class1``: Fare where Pclass is 1), or None
    when a word that sets this slot apart from the others is not understood."""
    if op == "rows":
        return (cols, None) if not own and not leftover_words(name, cols, shared) else None
    candidates = [cols] + ([[c] for c in own + asked if [c] != cols] if len(cols) == 1 else [])
    for option in candidates:  # every word of the slot's group is read, also one all slots share
        conditions = group_conditions(leftover_words(name, option, set()), frame, infos, set(option))
        if conditions is not None:
            return option, conditions[0] if len(conditions) == 1 else conditions
    for option in candidates:
        if not leftover_words(name, option, shared):
            return option, None
        group = group_filter(leftover_words(name, option, set()), frame, infos)
        if group is not None and group["column"] not in option:
            return option, group
    return None
