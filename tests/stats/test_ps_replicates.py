"""The vectorised bootstrap replicates equal DoWhy's matching and stratification estimates, resample by resample."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from whyflow.causal.estimation import backdoor as E
from whyflow.causal.estimation import ps_replicates as R


def _dowhy_model(n: int, seed: int, ties: bool = False) -> E.DowhyBackdoor:
    """Confounded data with a propensity score that DoWhy will use as given (``_ps``)."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"x1": rng.normal(size=n), "x2": rng.normal(size=n)})
    ps = 1 / (1 + np.exp(-(0.8 * X["x1"] - 0.5 * X["x2"]).to_numpy()))
    if ties:  # a coarse score: many units of different outcome share one value
        ps = np.round(ps, 2)
    t = rng.binomial(1, ps)
    y = 2.0 * t + X["x1"].to_numpy() + X["x2"].to_numpy() + rng.normal(size=n)
    return E.DowhyBackdoor(X, t, y, ps)


def _dowhy_value(dw: E.DowhyBackdoor, kind: str, units: str, rows: np.ndarray) -> float:
    est = dw.estimator(kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return float(est.estimate_effect(dw.data.iloc[rows].reset_index(drop=True), target_units=units).value)
        except ValueError:  # DoWhy: no stratum with enough treated and control rows
            return float("nan")


def _replicates(dw: E.DowhyBackdoor, kind: str, units: str, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t, y, ps = dw.arrays
    if kind == "matching":
        return R.matching_replicates(ps, t, y, idx, units)
    vals = R.stratification_replicates(ps, t, y, idx, dw.strata, dw.clipping_threshold, units)
    return vals, np.zeros(len(vals), dtype=bool)


@pytest.mark.parametrize("kind", ["matching", "stratification"])
@pytest.mark.parametrize("units", ["ate", "att", "atc"])
def test_replicates_equal_dowhy_on_seeded_resamples(kind: str, units: str) -> None:
    dw = _dowhy_model(1200, seed=3)
    idx = R.bootstrap_indices(dw.arrays[0], 8, seed=7, cap=E.BOOTSTRAP_CAP)
    vals, ambiguous = _replicates(dw, kind, units, idx)
    assert not ambiguous.any()  # continuous scores: every nearest neighbour is unique
    ref = np.array([_dowhy_value(dw, kind, units, rows) for rows in idx])
    np.testing.assert_allclose(vals, ref, rtol=0, atol=1e-9)


@pytest.mark.parametrize("kind", ["matching", "stratification"])
def test_m_out_of_n_resamples_equal_dowhy(kind: str) -> None:
    dw = _dowhy_model(900, seed=4)
    idx = R.bootstrap_indices(dw.arrays[0], 6, seed=1, cap=400)
    assert idx.shape == (6, 400)
    vals, _ = _replicates(dw, kind, "ate", idx)
    ref = np.array([_dowhy_value(dw, kind, "ate", rows) for rows in idx])
    np.testing.assert_allclose(vals, ref, rtol=0, atol=1e-9)


def test_tied_scores_strata_exact_and_matching_ties_flagged() -> None:
    """Shared scores: average ranks split strata as DoWhy's; matches among tied units are flagged."""
    dw = _dowhy_model(800, seed=5, ties=True)
    idx = R.bootstrap_indices(dw.arrays[0], 6, seed=2, cap=E.BOOTSTRAP_CAP)
    vals, _ = _replicates(dw, "stratification", "ate", idx)
    ref = np.array([_dowhy_value(dw, "stratification", "ate", rows) for rows in idx])
    np.testing.assert_allclose(vals, ref, rtol=0, atol=1e-9)
    vals, ambiguous = _replicates(dw, "matching", "ate", idx)
    assert ambiguous.all()  # which tied unit the ball tree returns is not reproduced: DoWhy recomputes these
    t, y, ps = dw.arrays
    assert R.tied_units(ps, t, y).mean() > 0.9


def test_stratification_nan_where_dowhy_raises() -> None:
    """Tiny resamples: DoWhy raises when no stratum has more than 5 treated and 5 control rows."""
    dw = _dowhy_model(400, seed=6)
    idx = R.bootstrap_indices(dw.arrays[0], 30, seed=3, cap=60)
    vals, _ = _replicates(dw, "stratification", "ate", idx)
    ref = np.array([_dowhy_value(dw, "stratification", "ate", rows) for rows in idx])
    assert np.isnan(ref).any() and not np.isnan(ref).all()
    np.testing.assert_array_equal(np.isnan(vals), np.isnan(ref))
    np.testing.assert_allclose(vals[~np.isnan(ref)], ref[~np.isnan(ref)], rtol=0, atol=1e-9)


def _loop_se(dw: E.DowhyBackdoor, kind: str, units: str, reps: int, seed: int) -> tuple[float, int]:
    """The bootstrap as it was: one DoWhy estimate per resample, skipping one-arm and failing resamples."""
    rng = np.random.default_rng(seed)
    n = len(dw.data)
    m = min(n, E.BOOTSTRAP_CAP)
    t = dw.data["_treatment"].to_numpy()
    draws = []
    for _ in range(reps):
        rows = rng.integers(0, n, size=m)
        if t[rows].min() == t[rows].max():
            continue
        v = _dowhy_value(dw, kind, units, rows)
        if np.isfinite(v):
            draws.append(v)
    if len(draws) < max(10, reps // 2):
        return float("nan"), len(draws)
    return float(np.std(draws, ddof=1) * np.sqrt(m / n)), len(draws)


@pytest.mark.parametrize("ties", [False, True])
def test_standard_errors_equal_the_dowhy_loop(ties: bool) -> None:
    """End to end, tied scores included (those matching resamples go to DoWhy): same SE, same count."""
    dw = _dowhy_model(600, seed=8, ties=ties)
    for fn, kind in ((E.ps_matching, "matching"), (E.ps_stratification, "stratification")):
        for estimand in ("ATE", "ATT"):
            got = fn(dw, estimand, reps=20, seed=11)
            se, used = _loop_se(dw, kind, estimand.lower(), 20, 11)
            assert got.std_error == pytest.approx(se, rel=1e-9, abs=1e-12)
            assert f"bootstrap ({used} resamples;" in got.details["se_method"]
            assert "not refitted" in got.details["se_method"]


def test_m_out_of_n_standard_error_and_text(monkeypatch: pytest.MonkeyPatch) -> None:
    dw = _dowhy_model(700, seed=9)
    monkeypatch.setattr(E, "BOOTSTRAP_CAP", 300)
    got = E.ps_stratification(dw, "ATE", reps=20, seed=0)
    se, used = _loop_se(dw, "stratification", "ate", 20, 0)
    assert got.std_error == pytest.approx(se, rel=1e-9)
    assert "m-out-of-n with m=300" in got.details["se_method"] and f"({used} resamples" in got.details["se_method"]


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("estimand", ["ATE", "ATT"])
def test_whole_sample_estimates_equal_dowhy(ties: bool, estimand: str) -> None:
    """Matching's and stratification's point estimates (computed as one replicate of every row) are DoWhy's."""
    dw = _dowhy_model(1500, seed=8, ties=ties)
    units = "att" if estimand == "ATT" else "ate"
    every = np.arange(len(dw.arrays[0]))
    for kind, fit in (("matching", E.ps_matching), ("stratification", E.ps_stratification)):
        ours = fit(dw, estimand, reps=20, seed=0).estimate
        assert ours == pytest.approx(_dowhy_value(dw, kind, units, every), abs=1e-9), kind


def test_regression_adjustment_equals_dowhy_linear_regression() -> None:
    """OLS fitted directly gives DoWhy's backdoor.linear_regression coefficient and HC1 SE."""
    dw = _dowhy_model(1500, seed=9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = dw.model.estimate_effect(dw.estimand, method_name="backdoor.linear_regression")
    fit = res.estimator.model
    names = list(fit.model.exog_names)  # DoWhy names the treatment column x1 (after the constant)
    se = float(
        np.asarray(fit.get_robustcov_results(cov_type="HC1").bse)[
            names.index("_treatment") if "_treatment" in names else 1
        ]
    )
    ours = E.ols_adjustment(dw.X, dw.arrays[0], dw.arrays[1], dw.design)
    assert ours.estimate == pytest.approx(float(res.value), rel=1e-10)
    assert ours.std_error == pytest.approx(se, rel=1e-10)
    assert ours.details["r_squared"] == round(float(fit.rsquared), 4)


def test_strata_grow_with_n_so_coarse_strata_bias_stays_below_the_standard_error() -> None:
    """At 400k rows 20 strata leave a residual bias of several SEs; strata_for(n) strata do not.

    The stratification estimate's SE here is about 0.004. Each is compared with the correctly
    specified regression on the same sample (which removes the sampling noise they share).
    """
    from benchmarks.synthetic import linear_confounding

    n = 400_000
    assert E.strata_for(2000) == 10 and E.strata_for(8000) == 20  # the sizes the truth benchmark runs
    ruled, capped = [], []
    for seed in range(4):
        frame, _ = linear_confounding(n=n, seed=seed)
        X = frame[["x1", "x2", "x3"]].to_numpy()
        t, y = frame["treated"].to_numpy(), frame["outcome"].to_numpy()
        ps = 1 / (1 + np.exp(-(0.8 * X[:, 0] + 0.6 * X[:, 1])))
        design = np.column_stack([np.ones(n), t, X])
        oracle = float(np.linalg.lstsq(design, y, rcond=None)[0][1])
        every = np.arange(n)[None, :]
        ruled.append(float(R.stratification_replicates(ps, t, y, every, E.strata_for(n), 5, "ate")[0]) - oracle)
        capped.append(float(R.stratification_replicates(ps, t, y, every, 20, 5, "ate")[0]) - oracle)
    assert np.mean(np.abs(ruled)) < 0.007, ruled
    assert np.mean(capped) > 0.012, capped


def _full_table_dowhy(dw: E.DowhyBackdoor, kind: str) -> tuple[object, pd.DataFrame]:
    """DoWhy as the estimator used to run it: model, identification and fit on the whole table."""
    from dowhy import CausalModel

    table = dw.X.copy()
    for name, values in zip(("_treatment", "_outcome", "_ps"), dw.arrays, strict=True):
        table[name] = values
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = CausalModel(data=table, treatment="_treatment", outcome="_outcome", common_causes=dw.covariates)
        estimand = model.identify_effect(method_name="maximal-adjustment", proceed_when_unidentifiable=True)
        light = E.DowhyBackdoor(dw.X, *dw.arrays)
        light._estimand = estimand  # the same estimator classes and options as DowhyBackdoor.estimator
        est = light.estimator(kind)
        est.fit(table)
    return est, table


@pytest.mark.parametrize("estimand", ["ATE", "ATT"])
def test_matching_fallback_is_dowhy_on_the_whole_table(estimand: str) -> None:
    """Where a match is ambiguous DoWhy runs on the three columns it reads: its number on the whole table, exactly."""
    dw = _dowhy_model(1500, seed=8, ties=True)
    t, y, ps = dw.arrays
    every = np.arange(len(t))[None, :]
    assert R.matching_replicates(ps, t, y, every, "ate")[1][0]  # the whole-sample match is ambiguous
    units = estimand.lower()
    full, table = _full_table_dowhy(dw, "matching")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = float(full.estimate_effect(table, target_units=units).value)
        light = dw.estimator("matching")
        idx = R.bootstrap_indices(t, 6, seed=2, cap=400)
        for rows in idx:  # resamples, as the bootstrap sends its ambiguous ones
            want = full.estimate_effect(table.iloc[rows].reset_index(drop=True), target_units=units).value
            assert float(light.estimate_effect(dw.frame(rows), target_units=units).value) == float(want)
    assert E.ps_matching(dw, estimand, reps=20, seed=0).estimate == ref
    assert dw._data is None  # the covariates were never copied into a DoWhy table


@pytest.mark.parametrize("kind", ["matching", "stratification"])
def test_replicates_in_blocks_equal_one_block(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bootstrap handled a few resamples at a time gives every replicate bit for bit."""
    dw = _dowhy_model(900, seed=4, ties=True)
    idx = R.bootstrap_indices(dw.arrays[0], 25, seed=1, cap=E.BOOTSTRAP_CAP)
    whole = _replicates(dw, kind, "ate", idx)
    monkeypatch.setattr(R, "_BLOCK", 3 * idx.shape[1] + 1)  # blocks of 3 resamples and a remainder
    assert len(R._blocks(idx)) == 9
    blocked = _replicates(dw, kind, "ate", idx)
    np.testing.assert_array_equal(blocked[0], whole[0])
    np.testing.assert_array_equal(blocked[1], whole[1])
