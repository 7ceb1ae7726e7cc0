"""Column roles read from the data: which columns may never be covariates, each with a one-line reason.

Why: a real replication file holds more than confounders. Adjusting for a row index, an ``id``
or a numeric registry code, the outcome under another scale (log wage next to the wage), the
columns the outcome is summed, scored or divided from (the revenue of a revenue per worker), a
copy or a label of the treatment (:mod:`whyflow.causal.dataprep.treatment_roles`), a categorical
written twice (:mod:`whyflow.causal.dataprep.categorical_dummies`), or a column measured after the
treatment moves the estimate to about zero or to the wrong sign with a tight interval, or makes
the design singular. This module classifies every candidate column before the adjustment set is
chosen.

The rules are strict (deterministic or near-deterministic relations only), because dropping a
real confounder biases the effect: a column correlated with the outcome because it causes it is
not a transform of it. Columns that domain knowledge places before the treatment are never
classified (``protected``): a baseline of the outcome (``prior_earnings``, ``re75`` for ``re78``)
is the strongest confounder there is, however close to the outcome it runs. A column whose name alone says "after" (``post``, ``followup``, a
wave-2 copy ``x2`` of ``x``) is left out only when it also moves with the treatment; otherwise it
is kept with a flag.

The check for a randomised-looking treatment whose adjustment moves the estimate is
``whyflow.causal.discovery.randomised_move``.
"""

from __future__ import annotations

import re
from collections.abc import Collection

import numpy as np
import pandas as pd

from whyflow.causal.dataprep.categorical_dummies import categorical_dummies
from whyflow.causal.dataprep.column_names import PRE_NAME, ColumnRole, name_tokens
from whyflow.causal.dataprep.column_stats import MIN_ROWS, is_integer_valued, numeric, pearson, r_squared, spearman
from whyflow.causal.dataprep.treatment_roles import COPY_CORR, treatment_roles

__all__ = [
    "ColumnRole",
    "classify_columns",
    "left_out_summary",
    "left_out_table",
    "outcome_proxies",
    "role_of_reason",
]

RANK_TRANSFORM = 0.99
"""|Spearman| with the outcome at or above which a column is a transform of it (log, level, scale)."""
COMPONENT_R2 = 0.95
"""R² of the outcome from at most :data:`MAX_PARTS` other columns at or above which they are its parts."""
MAX_PARTS = 3
LOG_R2 = 0.999
"""R² of the outcome's log from the logs of at most :data:`MAX_PARTS` positive columns: a ratio or product of them."""
CODE_UNIQUE = 0.95
"""Share of distinct values at or above which a whole-number column may be a numeric code."""
CODE_DIGITS = 4
"""Fewest digits of a numeric code (shorter numbers are counts and scores as often as codes)."""
PROXY_CORR = 0.6
"""|correlation| with the outcome above which a column missing exactly where the outcome is missing is a proxy."""

_POST_TOKENS = {"post", "after", "followup", "follow", "endline", "fu", "later", "next", "future", "posttreatment"}
_ID_TOKENS = {"id", "uid", "uuid", "identifier", "key", "code", "idx", "rownames"}
_ID_PREFIXES = (
    "anon",
    "case",
    "child",
    "city",
    "class",
    "clinic",
    "country",
    "county",
    "customer",
    "district",
    "election",
    "firm",
    "hh",
    "hospital",
    "household",
    "obs",
    "patient",
    "person",
    "pupil",
    "record",
    "respondent",
    "row",
    "school",
    "schl",
    "site",
    "state",
    "student",
    "subject",
    "teacher",
    "town",
    "unit",
    "user",
    "village",
    "zip",
)


def _id_named(name: str) -> bool:
    low = str(name).lower()
    if not low.strip() or re.fullmatch(r"unnamed: ?\d+", low) or low == "...1":
        return True
    toks = name_tokens(name)
    if toks and toks[-1] in _ID_TOKENS:
        return True
    return any(low in (f"{p}id", f"{p}_id", f"{p}code", f"{p}_code") for p in _ID_PREFIXES)


def _identifier(s: pd.Series, name: str) -> str | None:
    """Why ``s`` is a row index or an identifier, or None."""
    v = s.dropna()
    n = len(v)
    if n < MIN_ROWS:
        return None
    unique = int(v.nunique())
    if is_integer_valued(v) and unique == n:
        # Distinct integers spanning about as many values as there are rows: a count of the rows.
        ordered = v.sort_index().to_numpy(dtype=float)
        rows = v.index.to_numpy()
        span = float(ordered.max() - ordered.min())
        if span <= 1.1 * float(rows.max() - rows.min()) + 10:
            diffs = np.diff(ordered)
            kind = (
                "a row index (counts up in file order"
                if np.all(diffs > 0) or np.all(diffs < 0)
                else ("a unique per-row key (a shuffled run")
            )
            return f"identifier: {kind}, the integers {ordered.min():.0f}..{ordered.max():.0f})"
    if _id_named(name):
        if not pd.api.types.is_numeric_dtype(v) and unique > 20:
            return f"identifier: named like one, {unique:,} distinct labels"
        if is_integer_valued(v) and unique > 20:
            return f"identifier: named like one, {unique:,} distinct integer codes (a code, not a quantity)"
    if not pd.api.types.is_numeric_dtype(v) and not pd.api.types.is_bool_dtype(v) and unique >= max(21, 0.5 * n):
        numbers = pd.to_numeric(v.astype(str).str.replace(",", ".", regex=False), errors="coerce")
        if numbers.notna().mean() >= 0.5:
            return None  # numbers written as text (data repair converts them), not labels
        return f"identifier: a text column with {unique:,} distinct values in {n:,} rows"
    return None


def _numeric_code(s: pd.Series, tv: np.ndarray | None, yv: np.ndarray | None) -> str | None:
    """Why ``s`` is a numeric code (a firm or person number), or None.

    A code is near-unique (:data:`CODE_UNIQUE` of its rows), whole, issued at one width (every value has
    the same number of digits, at least :data:`CODE_DIGITS`: ``100234``, ``100871`` ...), not sorted in
    file order (a sorted file is sorted by a quantity, as the row-index rule reads it), and unrelated to
    both the treatment and the outcome (|rank correlation| under 3/sqrt(n), about p > 0.003): a column
    independent of the treatment cannot confound, so leaving a measurement out by mistake here costs
    precision only, never bias.
    """
    v = s.dropna()
    n, unique = len(v), int(v.nunique())
    if n < MIN_ROWS or unique < max(50, CODE_UNIQUE * n) or not is_integer_valued(v):
        return None
    values = v.to_numpy(dtype=float)
    if values.min() < 10 ** (CODE_DIGITS - 1) or len(np.unique(np.floor(np.log10(values)))) != 1:
        return None
    in_order = np.diff(v.sort_index().to_numpy(dtype=float))
    if np.all(in_order >= 0) or np.all(in_order <= 0):
        return None
    limit = 3.0 / np.sqrt(n)
    full = s.to_numpy(dtype=float, na_value=np.nan)
    if any(other is not None and abs(spearman(full, other)) >= limit for other in (tv, yv)):
        return None
    width = int(np.floor(np.log10(values.min()))) + 1
    return (
        f"identifier: {unique:,} distinct integer codes in {n:,} rows, all {width} digits "
        f"({values.min():.0f}..{values.max():.0f}) and unrelated to the treatment and the outcome: a code, "
        "not a measurement"
    )


def outcome_proxies(frame: pd.DataFrame, y: str, cols: list[str]) -> list[ColumnRole]:
    """Columns recorded only where the outcome is (missing on its missing rows) and correlated
    with it at |r| >= :data:`PROXY_CORR`: answers a score is made from, a later measurement.

    Data repair drops the rows without an outcome, so the caller passes the file as it was read.
    Columns missing on the outcome's missing rows without the correlation are recorded at follow-up
    (:mod:`whyflow.causal.dataprep.followup_columns`) and are returned too, as post-treatment.
    """
    if y not in frame.columns or not pd.api.types.is_numeric_dtype(frame[y]):
        return []
    yv = frame[y].to_numpy(dtype=float, na_value=np.nan)
    y_missing = np.isnan(yv)
    n_ym = int(y_missing.sum())
    if n_ym < max(10, 0.01 * len(yv)):
        return []
    out: list[ColumnRole] = []
    for c in cols:
        v = numeric(frame, c) if c in frame.columns else None
        if v is None:
            continue
        c_missing = np.isnan(v)
        both = int((c_missing & y_missing).sum())
        r = pearson(v, yv)
        if both >= 0.95 * n_ym and both >= 0.8 * c_missing.sum() and abs(r) >= PROXY_CORR:
            why = (
                f"derived from the outcome: recorded only where {y!r} is (missing in {both:,} of its {n_ym:,} "
                f"missing rows) and correlated {r:+.2f} with it: a part or a later measurement of it"
            )
            out.append(ColumnRole(c, "outcome_proxy", why))
    from whyflow.causal.dataprep.followup_columns import (
        followup_columns,  # missing with the outcome: recorded at follow-up
    )

    return out + followup_columns(frame, y, [c for c in cols if c not in {r.column for r in out}])


def _outcome_roles(frame: pd.DataFrame, y: str, cols: list[str]) -> list[ColumnRole]:
    """Transforms (rank-equivalent), proxies (missing exactly where the outcome is) and parts of the outcome."""
    yv = frame[y].to_numpy(dtype=float)
    values = {c: v for c in cols if (v := numeric(frame, c)) is not None}
    out: list[ColumnRole] = []
    for c, v in values.items():
        rho = spearman(v, yv)
        if abs(rho) >= RANK_TRANSFORM:
            why = (
                f"derived from the outcome: a copy of the outcome {y!r} on another scale (rank correlation "
                f"{rho:+.3f}; level, log or rescaled): adjusting for it leaves the treatment nothing to explain"
            )
            out.append(ColumnRole(c, "outcome_transform", why))
    out += outcome_proxies(frame, y, [c for c in cols if c not in {r.column for r in out}])
    out += _ratio_parts(yv, {c: v for c, v in values.items() if c not in {r.column for r in out}}, y)
    taken = {r.column for r in out}
    out += _components(yv, {c: v for c, v in values.items() if c not in taken}, y)
    return out


def _ratio_parts(yv: np.ndarray, values: dict[str, np.ndarray], y: str) -> list[ColumnRole]:
    """The columns a positive outcome is a ratio or product of: its log is linear in their logs (R² >=
    :data:`LOG_R2`). A factor (positive power) carries the outcome and is left out; a divisor (revenue per
    *worker*, growth over a *baseline*) is the scale the outcome is expressed per, often measured before
    the treatment, and is kept with a flag, as the change-score rule keeps a baseline."""
    known = ~np.isnan(yv)
    if known.sum() < MIN_ROWS or np.any(yv[known] <= 0):
        return []
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = {c: np.log(v) for c, v in values.items() if np.all(v[~np.isnan(v)] > 0)}
        log_y = np.log(yv)
    parts, fit = _determining_set(log_y, logs, LOG_R2)
    if not parts:
        return []
    X = np.column_stack([logs[c] for c in parts])
    rows = known & ~np.isnan(X).any(axis=1)
    powers, *_ = np.linalg.lstsq(np.column_stack([np.ones(rows.sum()), X[rows]]), log_y[rows], rcond=None)
    form = _power_form(dict(zip(parts, map(float, powers[1:]), strict=True)))
    shared = f"log {y!r} is linear in the logs of {parts} (R² {fit:.4f}; {y} ≈ k * {form})"
    out = []
    for c, power in zip(parts, powers[1:], strict=True):
        if power > 0:
            why = f"derived from the outcome: {shared}: a factor it is computed from, which carries the outcome"
            out.append(ColumnRole(c, "outcome_component", why))
        else:
            why = (
                f"kept as the divisor of the outcome ({shared}): the scale it is expressed per; if it was "
                "measured after the treatment, leave it out"
            )
            out.append(ColumnRole(c, "outcome_divisor", why, leave_out=False))
    return out


def _power_form(powers: dict[str, float]) -> str:
    """``a^1 * c^0.5 / b^1``: the factors, then the divisors."""
    up = " * ".join(f"{c}^{p:.2g}" for c, p in powers.items() if p > 0) or "1"
    down = [f"{c}^{-p:.2g}" for c, p in powers.items() if p <= 0]
    if not down:
        return up
    return f"{up} / {down[0]}" if len(down) == 1 else f"{up} / ({' * '.join(down)})"


def _determining_set(yv: np.ndarray, values: dict[str, np.ndarray], threshold: float) -> tuple[list[str], float]:
    """Up to :data:`MAX_PARTS` columns whose linear fit explains ``yv`` with R² >= ``threshold``
    (greedy forward selection on the rows where ``yv`` is known); ``([], r2)`` when none do."""
    ok_y = ~np.isnan(yv)
    dense = {c: v for c, v in values.items() if np.isnan(v[ok_y]).mean() <= 0.05 and np.nanstd(v) > 0}
    if not dense or ok_y.sum() < MIN_ROWS or np.nanstd(yv[ok_y]) == 0:
        return [], 0.0
    chosen: list[str] = []
    r2 = 0.0
    # Past the threshold, a column that closes half the remaining gap is another part (qx = (qxm + qxf) / 2).
    while len(chosen) < MAX_PARTS and (r2 < threshold or 1 - r2 > 1e-6):
        best, best_r2 = None, r2 if r2 < threshold else r2 + 0.5 * (1 - r2)
        for c in dense:
            if c in chosen:
                continue
            X = np.column_stack([dense[k] for k in [*chosen, c]])
            rows = ok_y & ~np.isnan(X).any(axis=1)
            if rows.sum() < MIN_ROWS:
                continue
            r = r_squared(yv[rows], X[rows])
            if r > best_r2 + 1e-6:
                best, best_r2 = c, r
        if best is None:
            break
        chosen.append(best)
        r2 = best_r2
    return (chosen, r2) if r2 >= threshold else ([], r2)


def _components(yv: np.ndarray, values: dict[str, np.ndarray], y: str) -> list[ColumnRole]:
    """Columns that explain the outcome with R² >= :data:`COMPONENT_R2` without the treatment."""
    needed, r2 = _determining_set(yv, values, COMPONENT_R2)
    if not needed or (len(needed) == 2 and _baseline_pair(*needed)):
        return []  # follow-up minus baseline: the change-score rule keeps the baseline (adjustment_policy)
    why = (
        f"derived from the outcome: {needed} explain {y!r} with R² {r2:.3f} (a linear function of at most "
        f"{MAX_PARTS} columns, without the treatment): parts or a near-copy of the outcome"
    )
    return [ColumnRole(c, "outcome_component", why) for c in needed]


def _instrument_roles(frame: pd.DataFrame, z: str, cols: list[str]) -> list[ColumnRole]:
    """Copies of the declared instrument and the parts that determine it (arm indicators summing to it):
    as controls they leave the instrument no variation of its own."""
    zv = numeric(frame, z)
    if zv is None:
        return []
    values = {c: v for c in cols if (v := numeric(frame, c)) is not None}
    out = []
    for c, v in values.items():
        r = pearson(v, zv)
        if abs(r) >= COPY_CORR:
            why = f"derived from the instrument: a copy of {z!r} (correlation {r:+.3f}); as a control it absorbs it"
            out.append(ColumnRole(c, "instrument_copy", why))
    parts, r2 = _determining_set(zv, {c: v for c, v in values.items() if c not in {o.column for o in out}}, 0.999)
    why = (
        f"derived from the instrument: {parts} determine {z!r} (R² {r2:.4f}; e.g. arm indicators that sum to it): "
        "as controls they leave the instrument no variation of its own"
    )
    return out + [ColumnRole(c, "instrument_part", why) for c in parts]


def _baseline_pair(a: str, b: str) -> bool:
    """Two names of one measurement at two times (``w0``/``w1``, ``pre_x``/``x``)."""
    stem_a, stem_b = str(a).rstrip("0123456789_"), str(b).rstrip("0123456789_")
    return (stem_a == stem_b and bool(stem_a)) or bool(PRE_NAME.search(str(a)) or PRE_NAME.search(str(b)))


def _post_named(name: str, columns: Collection[str]) -> str | None:
    """Why the name says the column is measured later (a post/after token, or a wave-2 copy), or None."""
    toks = name_tokens(name)
    hit = [t for t in toks if t in _POST_TOKENS]
    if hit:
        return f"its name contains {hit[0]!r}"
    low = str(name)
    if len(low) > 2 and low.endswith("2") and low[-2].isalpha() and low[:-1] in columns:
        return f"its name is {low[:-1]!r} with a 2 (a second wave or later measurement of {low[:-1]!r})"
    return None


def classify_columns(
    frame: pd.DataFrame,
    treatment: str,
    outcome: str,
    candidates: list[str],
    *,
    protected: Collection[str] = (),
    instrument: str | None = None,
    alpha: float = 0.05,
    max_rows: int = 20000,
    seed: int = 0,
) -> list[ColumnRole]:
    """The role of every candidate that may not be a covariate (others are not listed).

    ``protected``: columns domain knowledge places before the treatment (never classified).
    ``instrument``: the declared instrument, whose copies and determining parts are left out too.
    Rows beyond ``max_rows`` are sampled (seeded) for the correlation checks; the row-index check
    reads the rows in the order of the frame's index.
    """
    cols = [c for c in candidates if c in frame.columns and c not in (treatment, outcome) and c not in protected]
    if len(frame) > max_rows:
        frame = frame.sample(n=max_rows, random_state=seed).sort_index()
    tv, yv = numeric(frame, treatment), numeric(frame, outcome)
    out = _identifiers(frame, cols, tv, yv)
    rest = _unclassified(cols, out)
    if instrument and instrument in frame.columns:
        out += _instrument_roles(frame, instrument, rest)
        rest = _unclassified(rest, out)
    if tv is not None:
        out += treatment_roles(frame, treatment, rest)
        rest = _unclassified(rest, out)
    if yv is not None:
        out += _outcome_roles(frame, outcome, [c for c in rest if c != instrument and not PRE_NAME.search(str(c))])
        from whyflow.causal.dataprep.sibling_outcomes import sibling_outcomes

        out += sibling_outcomes(frame, outcome, _unclassified(rest, out), alpha)
        rest = _unclassified(rest, out)
    out += _post_named_roles(frame, rest, tv, alpha)
    # Last, so the representation of a categorical that is kept is one no other rule leaves out.
    kept = [c for c in candidates if c in protected and c in frame.columns and c not in (treatment, outcome)]
    kept += [r.column for r in out if not r.leave_out]
    return out + categorical_dummies(frame, _unclassified(rest, out), kept)


def _unclassified(cols: list[str], roles: list[ColumnRole]) -> list[str]:
    named = {r.column for r in roles}
    return [c for c in cols if c not in named]


def _identifiers(
    frame: pd.DataFrame, cols: list[str], tv: np.ndarray | None, yv: np.ndarray | None
) -> list[ColumnRole]:
    """Row indexes, keys and codes among ``cols``: by their values, and by their names with many values."""
    out = []
    for c in cols:
        why = _identifier(frame[c], c) or _numeric_code(frame[c], tv, yv)
        if why:
            out.append(ColumnRole(c, "identifier", why))
    return out


def _post_named_roles(frame: pd.DataFrame, cols: list[str], tv: np.ndarray | None, alpha: float) -> list[ColumnRole]:
    """Columns whose name says "after": left out when they move with the treatment, else kept with a flag."""
    from whyflow.causal.discovery.adjustment_rules import assoc_pvalue, design_block

    out = []
    for c in cols:
        named = _post_named(c, frame.columns)
        if named is None or _is_square(frame, c):
            continue
        block = design_block(frame[c])
        p = assoc_pvalue(tv, block) if tv is not None and block is not None else 1.0
        if p < alpha:
            why = (
                f"post-treatment by its name ({named}) and it moves with the treatment (p={p:.2g}): "
                "measured after the treatment"
            )
            out.append(ColumnRole(c, "post_treatment", why))
        else:
            why = (
                f"kept, but {named}, which suggests it is measured after the treatment; no association with "
                f"the treatment was found (p={p:.2g}). If it is measured after, leave it out"
            )
            out.append(ColumnRole(c, "post_treatment", why, leave_out=False))
    return out


def _is_square(frame: pd.DataFrame, c: str) -> bool:
    """``x2`` that is a function of ``x`` (a square or power term), not a second measurement."""
    stem = str(c)[:-1]
    if not str(c).endswith("2") or stem not in frame.columns:
        return False
    a, b = numeric(frame, c), numeric(frame, stem)
    if a is None or b is None:
        return False
    ok = ~(np.isnan(a) | np.isnan(b))
    if ok.sum() < MIN_ROWS:
        return False
    return r_squared(a[ok], np.column_stack([b[ok], b[ok] ** 2])) >= 0.999 or abs(spearman(a, np.abs(b))) >= 0.999


_ROLE_WORDS = (
    ("identifier", re.compile(r"identifier|\bid\b|row index|unit id", re.I)),
    ("time", re.compile(r"time column|time index|datetime", re.I)),
    ("design", re.compile(r"declared|instrument|running variable", re.I)),
    # A graph's mediator lies "on a path to the outcome" and a collider is "caused by the outcome": neither is part of it.
    ("post_treatment", re.compile(r"mediator|collider|descendant", re.I)),
    ("outcome_part", re.compile(r"outcome", re.I)),
    (
        "treatment_function",
        re.compile(r"function of the treatment|copy of the treatment|derived from the treatment", re.I),
    ),
    ("post_treatment", re.compile(r"post-treatment|after the treatment|caused by", re.I)),
    ("constant", re.compile(r"constant", re.I)),
    ("too_many_levels", re.compile(r"more than \d+ (levels|categories)|high-cardinality", re.I)),
    ("sparse", re.compile(r"missing in|too few", re.I)),
)


def role_of_reason(reason: str) -> str:
    """A short role for an exclusion that another rule made (for the report's table)."""
    for role, pattern in _ROLE_WORDS:
        if pattern.search(reason):
            return role
    return "other"


def left_out_table(excluded: dict[str, str], roles: list[ColumnRole]) -> list[dict[str, str]]:
    """``{column, role, reason}`` for every column left out of the adjustment set (the report's table)."""
    named = {r.column: r.role for r in roles if r.leave_out}
    return [
        {"column": str(c), "role": named.get(c) or role_of_reason(str(why)), "reason": str(why)}
        for c, why in excluded.items()
    ]


def left_out_summary(rows: list[dict[str, str]], limit: int = 6) -> str:
    """The console's words for the columns the role rules left out ('' when none)."""
    shown_roles = ("identifier", "outcome", "treatment", "instrument", "post")
    by_role = [r for r in rows if r["role"].startswith(shown_roles)]
    if not by_role:
        return ""
    shown = ", ".join(f"{r['column']} ({r['role']})" for r in by_role[:limit])
    return f"; left out by column role: {shown}{' ...' if len(by_role) > limit else ''}"
