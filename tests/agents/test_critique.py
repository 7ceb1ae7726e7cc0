"""Critique: decisions on hand-built analyses whose numbers are computed from seeded data."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from agents.base.state import AnalysisState, CritiqueDecision, TreatmentEffectResult
from agents.critique import codes_in
from benchmarks.synthetic import linear_confounding
from flows.dispatch import run_single_agent
from tests.factories import make_estimate
from tests.helpers import make_state

ADJ = ["x1", "x2", "x3"]


# ---- real estimates and diagnostics, computed here -----------------------------------------
def _propensity(frame: pd.DataFrame, covs: list[str]) -> np.ndarray:
    from sklearn.linear_model import LogisticRegression

    x = frame[covs].to_numpy()
    e = LogisticRegression(C=1e6, max_iter=2000).fit(x, frame["treated"]).predict_proba(x)[:, 1]
    return np.clip(e, 1e-6, 1 - 1e-6)  # as estimators clip; separation still shows in the ranges


_KEYS = {"naive_difference": "naive", "regression_adjustment": "ols", "ipw": "ipw", "aipw": "aipw"}


def _result(method: str, est: float, se: float, rnd: int, **details: Any) -> TreatmentEffectResult:
    return make_estimate(
        _KEYS[method],
        est,
        se,
        round=rnd,
        label=method,
        ci=(est - 1.96 * se, est + 1.96 * se),
        adjustment_set=ADJ,
        **details,
    )


def _estimates(frame: pd.DataFrame, e: np.ndarray, rnd: int, *, dr: bool, changes: list[str] | None = None) -> list:
    """Naive, OLS (headline), IPW and optionally AIPW estimates of treated -> outcome."""
    import statsmodels.api as sm

    t, y = frame["treated"].to_numpy(), frame["outcome"].to_numpy()
    extra = {"changes_applied": changes or []}
    naive = y[t == 1].mean() - y[t == 0].mean()
    out = [
        _result("naive_difference", naive, math.sqrt(y[t == 1].var() / t.sum() + y[t == 0].var() / (1 - t).sum()), rnd)
    ]
    ols = sm.OLS(y, sm.add_constant(frame[["treated", *ADJ]])).fit()
    out.append(_result("regression_adjustment", ols.params["treated"], ols.bse["treated"], rnd, headline=True, **extra))
    w = t / e + (1 - t) / (1 - e)
    ipw = sm.WLS(y, sm.add_constant(t), weights=w).fit(cov_type="HC1")
    out.append(_result("ipw", ipw.params[1], ipw.bse[1], rnd, **extra))
    if dr:
        x = sm.add_constant(frame[ADJ])
        mu1 = sm.OLS(y[t == 1], x[t == 1]).fit().predict(x)
        mu0 = sm.OLS(y[t == 0], x[t == 0]).fit().predict(x)
        psi = mu1 - mu0 + t * (y - mu1) / e - (1 - t) * (y - mu0) / (1 - e)
        out.append(_result("aipw", psi.mean(), psi.std(ddof=1) / math.sqrt(len(psi)), rnd, **extra))
    return out


def _ps_diag(frame: pd.DataFrame, e: np.ndarray, covs: list[str], *, trimmed: bool = False, changes=None) -> dict:
    """ps_diagnostics in the README's shape, from propensity scores ``e``."""
    from sklearn.metrics import roc_auc_score

    t = frame["treated"].to_numpy()
    lo, hi = max(e[t == 1].min(), e[t == 0].min()), min(e[t == 1].max(), e[t == 0].max())
    out = (e < lo) | (e > hi)
    w = t / e + (1 - t) / (1 - e)
    balance = {}
    for c in covs:
        v = frame[c].to_numpy()
        sd = math.sqrt((v[t == 1].var() + v[t == 0].var()) / 2)
        m1w, m0w = np.average(v[t == 1], weights=w[t == 1]), np.average(v[t == 0], weights=w[t == 0])
        balance[c] = {"smd_before": (v[t == 1].mean() - v[t == 0].mean()) / sd, "smd_after": (m1w - m0w) / sd}
    max_after = max(abs(b["smd_after"]) for b in balance.values())
    return {
        "treatment": "treated",
        "model": "logistic",
        "covariates": covs,
        "auc": float(roc_auc_score(t, e)),
        "propensity_range": {
            "treated": [e[t == 1].min(), e[t == 1].max()],
            "control": [e[t == 0].min(), e[t == 0].max()],
        },
        "common_support": [float(lo), float(hi)],
        "outside_support": {
            "treated": float(out[t == 1].mean()),
            "control": float(out[t == 0].mean()),
            "overall": float(out.mean()),
        },
        "overlap_ok": bool(out.mean() <= 0.05),
        "extreme_share": float(np.mean((e < 0.02) | (e > 0.98))),
        "trim_suggestion": {
            "lower": 0.05,
            "upper": 0.95,
            "n_dropped": int(((e < 0.05) | (e > 0.95)).sum()),
            "reason": "Crump",
        },
        "trimmed": trimmed,
        "n_used": len(frame),
        "balance": balance,
        "max_smd_before": max(abs(b["smd_before"]) for b in balance.values()),
        "max_smd_after": float(max_after),
        "balance_ok": bool(max_after <= 0.1),
        "ess": {
            "treated": float(w[t == 1].sum() ** 2 / (w[t == 1] ** 2).sum()),
            "control": float(w[t == 0].sum() ** 2 / (w[t == 0] ** 2).sum()),
        },
        "changes": changes or [],
    }


def _analysis(
    frame: pd.DataFrame, job: Path, *, dr: bool = True, rnd: int = 1, trimmed: bool = False, changes=None
) -> AnalysisState:
    """A state after estimation, with confounder discovery, ps diagnostics and estimates."""
    state = make_state(frame, job, "treated", "outcome")
    e = _propensity(frame, ADJ)
    state.ps_diagnostics = _ps_diag(frame, e, ADJ, trimmed=trimmed, changes=changes)
    state.treatment_effects = _estimates(frame, e, rnd, dr=dr, changes=changes)
    state.confounder_discovery = {
        "treatment": "treated",
        "outcome": "outcome",
        "adjustment_set": ADJ,
        "excluded": {},
        "data_associated": ["x1", "x2"],
        "identification": {"method": "backdoor", "identified": True, "estimand": "E[Y|do(T)]"},
    }
    state.iteration_count = rnd - 1
    return state


def _critique(state: AnalysisState, job: Path):
    run_single_agent("critique", state, job)
    return state.critique_history[-1]


# ---- tests -------------------------------------------------------------------------------
def test_clean_analysis_is_approved(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=2000, seed=2, strength=1.0)
    state = _analysis(frame, tmp_path)
    fb = _critique(state, tmp_path)
    assert fb.decision is CritiqueDecision.APPROVE, fb.reasoning
    assert fb.iteration == 1 and fb.improvements == []
    assert fb.scores["overlap"] >= 4 and fb.scores["balance"] >= 4 and fb.scores["agreement"] >= 4
    assert fb.scores["identification"] == 5
    entry = state.debate_history[-1]
    assert entry["round"] == 1 and entry["decision"] == "APPROVE" and entry["scores"] == fb.scores


def test_poor_overlap_is_not_approved_and_asks_for_trimming(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=2000, seed=2, strength=3.0)
    state = _analysis(frame, tmp_path)
    assert state.ps_diagnostics["outside_support"]["overall"] > 0.1  # precondition: real poor overlap
    fb = _critique(state, tmp_path)
    assert fb.decision is CritiqueDecision.ITERATE
    assert "trim_to_common_support" in codes_in(fb.improvements)
    assert fb.scores["overlap"] <= 2
    assert any("overlap" in i.lower() for i in fb.issues)


def test_the_policy_is_the_recipe_s_options_and_printed_where_it_applies(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=2000, seed=2, strength=3.0)
    outside = _analysis(frame, tmp_path).ps_diagnostics["outside_support"]["overall"]
    assert 0.1 < outside < 0.9  # precondition: poor overlap by the default threshold
    strict = _analysis(frame, tmp_path / "default")
    run_single_agent("critique", strict, tmp_path / "default", {})
    assert any("poor above 10%" in i for i in strict.critique_history[-1].issues)
    lenient = _analysis(frame, tmp_path / "lenient")
    run_single_agent("critique", lenient, tmp_path / "lenient", {"overlap_poor_share": 0.95})
    fb = lenient.critique_history[-1]
    assert "trim_to_common_support" not in codes_in(fb.improvements) and fb.scores["overlap"] >= 2
    assert not any("Poor overlap" in i for i in fb.issues)


def test_poor_overlap_at_budget_limit_is_still_not_approved(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=2000, seed=2, strength=3.0)
    state = _analysis(frame, tmp_path, rnd=3)  # iteration_count 2 of max 3: no budget left
    fb = _critique(state, tmp_path)
    assert fb.decision is not CritiqueDecision.APPROVE
    assert state.debate_history[-1]["limit_reached"] is True and state.debate_history[-1]["approved"] is False
    assert "NOT APPROVED" in fb.reasoning


def test_imbalance_after_weighting_asks_for_another_propensity_model(tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    n = 2000
    x1, x2, x3 = rng.normal(size=(3, n))
    t = rng.binomial(1, 1 / (1 + np.exp(-(1.5 * (x1**2 - 1) + 0.3 * x2))))
    y = 2 * t + x1**2 + x2 + 0.5 * x3 + rng.normal(size=n)
    frame = pd.DataFrame({"x1": x1, "x2": x2, "x3": x3, "x1_sq": x1**2, "treated": t, "outcome": y})
    state = _analysis(frame, tmp_path)
    # A logistic model linear in x1 cannot capture the U-shaped assignment: x1_sq stays imbalanced.
    state.ps_diagnostics = _ps_diag(frame, _propensity(frame, ADJ), [*ADJ, "x1_sq"])
    assert state.ps_diagnostics["max_smd_after"] > 0.1  # precondition
    fb = _critique(state, tmp_path)
    assert fb.decision is CritiqueDecision.ITERATE
    assert "switch_propensity_model" in codes_in(fb.improvements)
    assert any("x1_sq" in i for i in fb.issues) and fb.scores["balance"] <= 2


def test_perfect_separation_is_rejected(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=1000, seed=5)
    frame["treated"] = (frame["x1"] + 0.5 * frame["x2"] > 0).astype(int)  # deterministic assignment
    frame["outcome"] = 2 * frame["treated"] + frame["x1"] + np.random.default_rng(0).normal(size=len(frame))
    state = _analysis(frame, tmp_path)
    fb = _critique(state, tmp_path)
    assert fb.decision is CritiqueDecision.REJECT
    assert "deterministic" in fb.reasoning and fb.improvements == []


def test_post_treatment_only_candidates_are_rejected(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=1000, seed=6, with_mediator=True)
    state = _analysis(frame, tmp_path)
    state.confounder_discovery = {
        "treatment": "treated",
        "outcome": "outcome",
        "adjustment_set": [],
        "excluded": {"mediator": "post-treatment: measured after treated"},
        "mediators": ["mediator"],
        "data_associated": ["mediator"],
        "identification": {"method": "backdoor", "identified": True, "estimand": "unadjusted"},
    }
    fb = _critique(state, tmp_path)
    assert fb.decision is CritiqueDecision.REJECT
    assert "mediator" in fb.reasoning and "after treated" in fb.reasoning


def test_left_out_confounder_asks_to_widen_adjustment_set(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=1500, seed=2)
    state = _analysis(frame, tmp_path)
    state.confounder_discovery = {**state.confounder_discovery, "data_associated": ["x1", "x2", "x4"]}
    fb = _critique(state, tmp_path)
    assert fb.decision is CritiqueDecision.ITERATE
    assert any(i.startswith("widen_adjustment_set:") and "x4" in i for i in fb.improvements)


def test_rounds_are_recorded_and_applied_improvements_not_repeated(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=2000, seed=2, strength=3.0)
    job1, job2 = tmp_path / "r1", tmp_path / "r2"
    state = _analysis(frame, job1, dr=False)
    fb1 = _critique(state, job1)
    assert fb1.decision is CritiqueDecision.ITERATE
    assert codes_in(fb1.improvements) >= {"trim_to_common_support", "add_doubly_robust"}

    # Round 2: the estimators act on both codes (trim to the suggested [0.05, 0.95], add AIPW).
    e = _propensity(frame, ADJ)
    trimmed = frame[(e >= 0.05) & (e <= 0.95)].reset_index(drop=True)
    applied = ["trim_to_common_support", "add_doubly_robust"]
    round2 = _analysis(trimmed, job2, dr=True, rnd=2, trimmed=True, changes=["trim_to_common_support: [0.05, 0.95]"])
    for e2 in round2.treatment_effects:
        e2.details.changes_applied = applied
    state.treatment_effects = round2.treatment_effects
    state.ps_diagnostics = round2.ps_diagnostics
    state.iteration_count = 1
    fb2 = _critique(state, job2)
    assert fb2.iteration == 2
    assert not codes_in(fb2.improvements) & set(applied)
    assert [d["round"] for d in state.debate_history] == [1, 2]
    assert state.debate_history[0]["changes_applied"] == []
    assert set(state.debate_history[1]["changes_applied"]) == set(applied)
    assert len(state.critique_history) == 2
    assert fb2.decision is not CritiqueDecision.REJECT


def test_assumed_identification_lowers_the_score_but_is_not_rejected(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=1500, seed=2)
    state = _analysis(frame, tmp_path)
    state.confounder_discovery = {
        **state.confounder_discovery,
        "identification": {
            "method": "data-driven (no graph)",
            "identified": False,
            "estimand": "conditional ignorability given the set (assumed, not identified from a graph)",
        },
    }
    fb = _critique(state, tmp_path)
    assert fb.decision is CritiqueDecision.APPROVE  # the clean data otherwise pass every check
    assert fb.scores["identification"] <= 3
    assert any("assumed" in i and "x1" in i for i in fb.issues)


def test_doubtful_adjustment_lowers_identification_and_is_named(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=1500, seed=2)
    state = _analysis(frame, tmp_path)
    state.confounder_discovery = {
        **state.confounder_discovery,
        "doubtful": {"x2": "kept: its edge into treated was found in 55% of resamples"},
    }
    fb = _critique(state, tmp_path)
    assert fb.scores["identification"] == 4
    assert any("uncertain evidence for x2" in i and "55% of resamples" in i for i in fb.issues)


def test_imputed_confounder_is_flagged_and_repairs_are_not_read_as_lost_rows(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=1500, seed=2)
    state = _analysis(frame, tmp_path)
    state.data_repairs = [
        {
            "kind": "expectation",
            "expectation": "expect_column_values_to_not_be_null",
            "column": "x1",
            "success": False,
            "unexpected_count": 450,
        },
        {
            "kind": "repair",
            "column": "x1",
            "issue": "missing values",
            "action": "imputed with the median (0.01)",
            "n_before": 450,
            "n_after": 0,
        },
    ]
    fb = _critique(state, tmp_path)
    assert fb.scores["identification"] <= 3
    assert any("x1 was missing and imputed for 30% of rows" in i for i in fb.issues)
    assert not any("dropped" in i for i in fb.issues)  # 450 -> 0 missing values is not 100% of rows lost


@pytest.mark.parametrize(("without", "settled"), [(2.02, True), (2.5, False)])
def test_a_complete_case_check_settles_an_imputed_confounder_only_when_it_agrees(
    tmp_path: Path, without: float, settled: bool
) -> None:
    """The estimate on the rows where x1 was measured, within a standard error of the all-rows one,
    is evidence the imputation does not move the answer; 2.5 against 2.0 (SE 0.1) is not."""
    frame, _ = linear_confounding(n=1500, seed=2)
    state = _analysis(frame, tmp_path)
    state.data_repairs = [
        {
            "kind": "repair",
            "column": "x1",
            "issue": "missing values",
            "action": "imputed with the median (0.01)",
            "n_before": 450,
            "n_after": 0,
        },
    ]
    cd = dict(state.confounder_discovery or {})
    cd["complete_case"] = {
        "x1": {
            "with": 2.0,
            "se_with": 0.1,
            "without": without,
            "se_without": 0.12,
            "share_imputed": 0.3,
            "n_complete": 1050,
        }
    }
    state.confounder_discovery = cd
    fb = _critique(state, tmp_path)
    flagged = any("x1 was missing and imputed" in i for i in fb.issues)
    assert flagged is not settled
    assert ("do not move the answer" in fb.reasoning) is settled


# ---- issue 9: never approve disagreement, degenerate intervals or unrepaired data ----------
def _shift(state: AnalysisState, method: str, to: float, se: float | None = None) -> None:
    """Move one estimate (and its interval) to ``to``, keeping or setting its SE."""
    for e in state.treatment_effects:
        if e.method == method:
            s = e.std_error if se is None else se
            e.estimate, e.std_error, e.ci_lower, e.ci_upper = to, s, to - 1.96 * s, to + 1.96 * s


def _headline_on(state: AnalysisState, method: str) -> None:
    for e in state.treatment_effects:
        e.details.headline = e.method == method
        e.details.method_key = e.method


def test_disagreeing_estimators_iterate_then_end_inconclusive(tmp_path: Path) -> None:
    frame, truth = linear_confounding(n=2000, seed=2, strength=1.0)
    state = _analysis(frame, tmp_path)
    _headline_on(state, "aipw")
    aipw = next(e for e in state.treatment_effects if e.method == "aipw")
    _shift(state, "aipw", aipw.estimate - 6 * aipw.std_error)  # a precise headline away from OLS and IPW
    fb = _critique(state, tmp_path)
    assert fb.decision is CritiqueDecision.ITERATE and fb.scores["agreement"] <= 2
    assert "refit_nuisance" in codes_in(fb.improvements)
    # The next round applied the change and the estimators still disagree: no approval, and no more rounds.
    for e in state.treatment_effects:
        e.details.changes_applied = ["refit_nuisance"]
    state.iteration_count = 1
    fb2 = _critique(state, tmp_path)
    assert fb2.decision is CritiqueDecision.REJECT and "inconclusive" in fb2.reasoning
    assert state.debate_history[-1]["approved"] is False


def test_disagreement_at_the_budget_limit_is_rejected_not_approved(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=2000, seed=3, strength=1.0)
    state = _analysis(frame, tmp_path, rnd=3)
    _headline_on(state, "aipw")
    aipw = next(e for e in state.treatment_effects if e.method == "aipw")
    _shift(state, "aipw", aipw.estimate + 6 * aipw.std_error)
    fb = _critique(state, tmp_path)
    assert fb.decision is CritiqueDecision.REJECT and "inconclusive" in fb.reasoning


def test_false_discovery_resting_on_one_estimator_is_not_approved(tmp_path: Path) -> None:
    """Symptom 6: a null effect; the headline excludes zero while the other credible estimators include it."""
    rng = np.random.default_rng(6)
    n = 2000
    x1, x2, x3 = rng.normal(size=(3, n))
    t = rng.binomial(1, 1 / (1 + np.exp(-(0.5 * x1 + 0.3 * x2))))
    y = x1 + x2 + 0.5 * x3 + rng.normal(size=n)  # no effect of t
    frame = pd.DataFrame({"x1": x1, "x2": x2, "x3": x3, "treated": t, "outcome": y})
    state = _analysis(frame, tmp_path, rnd=3)
    _headline_on(state, "aipw")
    for e in state.treatment_effects:
        if e.method in ("regression_adjustment", "ipw"):
            assert e.ci_lower <= 0 <= e.ci_upper  # precondition: the adjusted estimators cover the null
    aipw = next(e for e in state.treatment_effects if e.method == "aipw")
    _shift(state, "aipw", -2.3 * aipw.std_error)  # within reach of the others, but excludes zero
    fb = _critique(state, tmp_path)
    assert fb.decision is not CritiqueDecision.APPROVE
    assert any("rests on one estimator" in i for i in fb.issues)


def test_shared_nuisance_and_flagged_estimates_do_not_vote(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=2000, seed=2, strength=1.0)
    state = _analysis(frame, tmp_path)
    _headline_on(state, "aipw")
    for e in state.treatment_effects:
        if e.method == "ipw":  # far away, but it shares the headline's nuisances: it cannot confirm or refute
            e.details.shares_nuisance_with = "aipw"
            e.estimate, e.ci_lower, e.ci_upper = 50.0, 49.0, 51.0
        if e.method == "regression_adjustment":
            e.details.credible = False
            e.estimate, e.ci_lower, e.ci_upper = -50.0, -51.0, -49.0
    fb = _critique(state, tmp_path)
    assert fb.decision is CritiqueDecision.APPROVE, fb.reasoning
    assert "Not counted for agreement" in fb.reasoning


def test_degenerate_interval_is_never_approved(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=1500, seed=2)
    state = _analysis(frame, tmp_path, rnd=3)
    for e in state.treatment_effects:  # a change score with its components adjusted for: y - y == 0
        e.estimate, e.std_error, e.ci_lower, e.ci_upper = -4e-15, 5e-15, -1.4e-14, 6e-15
    fb = _critique(state, tmp_path)
    assert fb.decision is CritiqueDecision.REJECT and "degenerate" in fb.reasoning


def test_unrepaired_failed_expectation_on_an_adjusted_column_blocks_approval(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=1500, seed=2)
    failed = {
        "kind": "expectation",
        "expectation": "expect_column_values_to_be_between",
        "column": "x2",
        "success": False,
        "unexpected_count": 40,
    }
    state = _analysis(frame, tmp_path)
    state.data_repairs = [failed]
    fb = _critique(state, tmp_path)
    assert fb.decision is CritiqueDecision.REJECT and "x2: expect_column_values_to_be_between" in fb.reasoning
    state2 = _analysis(frame, tmp_path / "b")
    state2.data_repairs = [
        failed,
        {
            "kind": "repair",
            "column": "x2",
            "issue": "x100 recording errors",
            "action": "set to missing",
            "n_before": 40,
            "n_after": 0,
        },
    ]
    assert _critique(state2, tmp_path / "b").decision is CritiqueDecision.APPROVE
    # Outliers that data repair kept on purpose (reported, not a data error) do not block either.
    state3 = _analysis(frame, tmp_path / "c")
    state3.data_repairs = [
        {**failed, "repaired": False, "kept": "outliers are reported, not changed; not a data error"}
    ]
    assert _critique(state3, tmp_path / "c").decision is CritiqueDecision.APPROVE


def test_open_expectation_count_reads_each_entrys_repaired_flag(tmp_path: Path) -> None:
    """Failed expectations the re-check after repair passed, and kept outliers, are not 'not repaired'."""
    frame, _ = linear_confounding(n=1500, seed=2)
    base = {"kind": "expectation", "success": False, "unexpected_count": 12}
    state = _analysis(frame, tmp_path)
    state.data_repairs = [
        {**base, "expectation": "expect_column_values_to_not_be_null", "column": "x1", "repaired": True},
        {
            **base,
            "expectation": "expect_column_values_to_be_between",
            "column": "x2",
            "repaired": False,
            "kept": "outliers are reported, not changed; not a data error",
        },
        {**base, "expectation": "expect_column_values_to_be_of_type", "column": "age", "repaired": False},
    ]
    fb = _critique(state, tmp_path)
    assert [i for i in fb.issues if "not repaired" in i] == ["1 failed data expectation(s) were not repaired (age)."]
    state.data_repairs = state.data_repairs[:2]
    assert not any("not repaired" in i for i in _critique(state, tmp_path / "b").issues)


def test_design_headline_is_not_compared_with_confounded_backdoor_estimates(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=2000, seed=2, strength=1.0)
    state = _analysis(frame, tmp_path, rnd=3)
    _headline_on(state, "aipw")
    aipw = next(e for e in state.treatment_effects if e.method == "aipw")
    aipw.method = "Difference-in-differences (TWFE)"  # the design's estimate, far from the backdoor ones
    aipw.details.method_key, aipw.details.family = "did", "did"
    _shift(state, "Difference-in-differences (TWFE)", aipw.estimate + 8 * aipw.std_error)
    fb = _critique(state, tmp_path)
    assert fb.scores["agreement"] == 3 and "inconclusive" not in fb.reasoning
