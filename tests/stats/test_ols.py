"""Least squares a block of rows at a time gives statsmodels' OLS with HC1 standard errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import statsmodels.api as sm

from benchmarks import synthetic_effects as S
from whyflow.causal.discovery.adjustment import prepare
from whyflow.causal.estimation import backdoor as E
from whyflow.causal.estimation import ols


def _statsmodels(y: np.ndarray, exog: np.ndarray) -> tuple[float, float, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = sm.OLS(y, exog).fit(cov_type="HC1")
    return float(fit.params[1]), float(fit.bse[1]), float(fit.rsquared)


def _design(n: int, seed: int, extra: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(n, 6)) * [1, 10, 0.1, 1e3, 1, 1]  # columns on different scales
    t = (rng.random(n) < 1 / (1 + np.exp(-w[:, 0]))).astype(float)
    y = 1.5 * t + w @ rng.normal(size=6) + rng.standard_t(4, n) * (1 + np.abs(w[:, 0]))  # heteroscedastic
    if extra == "collinear":  # a column repeated: rank-deficient, statsmodels' pseudo-inverse drops it
        w = np.column_stack([w, w[:, 1]])
    elif extra == "dummies":  # a categorical as 0/1 columns
        w = np.column_stack([w, np.eye(3)[rng.integers(0, 3, n)][:, 1:]])
    return np.column_stack([np.ones(n), t, w]), y


@pytest.mark.parametrize("extra", ["plain", "collinear", "dummies"])
@pytest.mark.parametrize("block_rows", [97, 1000, 65_536])
def test_blocked_fit_equals_statsmodels(extra: str, block_rows: int) -> None:
    """Coefficient, HC1 SE and R squared agree with sm.OLS to 1e-10 relative, whatever the block size."""
    exog, y = _design(5000, seed=len(extra) + block_rows, extra=extra)
    want = _statsmodels(y, exog)
    got = ols.blocked(y, lambda a, b: exog[a:b], exog.shape[1], block_rows=block_rows)
    np.testing.assert_allclose(got, want, rtol=1e-10)
    assert ols.statsmodels_order(y, lambda: exog) == want  # the small-data path: the same bits


def test_regression_adjustment_on_large_data_is_blocked_and_matches_statsmodels() -> None:
    """At BLOCKED_FROM_CELLS the estimator takes the blocked path, with and without the held design."""
    frame, truth = S.linear_confounding(n=200_000, seed=5)
    covs = ["x1", "x2", "x3"]
    rng = np.random.default_rng(1)
    for k in range(16):
        frame[f"w{k:02d}"] = rng.normal(size=len(frame))
        covs.append(f"w{k:02d}")
    p = prepare(frame, truth["treatment"], truth["outcome"], covs)
    exog = np.column_stack([np.ones(len(p.y)), p.t.astype(float), p.X.to_numpy(dtype=float)])
    assert exog.size >= ols.BLOCKED_FROM_CELLS
    want = _statsmodels(p.y, exog)
    built = E.ols_adjustment(p.X, p.t, p.y)
    held = E.ols_adjustment(p.X, p.t, p.y, exog)
    for est in (built, held):
        np.testing.assert_allclose([est.estimate, est.std_error], want[:2], rtol=1e-10)
        assert est.details["r_squared"] == round(want[2], 4)
        assert est.covers(truth["effect"])
    assert built.estimate != want[0] or built.std_error != want[1]  # not statsmodels' bits: the other path ran


def test_fewer_rows_than_columns_blocked() -> None:
    """Blocks shorter than the design is wide (the first R factors are not square) give the same fit."""
    exog, y = _design(40, seed=3, extra="dummies")
    got = ols.blocked(y, lambda a, b: exog[a:b], exog.shape[1], block_rows=5)
    np.testing.assert_allclose(got, _statsmodels(y, exog), rtol=1e-9)
