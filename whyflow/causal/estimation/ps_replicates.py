"""Bootstrap replicates of DoWhy's propensity-score matching and stratification, vectorised.

DoWhy 0.14's ``PropensityScoreStratificationEstimator`` and ``PropensityScoreMatchingEstimator``
cost milliseconds per call in pandas bookkeeping (group-bys, ``filter`` with a Python lambda,
two ball trees), so a 200-resample bootstrap costs seconds. The functions here compute the very
same numbers for all resamples at once with numpy, following DoWhy's code line by line:

* **Stratification** (``_get_strata`` and ``estimate_effect``): stratum
  ``round(rank(ps) / n * num_strata)`` with average ranks for ties and numpy's round-half-to-even,
  strata kept only when both arms have *more than* ``clipping_threshold`` rows, stratum effect
  ``mean(y | treated) - mean(y | control)``, weighted by the stratum's treated count (ATT), control
  count (ATC) or size (ATE) over the kept strata. A resample with no kept stratum is one where
  DoWhy raises ``ValueError``: its replicate is NaN (the caller skips it, as it skipped the error).
* **Matching** (``estimate_effect``): each treated row matched with replacement to the control row
  of nearest propensity (1-NN, ``sklearn`` ball tree, Euclidean in one dimension) and vice versa;
  ATT and ATC are the mean matched differences, ATE their average weighted by the arm sizes.

The propensity score is the ``_ps`` column carried by every resample: DoWhy finds the column and
does not refit its model, so the score is held fixed at the full-sample fit, as here.

Matching has one thing a re-implementation cannot copy: which of several *equally* near units the
ball tree returns. It matters only when those units have different outcomes. Such matches (near
ties within a relative 1e-9, or different units sharing a score) are flagged, and the caller
recomputes those resamples with DoWhy itself, so every replicate equals DoWhy's to rounding.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "bootstrap_indices",
    "stratification_replicates",
    "matching_replicates",
    "tied_units",
    "bootstrap_se",
    "TIE_RTOL",
]

TIE_RTOL = 1e-9
"""Two candidate matches whose distances agree to this relative tolerance count as tied."""

_BLOCK = 1_000_000
"""Rows (resamples x resample size) handled per vectorised block, to bound memory."""


def bootstrap_indices(t: np.ndarray, reps: int, seed: int, cap: int) -> np.ndarray:
    """The resamples' row indices, one row per usable resample (shape ``(used, m)``, m = min(n, cap)).

    Draws exactly as the original loop did, ``rng.integers(0, n, size=m)`` once per resample from
    ``default_rng(seed)``, and drops resamples that hold a single arm, so replicate i here is
    resample i there.
    """
    rng = np.random.default_rng(seed)
    n = len(t)
    m = min(n, cap)
    kept = []
    for _ in range(reps):
        idx = rng.integers(0, n, size=m)
        arm = t[idx]
        if arm.min() != arm.max():
            kept.append(idx)
    return np.array(kept, dtype=np.intp).reshape(len(kept), m)


def _blocks(idx: np.ndarray) -> list[np.ndarray]:
    per = max(1, _BLOCK // max(idx.shape[1], 1))
    return [idx[i : i + per] for i in range(0, len(idx), per)]


def _sorted_rows(ps: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Each resample's rows ordered by score: one sort of the sample, then an integer sort per resample."""
    order = np.argsort(ps, kind="stable")
    position = np.empty(len(ps), dtype=np.intp)
    position[order] = np.arange(len(ps))
    return order[np.sort(position[idx], axis=1)]


def _average_ranks(s: np.ndarray) -> np.ndarray:
    """Average ranks (1-based) of rows already sorted ascending, as pandas ``rank()`` gives them."""
    r, m = s.shape
    pos = np.broadcast_to(np.arange(m), (r, m))
    start = np.ones((r, m), dtype=bool)
    start[:, 1:] = s[:, 1:] != s[:, :-1]
    end = np.ones((r, m), dtype=bool)
    end[:, :-1] = start[:, 1:]
    first = np.maximum.accumulate(np.where(start, pos, 0), axis=1)
    last = np.minimum.accumulate(np.where(end, pos, m - 1)[:, ::-1], axis=1)[:, ::-1]
    return (first + last + 2) / 2.0  # mean of the ranks first+1 .. last+1, exact in float


def stratification_replicates(
    ps: np.ndarray,
    t: np.ndarray,
    y: np.ndarray,
    idx: np.ndarray,
    num_strata: int,
    clipping_threshold: int,
    units: str,
) -> np.ndarray:
    """DoWhy's stratification estimate on each resample ``ps[idx[i]]`` etc.; NaN where DoWhy raises."""
    out = [_strat_block(ps, t, y, b, num_strata, clipping_threshold, units) for b in _blocks(idx)]
    return np.concatenate(out) if out else np.empty(0)


def _strat_block(
    ps: np.ndarray, t: np.ndarray, y: np.ndarray, idx: np.ndarray, k: int, clip: int, units: str
) -> np.ndarray:
    r, m = idx.shape
    rows = _sorted_rows(ps, idx)
    rank = _average_ranks(ps[rows])
    strata = np.round(rank / m * k).astype(np.intp)  # DoWhy: (rank / num_rows * num_strata).round(0)
    width = int(strata.max()) + 1
    flat = (np.arange(r)[:, None] * width + strata).ravel()
    tr = t[rows].ravel().astype(float)
    yy = y[rows].ravel().astype(float)

    def total(w: np.ndarray) -> np.ndarray:
        return np.bincount(flat, weights=w, minlength=r * width).reshape(r, width)

    n_t, n_c = total(tr), total(1.0 - tr)
    sum_t, sum_c = total(tr * yy), total((1.0 - tr) * yy)
    keep = np.minimum(n_t, n_c) > clip
    with np.errstate(invalid="ignore", divide="ignore"):
        effect = np.where(keep, sum_t / n_t - sum_c / n_c, 0.0)
    if units == "att":
        w = n_t
    elif units == "atc":
        w = n_c
    elif units == "ate":
        w = n_t + n_c
    else:
        raise ValueError("Target units string value not supported")
    w = np.where(keep, w, 0.0)
    denom = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        est = (effect * w).sum(axis=1) / denom
    return np.where(keep.any(axis=1), est, np.nan)


def tied_units(ps: np.ndarray, t: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Units sharing their propensity score and arm with another unit of different outcome.

    A match to such a unit depends on the ball tree's visiting order, which is not reproduced.
    """
    order = np.lexsort((y, ps, t))
    ts, ps_s, ys = t[order], ps[order], y[order]
    same = (ts[1:] == ts[:-1]) & (ps_s[1:] == ps_s[:-1])
    group = np.concatenate([[0], np.cumsum(~same)])
    lo = np.minimum.reduceat(ys, np.flatnonzero(np.r_[True, ~same]))
    hi = np.maximum.reduceat(ys, np.flatnonzero(np.r_[True, ~same]))
    flag = np.empty(len(ps), dtype=bool)
    flag[order] = (lo != hi)[group]
    return flag


def matching_replicates(
    ps: np.ndarray, t: np.ndarray, y: np.ndarray, idx: np.ndarray, units: str, tied: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """DoWhy's 1-NN matching estimate on each resample, and which resamples had an ambiguous match.

    An ambiguous resample's value is not DoWhy's (the ball tree may pick another of the tied
    units): recompute it with DoWhy. ``tied`` is ``tied_units(ps, t, y)`` where the caller has it.
    """
    if tied is None:
        tied = tied_units(ps, t, y)
    vals, amb = [], []
    for b in _blocks(idx):
        v, a = _match_block(ps, t, y, tied, b, units)
        vals.append(v)
        amb.append(a)
    if not vals:
        return np.empty(0), np.zeros(0, dtype=bool)
    return np.concatenate(vals), np.concatenate(amb)


def _nearest(
    s: np.ndarray, rows: np.ndarray, is_target: np.ndarray, y: np.ndarray, tied: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """For each position of sorted rows, the unit of nearest score among ``is_target`` positions.

    Returns the matched unit (original row index) and whether the choice is ambiguous.
    """
    r, m = s.shape
    pos = np.broadcast_to(np.arange(m), (r, m))
    left = np.maximum.accumulate(np.where(is_target, pos, -1), axis=1)
    right = np.minimum.accumulate(np.where(is_target, pos, m)[:, ::-1], axis=1)[:, ::-1]
    has_l, has_r = left >= 0, right < m
    li, ri = np.clip(left, 0, m - 1), np.clip(right, 0, m - 1)
    take = np.arange(r)[:, None]
    d_l = np.where(has_l, np.abs(s - s[take, li]), np.inf)
    d_r = np.where(has_r, np.abs(s[take, ri] - s), np.inf)
    use_r = d_r < d_l
    unit_l, unit_r = rows[take, li], rows[take, ri]
    unit = np.where(use_r, unit_r, unit_l)
    near = has_l & has_r & (np.abs(d_l - d_r) <= TIE_RTOL * np.maximum(d_l, d_r))
    ambiguous = (near & (y[unit_l] != y[unit_r])) | tied[unit]
    return unit, ambiguous


def _match_block(
    ps: np.ndarray, t: np.ndarray, y: np.ndarray, tied: np.ndarray, idx: np.ndarray, units: str
) -> tuple[np.ndarray, np.ndarray]:
    rows = _sorted_rows(ps, idx)
    s = ps[rows]
    treated = t[rows] == 1
    control = t[rows] == 0
    yy = y[rows].astype(float)
    to_control, amb_c = _nearest(s, rows, control, y, tied)
    to_treated, amb_t = _nearest(s, rows, treated, y, tied)
    n_t, n_c = treated.sum(axis=1), control.sum(axis=1)
    att = np.where(treated, yy - y[to_control], 0.0).sum(axis=1) / n_t
    atc = np.where(control, y[to_treated] - yy, 0.0).sum(axis=1) / n_c
    ambiguous = (amb_c & treated).any(axis=1) | (amb_t & control).any(axis=1)
    if units == "att":
        return att, ambiguous
    if units == "atc":
        return atc, ambiguous
    if units == "ate":
        return (att * n_t + atc * n_c) / (n_t + n_c), ambiguous
    raise ValueError("Target units string value not supported")


def bootstrap_se(draws: np.ndarray, reps: int, m: int, n: int) -> tuple[float, int]:
    """SE of the finite replicates (m-out-of-n rescaled by sqrt(m/n)); NaN below max(10, reps/2)."""
    ok = draws[np.isfinite(draws)]
    if len(ok) < max(10, reps // 2):
        return float("nan"), len(ok)
    return float(np.std(ok, ddof=1) * np.sqrt(m / n)), len(ok)
