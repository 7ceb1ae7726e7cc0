"""Positive evidence for leaving a variable out of the adjustment set, and with/without estimates.

Why: dropping a true confounder biases the effect; a test that fails to reject is no evidence
that a variable is harmless to leave out: a true confounder can show an F-test p of 0.16, site
dummies can look like "possible instruments", and a product x3·x4 can confound with a near-zero
marginal association.
So confounder discovery keeps every covariate that may precede the treatment and drops one only
on positive evidence. This module holds the data facts that count as such evidence:

* :func:`outcome_parts`: columns that are parts or copies of the outcome (the covariates explain
  the outcome *without the treatment* to within 0.01% of its variance: a change score
  ``y = w1 - w0`` with both columns present, a rescaled copy). Adjusting for them leaves the
  treatment nothing to explain (a zero effect with a zero-width interval).
* :func:`strong_descendants`: variables reached from the treatment (or the outcome) by directed
  graph edges that every one has strong bootstrap support.
* :func:`onehot_reference`: one column of a complete one-hot group (the dummies sum to 1 in every
  row), left out so the group is not collinear with the intercept; the group stays adjusted.

and :func:`with_without`, the OLS effect with and without a doubtful variable, so a flag comes
with a number the critique and the reader can weigh.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["OutcomeParts", "as_read", "onehot_reference", "outcome_parts", "strong_descendants", "with_without"]

DETERMINED_R2 = 0.9999
"""The covariates 'determine' the outcome when they explain this share of its variance or more."""


@dataclass
class OutcomeParts:
    """Columns to exclude as parts or copies of the outcome, and baselines kept with a flag."""

    drop: dict[str, str] = field(default_factory=dict)
    keep_flagged: dict[str, str] = field(default_factory=dict)


def _numeric(frame: pd.DataFrame, cols: list[str]) -> list[str]:
    return [c for c in cols if pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c])]


def _r2(y: np.ndarray, X: np.ndarray) -> tuple[float, np.ndarray]:
    """R² of the least-squares fit of ``y`` on ``X`` plus an intercept, and the slopes."""
    design = np.column_stack([np.ones(len(y)), X])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - design @ coef
    return float(1.0 - resid.var() / y.var()), coef[1:]


def outcome_parts(
    frame: pd.DataFrame, y: str, candidates: list[str], pre_treatment: set[str], max_rows: int = 20000
) -> OutcomeParts:
    """Columns that are parts or copies of the outcome ``y`` (see the module docstring).

    When the numeric candidates explain ``y`` to R² >= :data:`DETERMINED_R2` without the
    treatment, the columns whose removal breaks that fit are the parts. A difference ``y = k(a - b)``
    is read as follow-up minus baseline: ``a`` (which carries the outcome's change) is dropped,
    ``b`` is kept as the baseline measurement with a flag (unless domain knowledge puts ``a``
    before the treatment). Any other exact combination drops all its parts but those known to
    precede the treatment. Redundant copies (no single essential column) go one at a time, the
    column most correlated with ``y`` first.
    """
    out = OutcomeParts()
    cols = _numeric(frame, candidates)
    sub = frame[[y, *cols]].dropna()
    if len(sub) < 30 or not cols or sub[y].std() == 0:
        return out
    if len(sub) > max_rows:
        sub = sub.sample(n=max_rows, random_state=0)
    yv = sub[y].to_numpy(float)
    live = list(cols)
    for _ in range(len(cols)):
        r2, _ = _r2(yv, sub[live].to_numpy(float))
        if r2 < DETERMINED_R2:
            break
        essential = [c for c in live if _r2(yv, sub[[x for x in live if x != c]].to_numpy(float))[0] < DETERMINED_R2]
        if not essential:
            corr = {c: abs(float(np.corrcoef(yv, sub[c].to_numpy(float))[0, 1])) for c in live}
            c = max(live, key=lambda k: (np.nan_to_num(corr[k]), k))
            out.drop[c] = f"a copy of the outcome {y!r} (|correlation| {corr[c]:.4f}; other columns copy it too)"
            live.remove(c)
            continue
        _, coef = _r2(yv, sub[essential].to_numpy(float))
        share = f"the outcome {y!r} is determined by {essential} (R² ≥ {DETERMINED_R2} without the treatment)"
        diff = _difference(essential, coef)
        if diff is not None and diff[0] not in pre_treatment:
            follow, base = diff
            out.drop[follow] = (
                f"part of the outcome: {share}, as {follow} - {base}; {follow} is the follow-up measurement that "
                "carries the outcome's change (measured after the treatment)"
            )
            out.keep_flagged[base] = (
                f"kept as the baseline of the change-score outcome ({y} = {follow} - {base}); if it was measured after "
                "the treatment, leave it out"
            )
            live.remove(follow)
            continue
        dropped = [c for c in essential if c not in pre_treatment] or essential
        for c in dropped:
            out.drop[c] = f"part of the outcome: {share}; adjusting for it leaves the treatment nothing to explain"
            live.remove(c)
    return out


def _difference(cols: list[str], coef: np.ndarray) -> tuple[str, str] | None:
    """(a, b) when the fit is y = k(a - b) with k > 0; None otherwise."""
    if len(cols) != 2 or not np.all(np.isfinite(coef)):
        return None
    a, b = float(coef[0]), float(coef[1])
    if abs(a) < 1e-9 or abs(a + b) > 1e-3 * abs(a):
        return None
    return (cols[0], cols[1]) if a > 0 else (cols[1], cols[0])


def strong_descendants(edges: list[Any], sources: list[str], min_support: float) -> set[str]:
    """Nodes reached from ``sources`` along directed edges with bootstrap support >= ``min_support``."""
    children: dict[str, list[str]] = {}
    for e in edges:
        if e.edge_type == "directed" and e.confidence >= min_support:
            children.setdefault(e.source, []).append(e.target)
    seen: set[str] = set()
    todo = [s for s in sources]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return seen - set(sources)


def onehot_reference(frame: pd.DataFrame, cols: list[str]) -> dict[str, list[str]]:
    """Reference column -> its one-hot group, for 0/1 columns sharing a name prefix that sum to 1
    in every complete row (a categorical written as all its dummies)."""
    groups: dict[str, list[str]] = {}
    for c in cols:
        s = frame[c]
        if "_" not in str(c) or not pd.api.types.is_numeric_dtype(s) or not s.dropna().isin((0, 1)).all():
            continue
        groups.setdefault(str(c).rsplit("_", 1)[0], []).append(c)
    out: dict[str, list[str]] = {}
    for members in groups.values():
        if len(members) < 2:
            continue
        block = frame[members].dropna()
        if len(block) and bool((block.sum(axis=1) == 1).all()):
            out[members[0]] = members
    return out


def with_without(
    frame: pd.DataFrame, t: str, y: str, adjust: list[str], var: str, max_rows: int = 20000
) -> dict[str, float] | None:
    """OLS effect of ``t`` on ``y`` adjusting for ``adjust`` with and without ``var`` (HC1 errors).

    Returns ``{"with", "se_with", "without", "se_without", "shift_in_se"}`` or None when it cannot
    be computed (non-numeric columns, too few rows).
    """
    import statsmodels.api as sm

    from whyflow.causal.discovery.adjustment_rules import design

    cols = list(dict.fromkeys([*adjust, var]))
    sub = frame[[t, y, *cols]].dropna()
    if len(sub) > max_rows:
        sub = sub.sample(n=max_rows, random_state=0)
    if len(sub) < 30 or not pd.api.types.is_numeric_dtype(sub[t]):
        return None
    res: dict[str, float] = {}
    for label, use in (("with", cols), ("without", [c for c in cols if c != var])):
        X = np.column_stack([np.ones(len(sub)), sub[t].to_numpy(float), design(sub, use)])
        fit = sm.OLS(sub[y].to_numpy(float), X).fit(cov_type="HC1")
        res[label], res[f"se_{label}"] = float(fit.params[1]), float(fit.bse[1])
    se = max(res["se_with"], res["se_without"], 1e-12)
    res["shift_in_se"] = abs(res["with"] - res["without"]) / se
    return res


RAW_READ_LIMIT = 200 * 2**20
"""Bytes up to which the input file is read again for the missingness of the outcome."""


def as_read(path: str | None, frame: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    """``cols`` of the input file ``path`` as read, numeric where they parse; ``frame`` when the file
    is not at hand, too large, unreadable or lacks the first column (the outcome). Columns the file
    does not have (the missing-value flags data repair adds) are left out of the result.

    Why: data repair drops the rows without an outcome and imputes covariates, which hides a
    column recorded only where the outcome is (the answers a score is summed from).
    """
    from pathlib import Path

    from whyflow.core.errors import WhyflowError
    from whyflow.runtime.data import read_table

    if not path or not Path(path).is_file() or Path(path).stat().st_size > RAW_READ_LIMIT:
        return frame
    try:
        raw = read_table(path)
    except (WhyflowError, ValueError, OSError):
        return frame
    if not cols or cols[0] not in raw.columns:
        return frame
    present = [c for c in cols if c in raw.columns]
    out = pd.DataFrame({c: pd.to_numeric(raw[c], errors="coerce") for c in present})
    return out if out[cols[0]].notna().any() else frame
