"""Inference for a difference in differences with a single treated unit: placebo-in-space permutation.

Why: standard errors clustered by unit measure the uncertainty of the treated units' deviation from
the trend by the spread among treated clusters; with one treated cluster there is no such spread and
the clustered interval is not credible (Conley and Taber 2011; MacKinnon and Webb 2017). The design for
one treated unit compares its estimate with the same estimate for every untreated unit given the treated
unit's treatment path (placebos in space, as in Abadie, Diamond and Hainmueller 2010 for synthetic
control). Under the null that the effect is ``tau`` the treated unit's outcomes less ``tau`` times its
treatment are untreated outcomes, and if units are exchangeable (their deviations from the common trend
are alike) the treated unit is one draw among them: the share of units whose two-way fixed-effects
estimate is at least as large in absolute value as the treated unit's is an exact p-value. The 95%
interval is every ``tau`` this test does not reject (test inversion). With ``N`` units the smallest
p-value is ``1/N``, so a finite 95% interval needs at least :data:`MIN_UNITS` (20) units; with fewer,
no data can reject any effect at 5% and the answer is refused.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["MIN_UNITS", "placebo_in_space"]

MIN_UNITS = 20
"""Fewest units (the treated one included) for which a permutation p-value can reach 0.05 (1/20)."""
MAX_PLACEBOS = 400
"""Placebo units used at most (a seeded sample beyond it: a Monte Carlo permutation test)."""
_CELLS = 4_000_000
"""Values of the placebo indicators demeaned at once (rows x columns), about 32 MB."""
_Y, _D, _U, _T = "y_", "d_", "unit_", "time_"


def _within(M: np.ndarray, unit: np.ndarray, time: np.ndarray, tol: float = 1e-11, rounds: int = 2000) -> np.ndarray:
    """Columns of ``M`` less their unit and period effects (alternating projections; exact in one round
    on a balanced panel, convergent on an unbalanced one or with several rows per unit and period)."""
    R = np.array(M, dtype=float)
    n_u, n_t = int(unit.max()) + 1, int(time.max()) + 1
    cu, ct = np.bincount(unit, minlength=n_u)[:, None], np.bincount(time, minlength=n_t)[:, None]
    scale = max(float(np.abs(R).max()), 1.0)
    for _ in range(rounds):
        su = np.zeros((n_u, R.shape[1]))
        np.add.at(su, unit, R)
        R -= (su / np.maximum(cu, 1))[unit]
        st = np.zeros((n_t, R.shape[1]))
        np.add.at(st, time, R)
        shift = (st / np.maximum(ct, 1))[time]
        R -= shift
        if np.abs(shift).max() < tol * scale:
            break
    return R


def _accepted(a_star: float, a: np.ndarray, b: np.ndarray, alpha: float) -> tuple[float, float] | None:
    """The hull of the effects ``tau`` with permutation p-value above ``alpha``, or None if unbounded.

    The treated statistic is ``a_star - tau``; unit j's is ``a[j] - tau * b[j]``; the p-value counts the
    units (the treated one included) whose statistic is at least the treated one's in absolute value.
    """
    roots = []
    for aj, bj in zip(a, b, strict=True):
        if abs(bj - 1) > 1e-12:
            roots.append((aj - a_star) / (bj - 1))
        if abs(bj + 1) > 1e-12:
            roots.append((aj + a_star) / (bj + 1))
    pts = np.unique(np.asarray([r for r in roots if np.isfinite(r)] or [a_star]))
    width = max(float(np.ptp(pts)), abs(a_star), 1.0)

    def p_at(tau: float) -> float:
        own = abs(a_star - tau)
        return (1 + int(np.sum(np.abs(a - tau * b) >= own - 1e-12 * max(own, 1.0)))) / (len(a) + 1)

    if p_at(pts[0] - width) > alpha or p_at(pts[-1] + width) > alpha:
        return None
    tests = np.concatenate([pts, (pts[:-1] + pts[1:]) / 2])
    ok = np.sort(tests[[p_at(float(x)) > alpha for x in tests]])
    return (float(ok[0]), float(ok[-1])) if ok.size else (a_star, a_star)


def placebo_in_space(data: pd.DataFrame, alpha: float = 0.05, seed: int = 0) -> dict[str, Any]:
    """Placebo-in-space permutation inference for the one treated unit of a two-way fixed-effects DiD.

    ``data`` holds the columns y_, d_, unit_ and time_ (integer codes) of :func:`did_panel`. Each
    untreated unit is given the treated unit's treatment path by period and the same TWFE regression
    is fitted on all units; the treated unit's own estimate is the TWFE coefficient. Returns the
    estimate, the p-value of no effect, the interval by test inversion (``ci`` None when it is not
    finite, with ``reason``), the number of units compared and the spread of the placebo estimates.
    """
    unit = data[_U].to_numpy(dtype=int)
    time = data[_T].to_numpy(dtype=int)
    d = data[_D].to_numpy(dtype=float)
    treated_units = np.unique(unit[d != 0])
    if treated_units.size != 1:
        raise ValueError("placebo_in_space needs exactly one treated unit")
    star = int(treated_units[0])
    mine = unit == star
    path = pd.Series(d[mine]).groupby(time[mine]).mean()
    dose = path.reindex(range(int(time.max()) + 1)).fillna(0.0).to_numpy()[time]
    controls = np.setdiff1d(np.unique(unit), [star])
    if controls.size > MAX_PLACEBOS:
        controls = np.sort(np.random.default_rng(seed).choice(controls, MAX_PLACEBOS, replace=False))
    R = _within(np.column_stack([data[_Y].to_numpy(dtype=float), d]), unit, time)
    y_t, d_t = R[:, 0], R[:, 1]
    est = float(d_t @ y_t / (d_t @ d_t))
    a_parts, b_parts = [], []
    step = max(1, _CELLS // max(len(d), 1))  # placebo columns demeaned at once, to bound the memory
    for start in range(0, controls.size, step):
        P_t = _within(np.column_stack([dose * (unit == j) for j in controls[start : start + step]]), unit, time)
        norms = np.einsum("ij,ij->j", P_t, P_t)
        usable = norms > 1e-12 * max(float(d_t @ d_t), 1e-300)
        a_parts.append((P_t[:, usable].T @ y_t) / norms[usable])
        b_parts.append((P_t[:, usable].T @ d_t) / norms[usable])
    a = np.concatenate(a_parts) if a_parts else np.empty(0)
    b = np.concatenate(b_parts) if b_parts else np.empty(0)
    n = a.size + 1
    p0 = (1 + int(np.sum(np.abs(a) >= abs(est) - 1e-12 * max(abs(est), 1.0)))) / n
    out: dict[str, Any] = {
        "method": "placebo-in-space permutation over units, interval by test inversion",
        "estimate": round(est, 6),
        "p_value": round(p0, 6),
        "n_units_compared": n,
        "n_placebo_units": n - 1,
        "min_units": MIN_UNITS,
        "placebo_sd": round(float(np.std(a, ddof=1)), 6) if a.size > 1 else None,
        "placebo_range": [round(float(a.min()), 6), round(float(a.max()), 6)] if a.size else None,
        "treated_rank": int(np.sum(np.abs(a) >= abs(est) - 1e-12 * max(abs(est), 1.0))) + 1,
    }
    if n < MIN_UNITS:
        out["ci"] = None
        out["reason"] = (
            f"only {n} units can be compared (the treated one and {n - 1} untreated units whose estimate is "
            f"identified): the smallest permutation p-value is 1/{n} = {1 / n:.3f}, above {alpha:g}, so no effect "
            f"can be rejected and no finite 95% interval exists (at least {MIN_UNITS} units are needed)"
        )
        return out
    hull = _accepted(est, a, b, alpha)
    out["ci"] = None if hull is None else [round(hull[0], 6), round(hull[1], 6)]
    if hull is None:
        out["reason"] = (
            "the placebo estimates are too spread for the test to reject any effect: the interval is unbounded"
        )
    return out
