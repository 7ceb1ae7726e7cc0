"""DoWhy's refuters on DoWhy's ``backdoor.linear_regression`` estimate, solved by least squares.

Over the adjustment set (the coefficient of the treatment in y ~ 1 + t + W, categorical
covariates one-hot encoded with the first level dropped), computed here by least squares instead
of by DoWhy's per-simulation refits (which cost ~1 s each on 5,000 rows x 80 covariates; these cost milliseconds):
the placebo treatment (permute), the random common cause and the data subset, each repeated
``simulations`` times and reported as the mean new effect and DoWhy's p-value (a one-tailed
normal test under 100 simulations, a two-sided percentile test from 100; the placebo is tested
against 0, the others against the estimate), and the added unobserved common cause over a grid
of strengths. The procedures are DoWhy 0.14's, with the same random draws in the same order
(``RandomState(seed)`` per refuter; the grid as under ``np.random.seed(seed)``), so on the same
data the numbers equal DoWhy's to rounding (``tests/stats/test_refuters.py`` checks it against
DoWhy itself) — with one deliberate difference in the grid: DoWhy adds each cell's simulated
confounder to the data the previous cells already changed, so its strongest cell carries nine
stacked confounders (on the demo the estimate falls to 159 of 1,354); here every cell starts
from the original data, so a cell is what one confounder of its strengths does, as the report
says. The design is reduced once to an orthonormal basis (Frisch-Waugh-Lovell), so a new treatment column
costs O(rows x rank) and a data subset a rank x rank Gram matrix: cheap at any width.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd

from whyflow.causal.review.sensitivity import is_binary
from whyflow.runtime.parallel import map_parts

__all__ = ["REFUTERS", "failure_reason", "run_refuters"]


_BLOCK = 4_000_000
"""Most numbers one block of simulated columns holds (rows x simulations), bounding memory."""
_COLLINEAR = 1e-9
"""A treatment whose residual keeps less than this share of its variation is not separable."""


class _Backdoor:
    """DoWhy's ``backdoor.linear_regression`` effect: the coefficient of t in y ~ 1 + t + W.

    [1, W] is reduced once to an orthonormal basis Q of its column space (an SVD of the
    column-scaled matrix, so collinear or constant covariates drop out as statsmodels' pinv
    drops them), and every refit is Frisch-Waugh-Lovell: with r = t - Q Q't, the effect is
    r'y / r'r. A new treatment column costs O(n * rank), not a new fit of the whole model.
    """

    def __init__(self, covariates: np.ndarray, t: np.ndarray, y: np.ndarray) -> None:
        n = len(t)
        if n < 2:
            raise ValueError(f"{n} complete row(s): too few to estimate the effect")
        x = np.column_stack([np.ones(n), covariates])
        norms = np.linalg.norm(x, axis=0)
        x = x[:, norms > 0] / norms[norms > 0]
        u, s, _ = np.linalg.svd(x, full_matrices=False)
        self.basis = u[:, s > s[0] * max(x.shape) * np.finfo(float).eps]
        self.n, self.t, self.y = n, t, y
        self.rt, self.ry = self.residual(t), self.residual(y)

    def residual(self, v: np.ndarray) -> np.ndarray:
        """``v`` (a column or an n x k block) with [1, W] partialled out."""
        return v - self.basis @ (self.basis.T @ v)

    def effect(self, t: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The effect of each treatment column of ``t`` (n or n x k) on ``y``: r'y / r'r."""
        r = self.residual(t)
        den = np.einsum("i...,i...->...", r, r)
        _separable(den, np.einsum("i...,i...->...", t - t.mean(axis=0), t - t.mean(axis=0)))
        return np.asarray(r.T @ y / den, dtype=float)


def _separable(residual_ss: Any, total_ss: Any, where: str = "") -> None:
    if np.any(np.asarray(residual_ss) <= _COLLINEAR * np.asarray(total_ss)):
        raise ValueError(f"the treatment is collinear with the adjustment set{where}")


def _blocks(simulations: int, n: int) -> Iterator[int]:
    """Simulation counts per block, so that one block holds at most ``_BLOCK`` numbers."""
    size = max(1, _BLOCK // max(n, 1))
    for start in range(0, simulations, size):
        yield min(size, simulations - start)


def _significance(value: float, simulations: np.ndarray) -> float:
    """DoWhy's ``test_significance`` (test_type "auto") of ``value`` against the simulated effects.

    Under 100 simulations a normal test: z = (value - mean) / sd (population sd), one tail
    (1 - Phi(z) for z > 0, else Phi(z)); from 100 on a two-sided percentile p-value.
    """
    from scipy.special import ndtr

    sims = np.asarray(simulations, dtype=float)
    if len(sims) >= 100:
        half = float(np.mean((sims > value) + 0.5 * (sims == value)))
        return 2 * min(half, 1 - half)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (value - sims.mean()) / sims.std()
    return float(1 - ndtr(z) if z > 0 else ndtr(z))


def _refutation(value: float, simulations: np.ndarray) -> dict[str, Any]:
    return {"new_effect": float(np.mean(simulations)), "p_value": _significance(value, simulations)}


def _placebo(fit: _Backdoor, simulations: int, seed: int) -> dict[str, Any]:
    """DoWhy's placebo_treatment_refuter (permute): the treatment permuted, tested against 0."""
    rs = np.random.RandomState(seed)
    effects = []
    for block in _blocks(simulations, fit.n):
        placebo = np.column_stack([fit.t[rs.choice(fit.n, size=fit.n, replace=False)] for _ in range(block)])
        effects.append(fit.effect(placebo, fit.ry))
    return _refutation(0.0, np.concatenate(effects))


def _random_common_cause(fit: _Backdoor, estimate: float, simulations: int, seed: int) -> dict[str, Any]:
    """DoWhy's random_common_cause: a N(0, 1) covariate added, the effect refitted each time."""
    rs = np.random.RandomState(seed)
    rt, ry = fit.rt, fit.ry
    tt, ty = float(rt @ rt), float(rt @ ry)
    effects = []
    for block in _blocks(simulations, fit.n):
        rw = fit.residual(rs.normal(size=(block, fit.n)).T)  # the same stream as one draw per simulation
        tw, ww, wy = rw.T @ rt, np.einsum("ij,ij->j", rw, rw), rw.T @ ry
        det = tt * ww - tw * tw
        _separable(det, tt * ww)
        effects.append((ww * ty - tw * wy) / det)  # the t coefficient of the 2 x 2 system on residuals
    return _refutation(estimate, np.concatenate(effects))


def _data_subset(fit: _Backdoor, estimate: float, simulations: int, seed: int, fraction: float) -> dict[str, Any]:
    """DoWhy's data_subset_refuter: the effect refitted on ``simulations`` random subsets.

    A subset keeps the rows pandas' ``sample(frac=fraction, random_state=rs)`` keeps: the first
    round(fraction * n) of ``rs.permutation(n)`` (what legacy ``rs.choice`` draws). On those rows
    Q spans the same space as [1, W], and shifting t or y by a vector of that space leaves the t
    coefficient unchanged, so a refit needs only the subset's Gram matrices of Q and of the full
    data's residuals [r_t, r_y], taken as the full data's minus the left-out rows' when fewer
    rows are left out than kept. The Gram of Q is inverted through its eigenvalues (a pseudo-
    inverse, so a category absent from a subset drops out as it does in statsmodels).
    """
    rs = np.random.RandomState(seed)
    n, k, q = fit.n, round(fraction * fit.n), fit.basis
    r = np.column_stack([fit.rt, fit.ry])
    complement = k > n - k
    base = (q.T @ q, q.T @ r, r.T @ r) if complement else (0.0, 0.0, 0.0)
    sign = -1.0 if complement else 1.0
    rows = n - k if complement else k
    effects = []
    for block in _blocks(simulations, rows * q.shape[1]):
        order = np.stack([rs.permutation(n) for _ in range(block)])
        idx = order[:, k:] if complement else order[:, :k]
        qs, rs_ = q[idx], r[idx]  # block x rows x rank, block x rows x 2
        qt = qs.transpose(0, 2, 1)
        gram = base[0] + sign * (qt @ qs)
        cross = base[1] + sign * (qt @ rs_)
        rr = base[2] + sign * (rs_.transpose(0, 2, 1) @ rs_)
        values, vectors = np.linalg.eigh(gram)
        keep = values > values.max(axis=1, keepdims=True) * 1e-10
        inverse = np.divide(1.0, values, out=np.zeros_like(values), where=keep)
        z = vectors.transpose(0, 2, 1) @ cross
        explained = np.einsum("bik,bi,bil->bkl", z, inverse, z)
        tt, ty = rr[:, 0, 0] - explained[:, 0, 0], rr[:, 0, 1] - explained[:, 0, 1]
        _separable(tt, rr[:, 0, 0], f" on a {k}-row subset")
        effects.append(ty / tt)
    return _refutation(estimate, np.concatenate(effects))


def _flip_threshold(probability: float) -> float:
    """DoWhy's binary flip: a unit flips when its N(0, 1) draw is at least this quantile."""
    from scipy.special import ndtri

    alpha = 2 * probability - 1 if probability >= 0.5 else 1 - 2 * probability
    return float(ndtri((1.0 - alpha) / 2 if probability >= 0.5 else (1.0 + alpha) / 2))


def _unobserved_grid(
    fit: _Backdoor, binary_t: bool, seed: int, kappa_t: list[float], kappa_y: list[float]
) -> np.ndarray:
    """DoWhy's add_unobserved_common_cause (direct simulation) over a grid of strengths.

    As DoWhy (0.14) does with numpy's global generator seeded: first a len(kappa_t) x
    len(kappa_y) uniform matrix is drawn, then one N(0, 1) confounder u per cell (row-major)
    flips the treatment where u >= Phi^-1(1 - kappa_t) (or adds kappa_t * u to a continuous
    one) and subtracts kappa_y * u from the outcome. Unlike DoWhy, whose grid loop applies each
    cell to the data the previous cells already changed (so the confounders stack), every cell
    starts from the original data: the cell is the effect left under one confounder of those
    strengths. The first cell equals DoWhy's.
    """
    rs = np.random.RandomState(seed)
    rs.random_sample((len(kappa_t), len(kappa_y)))
    grid = np.empty((len(kappa_t), len(kappa_y)))
    for i, strength_t in enumerate(kappa_t):
        for j, strength_y in enumerate(kappa_y):
            t, y = fit.t.copy(), fit.y.copy()
            u = rs.standard_normal(fit.n)
            if binary_t:
                flip = _flip_threshold(strength_t) <= u
                t[flip] = 1 - t[flip]
            else:
                t += strength_t * u
            y -= strength_y * u
            grid[i, j] = fit.effect(t, y)
    return grid


def run_refuters(
    frame: pd.DataFrame,
    treatment: str,
    outcome: str,
    adjustment: list[str],
    *,
    simulations: int = 50,
    seed: int = 0,
    subset_fraction: float = 0.8,
    flip_probabilities: tuple[float, ...] = (0.02, 0.05, 0.1),
    outcome_strengths_sd: tuple[float, ...] = (0.05, 0.1, 0.25),
) -> dict[str, Any]:
    """DoWhy's four refuters on a backdoor linear-regression estimate of the effect.

    Each p-value refuter draws from its own ``RandomState(seed)``, as DoWhy does when given one.
    The unobserved common cause flips a binary treatment with the given probabilities (a
    continuous one gets a linear effect of that many treatment SDs) and shifts the outcome by
    the given multiples of its SD. A refuter that cannot be computed is named in ``skipped``.
    """
    from threadpoolctl import threadpool_limits

    if simulations < 1:
        raise ValueError(f"simulations must be at least 1, got {simulations}")
    data = frame[[treatment, outcome, *adjustment]].dropna().reset_index(drop=True)
    binary_t = is_binary(data[treatment])
    t = data[treatment].to_numpy(dtype=float)
    y = data[outcome].to_numpy(dtype=float)
    # DoWhy one-hot encodes object, string and category covariates, dropping the first level.
    covariates = pd.get_dummies(data[adjustment], drop_first=True, dtype=float).to_numpy(dtype=float)
    with threadpool_limits(limits=1):  # small BLAS calls: threads only contend (2-5x slower on 2 busy cores)
        fit = _Backdoor(covariates, t, y)
        estimate = float(fit.effect(t, y))
        out: dict[str, Any] = {"estimate": estimate, "n_used": len(data), "simulations": simulations}
        job = _RefuterJob(
            fit,
            estimate,
            data,
            treatment,
            outcome,
            binary_t,
            simulations,
            seed,
            subset_fraction,
            flip_probabilities,
            outcome_strengths_sd,
        )
        for name, (ok, value) in zip(REFUTERS, map_parts(job, REFUTERS, name="refuter"), strict=True):
            if ok:
                out[name] = value
            else:  # one refuter's failure is a recorded skip
                out.setdefault("skipped", {})[name] = value
    return out


REFUTERS = ("placebo_treatment_refuter", "random_common_cause", "data_subset_refuter", "add_unobserved_common_cause")
"""DoWhy's four refuters in report order; each is one part of a fan-out (:func:`whyflow.runtime.parallel.map_parts`)."""


class _RefuterJob:
    """One refuter by name, seeded by ``seed``: ``(True, result)``, or ``(False, reason)`` for a skip."""

    def __init__(self, fit: _Backdoor, estimate: float, data: pd.DataFrame, *args: Any) -> None:
        self.fit, self.estimate, self.data, self.args = fit, estimate, data, args

    def __call__(self, name: str) -> tuple[bool, Any]:
        from threadpoolctl import threadpool_limits

        treatment, outcome, binary_t, sims, seed, fraction, flips, strengths = self.args
        fit, est = self.fit, self.estimate
        try:
            with threadpool_limits(limits=1):
                if name == "placebo_treatment_refuter":
                    return True, _placebo(fit, sims, seed)
                if name == "random_common_cause":
                    return True, _random_common_cause(fit, est, sims, seed)
                if name == "data_subset_refuter":
                    return True, _data_subset(fit, est, sims, seed, fraction)
                return True, _unobserved(fit, self.data, treatment, outcome, binary_t, seed, flips, strengths)
        except Exception as exc:  # noqa: BLE001 - one refuter's failure is a recorded skip
            return False, failure_reason(exc)


def failure_reason(exc: BaseException) -> str:
    """An exception as one short line for a skip note: ``ValueError: strata too small``."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__


def _unobserved(
    fit: _Backdoor,
    data: pd.DataFrame,
    treatment: str,
    outcome: str,
    binary_t: bool,
    seed: int,
    flip_probabilities: tuple[float, ...],
    outcome_strengths_sd: tuple[float, ...],
) -> dict[str, Any]:
    """The added-unobserved-common-cause grid: effect remaining at each pair of strengths."""
    sd_y = float(data[outcome].std())
    kappa_y = [s * sd_y for s in outcome_strengths_sd]
    if binary_t:
        kappa_t, effect_on_t = list(flip_probabilities), "binary_flip"
    else:
        kappa_t, effect_on_t = [p * float(data[treatment].std()) for p in flip_probabilities], "linear"
    grid = _unobserved_grid(fit, binary_t, seed, kappa_t, kappa_y)
    return {
        "effect_on_treatment": effect_on_t,
        "strengths_treatment": list(flip_probabilities),
        "strengths_outcome_sd": list(outcome_strengths_sd),
        "new_effects": grid.tolist(),
        "min_effect": float(grid.min()),
        "max_effect": float(grid.max()),
        "strongest_effect": float(grid[-1, -1]),
    }
