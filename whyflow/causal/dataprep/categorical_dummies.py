"""A categorical written twice: its dummies beside it (``city_A``, ``city_B`` ... next to ``city``).

Why: a replication file often keeps a categorical and the dummies made from it. The design encodes
the categorical as dummies of its own, so with both the columns repeat each other and the design is
singular: a solver returns one of infinitely many answers (an OLS "effect" of 5.8 × 10¹¹ in a real
case). One representation must go, and which one matters only for what is left:

* beside a text categorical, every numeric column that is one value in each of its levels (a
  dummy ``city == 'A'``, a grouping of levels, a per-city figure) is a function of it, and its
  dummies carry it exactly: those columns go and the categorical is kept;
* beside a numeric code (``city`` = 1..5), only a complete set of its dummies repeats it (the code
  enters a design as one linear term, which a single dummy does not repeat): the code goes and the
  dummies stay (the one-hot rule of confounder discovery then drops one of them as the reference).

Read on values, never names. A column kept whatever this rule finds (one that domain knowledge places
before the treatment, or that another rule keeps with a flag) is never the one left out: where such a
dummy sits beside a text categorical, the categorical goes instead.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import pandas as pd

from whyflow.causal.dataprep.column_names import ColumnRole
from whyflow.causal.dataprep.column_stats import categorical_levels, determined_by, is_integer_valued, numeric

__all__ = ["categorical_dummies"]


def categorical_dummies(frame: pd.DataFrame, cols: list[str], kept: Collection[str] = ()) -> list[ColumnRole]:
    """Columns of ``cols`` (candidates no other rule has classified) that repeat a categorical among
    ``cols`` or ``kept`` (columns that stay whatever this rule finds), each with the representation
    that is kept named in its reason."""
    pool = list(dict.fromkeys([*cols, *kept]))
    values = {c: v for c in pool if (v := numeric(frame, c)) is not None}
    out: list[ColumnRole] = []
    taken: set[str] = set()
    for cat in pool:
        if cat in taken or categorical_levels(frame[cat]) is None:
            continue
        functions = {
            c: m for c, v in values.items() if c != cat and c not in taken and (m := determined_by(frame[cat], v))
        }
        if not functions:
            continue
        if cat not in kept and any(c in kept for c in functions):
            out.append(ColumnRole(cat, "categorical_repeated", _categorical_goes(cat, sorted(functions))))
            taken.add(cat)
            continue
        for c, mapping in functions.items():
            if c not in kept:
                out.append(ColumnRole(c, "dummy_of_categorical", _dummy_goes(c, cat, mapping)))
                taken.add(c)
    out += _numeric_codes(frame, [c for c in cols if c not in taken], values, taken)
    return out


def _dummy_goes(c: str, cat: str, mapping: dict[str, float]) -> str:
    ones = [k for k, v in mapping.items() if v == 1.0]
    if set(mapping.values()) <= {0.0, 1.0} and len(ones) == 1:
        what = f"equal to ({cat} == {ones[0]!r}) in every row, a dummy of {cat!r}"
    else:
        what = f"one value within each of the {len(mapping)} levels of {cat!r}, a function of it"
    return (
        f"a repeat of a categorical: {what}; {cat!r} is kept and its own dummies carry the same information "
        "(both in one design make it singular)"
    )


def _categorical_goes(cat: str, functions: list[str]) -> str:
    shown = ", ".join(functions[:6]) + (" ..." if len(functions) > 6 else "")
    return (
        f"a repeat of a categorical: {shown}, kept (known to precede the treatment, or kept by another rule), "
        f"are functions of {cat!r}, so {cat!r} is left out (both in one design make it singular)"
    )


def _numeric_codes(
    frame: pd.DataFrame, cols: list[str], values: dict[str, np.ndarray], taken: set[str]
) -> list[ColumnRole]:
    """Integer codes with 3 to 20 levels written beside a complete set of their dummies."""
    dummies = {c: v for c, v in values.items() if c not in taken and set(np.unique(v[~np.isnan(v)])) <= {0.0, 1.0}}
    out: list[ColumnRole] = []
    for code in cols:
        s = frame[code]
        if code not in values or not is_integer_valued(s) or not 3 <= s.nunique() <= 20:
            continue
        as_text = s.astype("Int64").astype("string")
        own = {
            c: m
            for c, v in dummies.items()
            if c != code and (m := determined_by(as_text, v)) and sorted(m.values()).count(1.0) == 1
        }
        block = frame[list(own)].dropna() if own else None
        if block is None or len(block) == 0 or not bool((block.sum(axis=1) == 1).all()):
            continue
        if len(own) != s.nunique():
            continue
        why = (
            f"a repeat of a categorical: the integer code {code!r} is written beside a complete set of its dummies "
            f"({', '.join(sorted(own)[:6])}{' ...' if len(own) > 6 else ''}); the dummies are kept (one of them as "
            "the reference) and carry everything the code does"
        )
        out.append(ColumnRole(code, "categorical_repeated", why))
    return out
