"""The estimator functions against seeded synthetic data with a known truth."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import synthetic_effects as S
from whyflow.causal.discovery.adjustment import derived_from_treatment, encode_treatment, prepare
from whyflow.causal.estimation import backdoor as E
from whyflow.causal.estimation import designs as D
from whyflow.causal.estimation import propensity as P
from whyflow.causal.estimation.meta_learners import meta_learner


def _prep(gen, covs, **kw):
    frame, truth = gen(**kw)
    p = prepare(frame, truth["treatment"], truth["outcome"], covs)
    return p, truth, P.fit_propensity(p.X, p.t, "logistic", 0)


def test_linear_confounding_naive_biased_adjusted_cover() -> None:
    p, truth, ps = _prep(S.linear_confounding, ["x1", "x2", "x3"], n=3000, seed=11)
    assert not E.naive_difference(p.y, p.t).covers(truth["effect"])
    dw = E.DowhyBackdoor(p.X, p.t, p.y, ps)
    for est in (
        E.ols_adjustment(dw.X, dw.arrays[0], dw.arrays[1], dw.design),
        E.ipw_hajek(p.y, p.t, ps),
        E.aipw(p.X, p.y, p.t, ps, seed=0),
    ):
        assert est.covers(truth["effect"]), (est.method, est.ci)
        assert est.std_error > 0 and est.p_value is not None and est.p_value < 0.01


def test_matching_and_att_aipw_cover() -> None:
    p, truth, ps = _prep(S.linear_confounding, ["x1", "x2", "x3"], n=2000, seed=12)
    dw = E.DowhyBackdoor(p.X, p.t, p.y, ps)
    m = E.ps_matching(dw, "ATE", reps=60, seed=0)
    assert m.covers(truth["effect"]) and np.isfinite(m.std_error)
    att = E.aipw(p.X, p.y, p.t, ps, seed=0, estimand="ATT")
    assert att.estimand == "ATT" and att.covers(truth["effect"])  # constant effect: ATT = ATE


def test_nonlinear_heterogeneous_aipw_and_dr_learner() -> None:
    p, truth, ps = _prep(S.nonlinear_heterogeneous, ["x1", "x2", "x3", "x4"], n=3000, seed=1)
    assert E.aipw(p.X, p.y, p.t, ps, seed=0).covers(truth["effect"])
    dr = meta_learner("DR", p.X, p.y, p.t, ps, seed=0)
    assert dr.details["cate_modifier"] == "x1"
    by_q = [v["estimate"] for v in dr.details["cate_summary"].values()]
    assert by_q == sorted(by_q) and by_q[-1] - by_q[0] > 1.5  # true spread about 2.5


def test_null_effect_adjusted_include_zero() -> None:
    p, truth, ps = _prep(S.null_effect, ["x1", "x2", "x3"], n=3000, seed=6)
    assert not E.naive_difference(p.y, p.t).covers(0.0)
    assert E.ols_adjustment(p.X, p.t, p.y).covers(0.0)
    assert E.aipw(p.X, p.y, p.t, ps, seed=0).covers(0.0)


def test_iv_covers_late_where_ols_fails() -> None:
    frame, truth = S.instrument_confounded(n=3000, seed=3)
    p = prepare(frame, "treated", "outcome", ["x"])
    iv = D.iv_2sls(p.y, p.t, frame["z"].to_numpy(float), p.X, "z")
    assert iv.estimand == "LATE" and iv.covers(truth["effect"]) and iv.details["first_stage_f"] > 10
    assert not E.ols_adjustment(p.X, p.t, p.y).covers(truth["effect"])


def test_did_and_rdd_cover() -> None:
    panels = [S.panel_did(seed=seed) for seed in range(4, 8)]  # one draw in 20 misses: judge coverage over four
    fits = [D.did_twfe(f, "unit", "period", "treated", "outcome") for f, _ in panels]
    assert sum(f.covers(t["effect"]) for f, (_, t) in zip(fits, panels, strict=True)) >= 3
    assert fits[0].details["se_method"] == "clustered by unit"
    frame, truth = panels[0]
    naive = E.naive_difference(frame["outcome"].to_numpy(), frame["treated"].to_numpy())
    assert not naive.covers(truth["effect"])
    frame, truth = S.sharp_rdd(n=3000, seed=5)
    x, y, t = (frame[c].to_numpy() for c in ("score", "outcome", "treated"))
    rd = D.rdd_rdrobust(x, y, t, 0.0, "score")
    assert rd.covers(truth["effect"]) and rd.details["design"] == "sharp"
    assert D.rdd_local_linear(x, y, t, 0.0, "score").covers(truth["effect"])


def test_poor_overlap_detected_and_crump_trims() -> None:
    p, _, ps = _prep(S.poor_overlap, ["x1", "x2"], n=3000, seed=2)
    o = P.overlap_summary(ps, p.t)
    assert not o["overlap_ok"] and o["outside_support"]["overall"] > 0.2
    keep, (lo, hi) = P.trim_mask(ps)
    assert 0 < lo < 0.5 < hi < 1 and 0.2 < (~keep).mean() < 0.7
    p2, _, ps2 = _prep(S.linear_confounding, ["x1", "x2", "x3"], n=3000, seed=1)
    assert P.overlap_summary(ps2, p2.t)["overlap_ok"]


def test_treatment_encoding_and_derived_columns() -> None:
    import pandas as pd

    t, label, note = encode_treatment(pd.Series(["no", "yes", "yes", "no"], name="tr"))
    assert label == "yes" and t.tolist() == [0, 1, 1, 0] and "treated" in note
    with pytest.raises(Exception, match="binary"):
        encode_treatment(pd.Series([1, 2, 3], name="dose"))
    frame, truth = S.derived_treatment(n=500)
    assert derived_from_treatment(frame, "treated", ["x1", "mediator", "treated_label"]) == ["treated_label"]


def test_dr_learner_fits_each_folds_cate_model_on_a_sample_above_the_cap(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Above DR_FIT_ROWS training rows, each fold's CATE model sees a sample, says so, and still finds the modifier."""
    from tests.helpers import make_state
    from whyflow.causal.estimation import meta_learners as M
    from whyflow.flows.running.dispatch import run_single_agent

    frame, truth = S.nonlinear_heterogeneous(n=3000, seed=1)
    monkeypatch.setattr(M, "DR_FIT_ROWS", 1000)
    state = make_state(frame, tmp_path, "treated", "outcome")
    run_single_agent("effect_estimator", state, tmp_path, {"methods": ["aipw", "dr_learner"], "bootstrap": 20})
    est = {e.details.method_key: e for e in state.treatment_effects}
    dr, aipw = est["dr_learner"], est["aipw"]
    extras = dr.details.extras
    assert extras["sampled_rows"] == 1000 and "1,000 of its training rows" in extras["sampling_note"]
    assert dr.std_error == aipw.std_error  # the SE is still the pseudo-outcome's, from every row
    assert abs(dr.estimate - aipw.estimate) < aipw.std_error
    assert extras["cate_modifier"] == "x1"
    by_q = [v["estimate"] for v in extras["cate_summary"].values()]
    assert by_q[-1] - by_q[0] > 1.0  # true spread about 2.5


@pytest.mark.parametrize("layout", ["columns", "one_block", "collinear"])
def test_ols_adjustment_is_statsmodels_to_the_last_bit(layout: str) -> None:
    """The regression adjustment computed in place equals statsmodels' OLS HC1 fit exactly (==, not approx)."""
    import warnings

    import pandas as pd
    import statsmodels.api as sm

    p, _, ps = _prep(S.nonlinear_heterogeneous, ["x1", "x2", "x3", "x4"], n=4000, seed=3)
    X = p.X
    if layout == "one_block":  # the covariates as one float block, as the estimator's setup holds them
        X = pd.DataFrame(np.ascontiguousarray(X.to_numpy(dtype=float).T).T, columns=X.columns, copy=False)
    elif layout == "collinear":  # a duplicated column: rank-deficient, statsmodels' pseudo-inverse drops it
        X = X.assign(x1_again=X["x1"])
    exog = np.column_stack([np.ones(len(p.y)), p.t.astype(int).astype(float), X.to_numpy(dtype=float)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = sm.OLS(p.y, exog).fit(cov_type="HC1")
    from whyflow.causal.estimation.ols import statsmodels_order

    assert statsmodels_order(p.y, lambda: exog) == (float(fit.params[1]), float(fit.bse[1]), float(fit.rsquared))
    ours = E.ols_adjustment(X, p.t, p.y)
    assert (ours.estimate, ours.std_error) == (float(fit.params[1]), float(fit.bse[1]))
    assert ours.details["r_squared"] == round(float(fit.rsquared), 4)


def test_one_block_covariates_share_one_matrix_with_the_ols_design() -> None:
    """The setup's covariates are one block: the same frame, its float matrix a view, the OLS design in it."""
    from whyflow.causal.estimation.pair_analysis import one_block

    frame, truth = S.nonlinear_heterogeneous(n=500, seed=2)
    frame["grade"] = np.random.default_rng(0).choice(["a", "b", "c"], len(frame))
    p = prepare(frame, truth["treatment"], truth["outcome"], ["x1", "x2", "x3", "grade"])
    copied = p.X.to_numpy(dtype=float)  # what every reader made before: a Fortran-ordered copy
    X, design = one_block(p.X, p.t)
    assert X.equals(p.X) and design is not None
    view = X.to_numpy(dtype=float)
    assert np.shares_memory(view, design) and view.strides == copied.strides
    np.testing.assert_array_equal(view, copied)
    stacked = np.column_stack([np.ones(len(p.t)), p.t.astype(int).astype(float), copied])
    assert design.strides == stacked.strides
    np.testing.assert_array_equal(design, stacked)
    shared = E.ols_adjustment(X, p.t, p.y, design)
    built = E.ols_adjustment(p.X, p.t, p.y)
    assert (shared.estimate, shared.std_error, shared.details) == (built.estimate, built.std_error, built.details)
