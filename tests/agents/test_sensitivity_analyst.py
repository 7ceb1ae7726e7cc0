"""Sensitivity analyst: E-values, Rosenbaum bounds and DoWhy refuters on seeded confounded data."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmarks.synthetic import linear_confounding
from tests.factories import make_estimate
from tests.helpers import make_state
from whyflow.causal.review.sensitivity import evalue_for_effect, evalue_rr, matched_pair_differences, rosenbaum_gamma
from whyflow.causal.state import AnalysisState, TreatmentEffectResult
from whyflow.flows.running.dispatch import run_single_agent

ADJ = ["x1", "x2", "x3"]


def _ols_effect(frame: pd.DataFrame, method: str, *, headline: bool) -> TreatmentEffectResult:
    """A regression-adjusted estimate fitted with statsmodels (what an estimator would report)."""
    import statsmodels.api as sm

    fit = sm.OLS(frame["outcome"], sm.add_constant(frame[["treated", *ADJ]])).fit()
    lo, hi = fit.conf_int().loc["treated"]
    key = "matching" if "matching" in method else ("aipw" if method == "aipw" else "ols")
    return make_estimate(
        key,
        float(fit.params["treated"]),
        float(fit.bse["treated"]),
        label=method,
        ci=(float(lo), float(hi)),
        headline=headline,
        adjustment_set=ADJ,
    )


def _naive(frame: pd.DataFrame) -> TreatmentEffectResult:
    t, y = frame["treated"] == 1, frame["outcome"]
    diff = float(y[t].mean() - y[~t].mean())
    se = float(math.sqrt(y[t].var() / t.sum() + y[~t].var() / (~t).sum()))
    return make_estimate("naive", diff, se, label="naive_difference", ci=(diff - 1.96 * se, diff + 1.96 * se))


def _state(frame: pd.DataFrame, job: Path) -> AnalysisState:
    state = make_state(frame, job, "treated", "outcome")
    state.treatment_effects = [
        _naive(frame),
        _ols_effect(frame, "propensity_score_matching", headline=False),
        _ols_effect(frame, "regression_adjustment", headline=True),
    ]
    state.confounder_discovery = {"treatment": "treated", "outcome": "outcome", "adjustment_set": ADJ}
    return state


@pytest.fixture(scope="module")
def confounded(tmp_path_factory: pytest.TempPathFactory) -> tuple[AnalysisState, pd.DataFrame, Path]:
    frame, truth = linear_confounding(n=1500, effect=2.0, seed=3)
    job = tmp_path_factory.mktemp("sens")
    state = _state(frame, job)
    run_single_agent("sensitivity_analyst", state, job, {"simulations": 20}, seed=5)
    return state, frame, job


def _by_method(state: AnalysisState, method: str) -> list:
    return [r for r in state.sensitivity_results if r.method == method]


# ---- E-values ----------------------------------------------------------------------------
def test_evalue_matches_vanderweele_ding_worked_example() -> None:
    # VanderWeele & Ding (2017): RR 3.9 (95% CI 1.8 to 8.7) -> E-values 7.26 and 3.00.
    assert evalue_rr(3.9) == pytest.approx(7.26, abs=0.01)
    assert evalue_rr(1.8) == pytest.approx(3.00, abs=0.01)
    assert evalue_rr(1 / 3.9) == pytest.approx(evalue_rr(3.9))  # protective effects are inverted


def test_continuous_evalue_uses_standardized_difference_and_ci_limit_closest_to_null() -> None:
    est, lo, hi, sd = -1.2, -1.8, -0.6, 4.0
    ev = evalue_for_effect(est, lo, hi, outcome_sd=sd)
    rr = math.exp(0.91 * est / sd)
    assert ev["risk_ratio"] == pytest.approx(rr)
    assert ev["evalue_estimate"] == pytest.approx(1 / rr + math.sqrt(1 / rr * (1 / rr - 1)))
    rr_limit = 1 / math.exp(0.91 * hi / sd)  # the upper limit is closest to the null for a negative effect
    assert ev["evalue_ci"] == pytest.approx(rr_limit + math.sqrt(rr_limit * (rr_limit - 1)))
    assert 1 < ev["evalue_ci"] < ev["evalue_estimate"]


def test_binary_outcome_evalue_uses_risk_ratio_and_is_one_when_ci_crosses_null() -> None:
    ev = evalue_for_effect(0.10, 0.04, 0.16, baseline_risk=0.20)
    assert ev["scale"] == "risk_ratio"
    assert ev["risk_ratio"] == pytest.approx(0.30 / 0.20)
    assert ev["evalue_estimate"] == pytest.approx(1.5 + math.sqrt(1.5 * 0.5))
    crossing = evalue_for_effect(0.10, -0.02, 0.22, baseline_risk=0.20)
    assert crossing["ci_crosses_null"] and crossing["evalue_ci"] == 1.0
    assert crossing["evalue_estimate"] > 1


# ---- the agent on confounded data ----------------------------------------------------------
def test_evalues_headline_first_and_naive_skipped(confounded) -> None:
    state, frame, _ = confounded
    evs = _by_method(state, "e_value")
    assert [r.details.estimate_method for r in evs] == ["regression_adjustment", "propensity_score_matching"]
    head = evs[0]
    d = head.details.extras["estimate"] / frame["outcome"].std()
    rr = math.exp(0.91 * d)
    assert head.robustness_value == pytest.approx(rr + math.sqrt(rr * (rr - 1)))
    assert 1 < head.details.evalue_ci < head.robustness_value
    assert "treated" in head.interpretation and "outcome" in head.interpretation


def test_placebo_treatment_gives_near_zero_effect(confounded) -> None:
    state, _, _ = confounded
    (placebo,) = _by_method(state, "placebo_treatment")
    head = next(e for e in state.treatment_effects if e.details.headline)
    assert abs(placebo.details.extras["new_effect"]) < 3 * head.std_error  # the true 2.0 is far away
    assert abs(placebo.details.extras["refuted_estimate"] - head.estimate) < 1e-6  # same adjustment set, same OLS
    assert placebo.details.passed and placebo.robustness_value >= 0.05


def test_unobserved_confounder_reduces_the_estimate(confounded) -> None:
    state, _, job = confounded
    (uc,) = _by_method(state, "unobserved_common_cause")
    base = uc.details.extras["refuted_estimate"]
    grid = np.asarray(uc.details.extras["new_effects"])
    assert grid.shape == (3, 3)
    assert grid[-1, -1] < grid[0, 0] < base  # stronger confounding removes more of the effect
    assert 0 < uc.robustness_value < 1
    assert uc.robustness_value == pytest.approx(grid.min() / base)
    assert Path(uc.details.extras["plot"]).exists() and Path(uc.details.extras["plot"]).parent == job / "plots"


def test_rosenbaum_gamma_above_one_for_strong_effect(confounded) -> None:
    state, _, _ = confounded
    (rb,) = _by_method(state, "rosenbaum_bounds")
    assert rb.robustness_value > 2
    assert rb.details.extras["mean_pair_difference"] == pytest.approx(2.0, abs=0.4)  # caliper pairs are unbiased
    subset, common = _by_method(state, "data_subset"), _by_method(state, "random_common_cause")
    assert subset[0].details.passed and common[0].details.passed


def test_rosenbaum_gamma_is_one_for_null_effect_and_ci_evalue_is_one(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=1500, effect=0.0, seed=4)
    state = _state(frame, tmp_path)
    head = next(e for e in state.treatment_effects if e.details.headline)
    assert head.ci_lower < 0 < head.ci_upper  # precondition on this seed
    run_single_agent("sensitivity_analyst", state, tmp_path, {"refuters": False}, seed=1)
    (rb,) = _by_method(state, "rosenbaum_bounds")
    assert rb.robustness_value == 1.0
    ev = _by_method(state, "e_value")[0]
    assert ev.details.ci_crosses_null and ev.details.evalue_ci == 1.0
    assert not _by_method(state, "placebo_treatment")


def test_matching_pairs_recover_effect_and_gamma_grows_with_effect() -> None:
    small, _ = linear_confounding(n=1500, effect=0.3, seed=8)
    large, _ = linear_confounding(n=1500, effect=1.5, seed=8)
    g_small = rosenbaum_gamma(matched_pair_differences(small, "treated", "outcome", ADJ, seed=0))["gamma"]
    g_large = rosenbaum_gamma(matched_pair_differences(large, "treated", "outcome", ADJ, seed=0))["gamma"]
    assert 1 <= g_small < g_large


def test_only_naive_estimates_is_a_recorded_skip(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=300, seed=1)
    state = make_state(frame, tmp_path, "treated", "outcome")
    state.treatment_effects = [_naive(frame)]
    result = run_single_agent("sensitivity_analyst", state, tmp_path, {"refuters": False})
    assert state.sensitivity_results == [] and result.summary.startswith("skipped: no adjusted estimate")
    assert "no adjusted estimate" in result.outputs["skipped"]["all"]


def test_a_failing_refuter_is_a_recorded_skip(tmp_path: Path) -> None:
    """20 rows and a 5% subset: DoWhy's data-subset refuter cannot fit one row; the others still answer."""
    frame, _ = linear_confounding(n=20, seed=3)
    state = make_state(frame, tmp_path, "treated", "outcome")
    state.treatment_effects = [_naive(frame), _ols_effect(frame, "Regression adjustment (OLS)", headline=True)]
    result = run_single_agent("sensitivity_analyst", state, tmp_path, {"simulations": 3, "subset_fraction": 0.05})
    assert "Skipped the data subset refuter: ValueError" in result.reasoning
    assert "skipped data subset refuter (reasons in the trace)" in result.summary
    methods = {r.method for r in state.sensitivity_results}
    assert {"e_value", "placebo_treatment", "random_common_cause"} <= methods and "data_subset" not in methods


def test_trimmed_headline_is_analysed_on_its_trimmed_sample(tmp_path: Path) -> None:
    from whyflow.causal.discovery.adjustment import prepare
    from whyflow.causal.estimation.propensity import fit_propensity

    frame, _ = linear_confounding(n=1500, effect=2.0, seed=7, strength=3.0)
    prep = prepare(frame, "treated", "outcome", ADJ)  # the estimators' own propensity, as a trimmed run has
    e = fit_propensity(prep.X, prep.t, "logistic", 2)
    kept = frame[(e >= 0.1) & (e <= 0.9)].reset_index(drop=True)
    assert len(kept) < 0.8 * len(frame)  # precondition: trimming matters on these data
    state = make_state(frame, tmp_path, "treated", "outcome")
    head = _ols_effect(kept, "aipw", headline=True)
    head.details.trimmed = {"lower": 0.1, "upper": 0.9, "n_kept": len(kept), "n_dropped": len(frame) - len(kept)}
    state.treatment_effects = [head]
    run_single_agent("sensitivity_analyst", state, tmp_path, {"simulations": 5}, seed=2)
    (placebo,) = _by_method(state, "placebo_treatment")
    assert abs(placebo.details.extras["n_used"] - len(kept)) <= 0.02 * len(kept)
    assert abs(placebo.details.extras["refuted_estimate"] - head.estimate) < 0.5 * head.std_error
    assert "trimmed" in state.agent_traces[-1].reasoning


def test_binary_outcome_evalue_uses_control_risk(tmp_path: Path) -> None:
    rng = np.random.default_rng(12)
    n = 1500
    x1, x2, x3 = rng.normal(size=(3, n))
    t = rng.binomial(1, 1 / (1 + np.exp(-(0.8 * x1 + 0.6 * x2))))
    y = rng.binomial(1, np.clip(0.25 + 0.15 * t + 0.05 * x1, 0.01, 0.99))
    frame = pd.DataFrame({"x1": x1, "x2": x2, "x3": x3, "treated": t, "outcome": y})
    state = make_state(frame, tmp_path, "treated", "outcome")
    state.treatment_effects = [_ols_effect(frame, "linear_probability", headline=True)]
    run_single_agent("sensitivity_analyst", state, tmp_path, {"refuters": False})
    (ev,) = _by_method(state, "e_value")
    p0 = frame.loc[frame["treated"] == 0, "outcome"].mean()
    assert ev.details.extras["scale"] == "risk_ratio"
    assert ev.details.extras["risk_ratio"] == pytest.approx((p0 + ev.details.extras["estimate"]) / p0)
    assert ev.robustness_value > ev.details.evalue_ci > 1


def test_large_data_refuters_use_a_seeded_sample_and_say_so(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=1500, effect=2.0, seed=4)
    state = _state(frame, tmp_path)
    result = run_single_agent("sensitivity_analyst", state, tmp_path, {"simulations": 10, "max_rows": 600}, seed=2)
    assert "seeded sample of 600 of 1,500 rows" in result.reasoning
    (placebo,) = _by_method(state, "placebo_treatment")
    assert placebo.details.passed  # the sample still refutes nothing that holds


def test_trimmed_headline_keeps_exactly_the_estimators_rows(tmp_path: Path) -> None:
    from benchmarks.synthetic_effects import poor_overlap
    from whyflow.causal.state import CritiqueDecision, CritiqueFeedback

    frame, _ = poor_overlap(n=2000, seed=1)
    state = make_state(frame, tmp_path, "treated", "outcome")
    state.critique_history = [
        CritiqueFeedback(
            decision=CritiqueDecision.ITERATE,
            iteration=1,
            scores={"overlap": 2},
            issues=[],
            improvements=["trim_to_common_support: trim"],
            reasoning="",
        )
    ]
    state.iteration_count = 1
    run_single_agent("effect_estimator", state, tmp_path, {"methods": ["ols", "aipw"], "bootstrap": 10}, seed=3)
    head = next(e for e in state.treatment_effects if e.details.headline)
    n_kept = head.details.trimmed.n_kept
    assert n_kept < len(frame)  # precondition: the estimator trimmed
    run_single_agent("sensitivity_analyst", state, tmp_path, {"simulations": 5}, seed=3)
    (placebo,) = _by_method(state, "placebo_treatment")
    assert placebo.details.extras["n_used"] == n_kept


def test_the_estimators_sample_is_the_one_analysed_even_with_missing_values(tmp_path: Path) -> None:
    """One analysed sample: trimmed and with incomplete rows, the sensitivity analysis runs on exactly
    the rows the estimator recorded (row labels of the data, not positions among complete rows)."""
    from benchmarks.synthetic_effects import poor_overlap
    from whyflow.causal.state import CritiqueDecision, CritiqueFeedback

    frame, _ = poor_overlap(n=2000, seed=1)
    frame.loc[frame.index[:300:3], "x2"] = np.nan  # 100 incomplete rows, all early in the file
    state = make_state(frame, tmp_path, "treated", "outcome")
    state.critique_history = [
        CritiqueFeedback(
            decision=CritiqueDecision.ITERATE,
            iteration=1,
            scores={"overlap": 2},
            issues=[],
            improvements=["trim_to_common_support: trim"],
            reasoning="",
        )
    ]
    state.iteration_count = 1
    run_single_agent("effect_estimator", state, tmp_path, {"methods": ["ols", "aipw"], "bootstrap": 10}, seed=3)
    head = next(e for e in state.treatment_effects if e.details.headline)
    rows = np.load(head.details.sample_rows)
    assert len(rows) == head.details.n_used == head.details.trimmed.n_kept and len(rows) < 1900
    assert frame.loc[rows, "x2"].notna().all()  # labels of complete rows, not positions
    run_single_agent("sensitivity_analyst", state, tmp_path, {"simulations": 5}, seed=3)
    (placebo,) = _by_method(state, "placebo_treatment")
    assert placebo.details.extras["n_used"] == len(rows)
    ols = next(e for e in state.treatment_effects if e.details.method_key == "ols")
    assert placebo.details.extras["refuted_estimate"] == pytest.approx(ols.estimate, rel=1e-9)  # the same OLS
