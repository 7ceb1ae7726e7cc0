"""The computation of a plain question (:mod:`whyflow.ask.tools.plain_questions`): a statistic of
one column, a count, a conditional share or a contrast between two groups, over the rows its
conditions keep, with the answer sentence that says what was computed.

Self-contained (pandas and numpy only): :func:`whyflow.ask.tools.plain_spec.plain_code` puts this
module's source into the sandbox program, and tests call :func:`answer_plain` directly.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

_LABELS = {
    "mean": "average",
    "median": "median",
    "sum": "total",
    "max": "maximum",
    "min": "minimum",
    "std": "standard deviation",
    "var": "variance",
}


def _numbers(series: pd.Series) -> pd.Series:
    if pd.api.types.is_bool_dtype(series):
        return series.astype(float)
    if not pd.api.types.is_numeric_dtype(series):
        series = series.astype("string").str.replace(r"[,$%\s]", "", regex=True)
    return pd.to_numeric(series, errors="coerce")


def condition_mask(df: pd.DataFrame, conditions: list[dict[str, Any]]) -> pd.Series:
    """Rows meeting every condition (a missing value meets none)."""
    mask = pd.Series(True, index=df.index)
    for c in conditions:
        column, op, value = df[c["column"]], c["op"], c["value"]
        if isinstance(value, str):
            text = column.astype("string").str.strip().str.lower()
            hit = (text == value.strip().lower()).fillna(False)
            mask &= ~hit & column.notna() if op == "!=" else hit
            continue
        x = _numbers(column)
        ops = {"==": x == value, "!=": x != value, ">": x > value, ">=": x >= value, "<": x < value, "<=": x <= value}
        mask &= ops[op].fillna(False) & x.notna()
    return mask.astype(bool)


def statistic(x: pd.Series, op: str) -> float:
    """One statistic of the non-missing numbers (sample standard deviation and variance)."""
    x = x.dropna()
    if x.empty:
        return float("nan")
    value = {
        "mean": x.mean,
        "median": x.median,
        "sum": x.sum,
        "max": x.max,
        "min": x.min,
        "std": lambda: x.std(ddof=1),
        "var": lambda: x.var(ddof=1),
    }[op]()
    return float(value)


def show(value: float) -> str:
    """A number as the sentence writes it: whole numbers whole, else 2 decimals (4 below 1)."""
    if not np.isfinite(value):
        return "not available"
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.2f}" if abs(value) >= 1 else f"{value:.4f}"


def described(conditions: list[dict[str, Any]]) -> str:
    return " and ".join(c["words"] for c in conditions)


def _rows(n: int, conditions: list[dict[str, Any]]) -> str:
    return f"the {n} rows with {described(conditions)}" if conditions else f"all {n} rows"


def answer_plain(df: pd.DataFrame, spec: dict[str, Any]) -> dict[str, Any]:
    """The value the spec asks for, the rows it used and the sentence that says so (and which of
    the question's phrases were read as the data's description, not as a condition)."""
    out = _answer(df, spec)
    again = spec.get("restated") or []
    if again:
        quoted = ", ".join(f"'{p}'" for p in again)
        out["answer"] = f"{out['answer']} Read as the data's description, not as a condition: {quoted}."
    return out


def _answer(df: pd.DataFrame, spec: dict[str, Any]) -> dict[str, Any]:
    kind = spec["kind"]
    population = spec.get("population", [])
    keep = condition_mask(df, population)
    n = int(keep.sum())
    if kind == "count":
        return {
            "value": float(n),
            "n": n,
            "answer": f"{n} of the {len(df)} rows have {described(population)}.",
        }
    if kind == "share":
        event = spec["event"]
        known = keep & df[[c["column"] for c in event]].notna().all(axis=1)
        hits = int((known & condition_mask(df, event)).sum())
        base = int(known.sum())
        share = hits / base if base else float("nan")
        percent = show(100 * share) if np.isfinite(share) else "not available"
        return {
            "value": share,
            "n": base,
            "hits": hits,
            "answer": f"{percent}% of {_rows(base, population)} have {described(event)} ({hits} rows).",
        }
    op, target = spec["op"], spec["target"]
    label = f"{_LABELS[op]} {target}"
    if kind == "aggregate":
        x = _numbers(df.loc[keep, target])
        value = statistic(x, op)
        used = int(x.notna().sum())
        return {"value": value, "n": used, "answer": f"The {label} is {show(value)} over {_rows(used, population)}."}
    first, second = spec["sides"]
    a_mask, b_mask = condition_mask(df, first) & keep, condition_mask(df, second) & keep
    a, b = _numbers(df.loc[a_mask, target]), _numbers(df.loc[b_mask, target])
    va, vb = statistic(a, op), statistic(b, op)
    flip = spec.get("order") == "second_minus_first"
    diff = vb - va if flip else va - vb
    (hi, lo) = (second, first) if flip else (first, second)
    (vh, vl) = (vb, va) if flip else (va, vb)
    (nh, nl) = (int(b.notna().sum()), int(a.notna().sum())) if flip else (int(a.notna().sum()), int(b.notna().sum()))
    return {
        "value": diff,
        "n": nh + nl,
        "answer": (
            f"The difference in {label} is {show(diff)}: {show(vh)} for {_rows(nh, hi)} minus {show(vl)} for "
            f"{_rows(nl, lo)}."
        ),
    }
