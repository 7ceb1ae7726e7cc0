"""Critique: estimators that disagree, degenerate intervals and unrepaired data are never approved."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.synthetic import linear_confounding
from tests.agents.critique_cases import (
    make_analysis,
    run_critique,
)
from whyflow.causal.review.critique import codes_in
from whyflow.causal.state import AnalysisState, CritiqueDecision


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
    state = make_analysis(frame, tmp_path)
    _headline_on(state, "aipw")
    aipw = next(e for e in state.treatment_effects if e.method == "aipw")
    _shift(state, "aipw", aipw.estimate - 6 * aipw.std_error)  # a precise headline away from OLS and IPW
    fb = run_critique(state, tmp_path)
    assert fb.decision is CritiqueDecision.ITERATE and fb.scores["agreement"] <= 2
    assert "refit_nuisance" in codes_in(fb.improvements)
    # The next round applied the change and the estimators still disagree: no approval, and no more rounds.
    for e in state.treatment_effects:
        e.details.changes_applied = ["refit_nuisance"]
    state.iteration_count = 1
    fb2 = run_critique(state, tmp_path)
    assert fb2.decision is CritiqueDecision.REJECT and "inconclusive" in fb2.reasoning
    assert state.debate_history[-1].approved is False


def test_disagreement_at_the_budget_limit_is_rejected_not_approved(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=2000, seed=3, strength=1.0)
    state = make_analysis(frame, tmp_path, rnd=3)
    _headline_on(state, "aipw")
    aipw = next(e for e in state.treatment_effects if e.method == "aipw")
    _shift(state, "aipw", aipw.estimate + 6 * aipw.std_error)
    fb = run_critique(state, tmp_path)
    assert fb.decision is CritiqueDecision.REJECT and "inconclusive" in fb.reasoning


def test_false_discovery_resting_on_one_estimator_is_not_approved(tmp_path: Path) -> None:
    """Symptom 6: a null effect; the headline excludes zero while the other credible estimators include it."""
    rng = np.random.default_rng(6)
    n = 2000
    x1, x2, x3 = rng.normal(size=(3, n))
    t = rng.binomial(1, 1 / (1 + np.exp(-(0.5 * x1 + 0.3 * x2))))
    y = x1 + x2 + 0.5 * x3 + rng.normal(size=n)  # no effect of t
    frame = pd.DataFrame({"x1": x1, "x2": x2, "x3": x3, "treated": t, "outcome": y})
    state = make_analysis(frame, tmp_path, rnd=3)
    _headline_on(state, "aipw")
    for e in state.treatment_effects:
        if e.method in ("regression_adjustment", "ipw"):
            assert e.ci_lower <= 0 <= e.ci_upper  # precondition: the adjusted estimators cover the null
    aipw = next(e for e in state.treatment_effects if e.method == "aipw")
    _shift(state, "aipw", -2.3 * aipw.std_error)  # within reach of the others, but excludes zero
    fb = run_critique(state, tmp_path)
    assert fb.decision is not CritiqueDecision.APPROVE
    assert any("rests on one estimator" in i for i in fb.issues)


def test_shared_nuisance_and_flagged_estimates_do_not_vote(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=2000, seed=2, strength=1.0)
    state = make_analysis(frame, tmp_path)
    _headline_on(state, "aipw")
    for e in state.treatment_effects:
        if e.method == "ipw":  # far away, but it shares the headline's nuisances: it cannot confirm or refute
            e.details.shares_nuisance_with = "aipw"
            e.estimate, e.ci_lower, e.ci_upper = 50.0, 49.0, 51.0
        if e.method == "regression_adjustment":
            e.details.credible = False
            e.estimate, e.ci_lower, e.ci_upper = -50.0, -51.0, -49.0
    fb = run_critique(state, tmp_path)
    assert fb.decision is CritiqueDecision.APPROVE, fb.reasoning
    assert "Not counted for agreement" in fb.reasoning


def test_degenerate_interval_is_never_approved(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=1500, seed=2)
    state = make_analysis(frame, tmp_path, rnd=3)
    for e in state.treatment_effects:  # a change score with its components adjusted for: y - y == 0
        e.estimate, e.std_error, e.ci_lower, e.ci_upper = -4e-15, 5e-15, -1.4e-14, 6e-15
    fb = run_critique(state, tmp_path)
    assert fb.decision is CritiqueDecision.REJECT and "degenerate" in fb.reasoning


def test_unrepaired_failed_expectation_on_an_adjusted_column_blocks_approval(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=1500, seed=2)
    failed = {
        "kind": "expectation",
        "expectation": "expect_column_values_to_be_between",
        "column": "x2",
        "success": False,
        "unexpected_count": 40,
        "detail": "40 of 1,500 values outside the plausible range",
    }
    state = make_analysis(frame, tmp_path)
    state.data_repairs = [failed]
    fb = run_critique(state, tmp_path)
    assert fb.decision is CritiqueDecision.REJECT and "x2: expect_column_values_to_be_between" in fb.reasoning
    state2 = make_analysis(frame, tmp_path / "b")
    state2.data_repairs = [
        failed,
        {
            "kind": "repair",
            "column": "x2",
            "issue": "x100 recording errors",
            "action": "set to missing",
            "n_before": 40,
            "n_after": 0,
            "detail": "40 values at the wrong scale set to missing",
        },
    ]
    assert run_critique(state2, tmp_path / "b").decision is CritiqueDecision.APPROVE
    # Outliers that data repair kept on purpose (reported, not a data error) do not block either.
    state3 = make_analysis(frame, tmp_path / "c")
    state3.data_repairs = [
        {**failed, "repaired": False, "kept": "outliers are reported, not changed; not a data error"}
    ]
    assert run_critique(state3, tmp_path / "c").decision is CritiqueDecision.APPROVE


def test_open_expectation_count_reads_each_entrys_repaired_flag(tmp_path: Path) -> None:
    """Failed expectations the re-check after repair passed, and kept outliers, are not 'not repaired'."""
    frame, _ = linear_confounding(n=1500, seed=2)
    base = {"kind": "expectation", "success": False, "unexpected_count": 12, "detail": "12 unexpected values"}
    state = make_analysis(frame, tmp_path)
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
    fb = run_critique(state, tmp_path)
    assert [i for i in fb.issues if "not repaired" in i] == ["1 failed data expectation(s) were not repaired (age)."]
    state.data_repairs = state.data_repairs[:2]
    assert not any("not repaired" in i for i in run_critique(state, tmp_path / "b").issues)


def test_design_headline_is_not_compared_with_confounded_backdoor_estimates(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=2000, seed=2, strength=1.0)
    state = make_analysis(frame, tmp_path, rnd=3)
    _headline_on(state, "aipw")
    aipw = next(e for e in state.treatment_effects if e.method == "aipw")
    aipw.method = "Difference-in-differences (TWFE)"  # the design's estimate, far from the backdoor ones
    aipw.details.method_key, aipw.details.family = "did", "did"
    _shift(state, "Difference-in-differences (TWFE)", aipw.estimate + 8 * aipw.std_error)
    fb = run_critique(state, tmp_path)
    assert fb.scores["agreement"] == 3 and "inconclusive" not in fb.reasoning
