"""Critique: decisions on hand-built analyses whose numbers are computed from seeded data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmarks.synthetic import linear_confounding
from tests.agents.critique_cases import (
    ADJ,
    make_analysis,
    make_ps_diag,
    propensity_scores,
    run_critique,
)
from whyflow.causal.review.critique import codes_in
from whyflow.causal.state import CritiqueDecision
from whyflow.flows.running.dispatch import run_single_agent


# ---- tests -------------------------------------------------------------------------------
def test_clean_analysis_is_approved(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=2000, seed=2, strength=1.0)
    state = make_analysis(frame, tmp_path)
    fb = run_critique(state, tmp_path)
    assert fb.decision is CritiqueDecision.APPROVE, fb.reasoning
    assert fb.iteration == 1 and fb.improvements == []
    assert fb.scores["overlap"] >= 4 and fb.scores["balance"] >= 4 and fb.scores["agreement"] >= 4
    assert fb.scores["identification"] == 5
    entry = state.debate_history[-1]
    assert entry.round == 1 and entry.decision == "APPROVE" and entry.scores == fb.scores


X1_IMPUTED = {
    "kind": "repair",
    "column": "x1",
    "issue": "missing values",
    "action": "imputed with the median (0.01)",
    "n_before": 450,
    "n_after": 0,
    "detail": "450 of 1,500 values (30.0%) imputed",
}
"""Data repair's record of x1 filled with its median on 30% of 1,500 rows."""


def test_poor_overlap_is_not_approved_and_asks_for_trimming(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=2000, seed=2, strength=3.0)
    state = make_analysis(frame, tmp_path)
    assert state.ps_diagnostics.outside_support.overall > 0.1  # precondition: real poor overlap
    fb = run_critique(state, tmp_path)
    assert fb.decision is CritiqueDecision.ITERATE
    assert "trim_to_common_support" in codes_in(fb.improvements)
    assert fb.scores["overlap"] <= 2
    assert any("overlap" in i.lower() for i in fb.issues)


def test_the_policy_is_the_recipe_s_options_and_printed_where_it_applies(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=2000, seed=2, strength=3.0)
    outside = make_analysis(frame, tmp_path).ps_diagnostics.outside_support.overall
    assert 0.1 < outside < 0.9  # precondition: poor overlap by the default threshold
    strict = make_analysis(frame, tmp_path / "default")
    run_single_agent("critique", strict, tmp_path / "default", {})
    assert any("poor above 10%" in i for i in strict.critique_history[-1].issues)
    lenient = make_analysis(frame, tmp_path / "lenient")
    run_single_agent("critique", lenient, tmp_path / "lenient", {"overlap_poor_share": 0.95})
    fb = lenient.critique_history[-1]
    assert "trim_to_common_support" not in codes_in(fb.improvements) and fb.scores["overlap"] >= 2
    assert not any("Poor overlap" in i for i in fb.issues)


def test_poor_overlap_at_budget_limit_is_still_not_approved(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=2000, seed=2, strength=3.0)
    state = make_analysis(frame, tmp_path, rnd=3)  # iteration_count 2 of max 3: no budget left
    fb = run_critique(state, tmp_path)
    assert fb.decision is not CritiqueDecision.APPROVE
    assert state.debate_history[-1].limit_reached is True and state.debate_history[-1].approved is False
    assert "NOT APPROVED" in fb.reasoning


def test_imbalance_after_weighting_asks_for_another_propensity_model(tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    n = 2000
    x1, x2, x3 = rng.normal(size=(3, n))
    t = rng.binomial(1, 1 / (1 + np.exp(-(1.5 * (x1**2 - 1) + 0.3 * x2))))
    y = 2 * t + x1**2 + x2 + 0.5 * x3 + rng.normal(size=n)
    frame = pd.DataFrame({"x1": x1, "x2": x2, "x3": x3, "x1_sq": x1**2, "treated": t, "outcome": y})
    state = make_analysis(frame, tmp_path)
    # A logistic model linear in x1 cannot capture the U-shaped assignment: x1_sq stays imbalanced.
    state.ps_diagnostics = make_ps_diag(frame, propensity_scores(frame, ADJ), [*ADJ, "x1_sq"])
    assert state.ps_diagnostics.max_smd_after > 0.1  # precondition
    fb = run_critique(state, tmp_path)
    assert fb.decision is CritiqueDecision.ITERATE
    assert "switch_propensity_model" in codes_in(fb.improvements)
    assert any("x1_sq" in i for i in fb.issues) and fb.scores["balance"] <= 2


def test_perfect_separation_is_rejected(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=1000, seed=5)
    frame["treated"] = (frame["x1"] + 0.5 * frame["x2"] > 0).astype(int)  # deterministic assignment
    frame["outcome"] = 2 * frame["treated"] + frame["x1"] + np.random.default_rng(0).normal(size=len(frame))
    state = make_analysis(frame, tmp_path)
    fb = run_critique(state, tmp_path)
    assert fb.decision is CritiqueDecision.REJECT
    assert "deterministic" in fb.reasoning and fb.improvements == []


def test_post_treatment_only_candidates_are_rejected(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=1000, seed=6, with_mediator=True)
    state = make_analysis(frame, tmp_path)
    state.confounder_discovery = {
        "treatment": "treated",
        "outcome": "outcome",
        "adjustment_set": [],
        "excluded": {"mediator": "post-treatment: measured after treated"},
        "mediators": ["mediator"],
        "data_associated": ["mediator"],
        "identification": {"method": "backdoor", "identified": True, "estimand": "unadjusted"},
    }
    fb = run_critique(state, tmp_path)
    assert fb.decision is CritiqueDecision.REJECT
    assert "mediator" in fb.reasoning and "after treated" in fb.reasoning


def test_left_out_confounder_asks_to_widen_adjustment_set(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=1500, seed=2)
    state = make_analysis(frame, tmp_path)
    state.confounder_discovery = {**state.confounder_discovery.model_dump(), "data_associated": ["x1", "x2", "x4"]}
    fb = run_critique(state, tmp_path)
    assert fb.decision is CritiqueDecision.ITERATE
    assert any(i.startswith("widen_adjustment_set:") and "x4" in i for i in fb.improvements)


def test_rounds_are_recorded_and_applied_improvements_not_repeated(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=2000, seed=2, strength=3.0)
    job1, job2 = tmp_path / "r1", tmp_path / "r2"
    state = make_analysis(frame, job1, dr=False)
    fb1 = run_critique(state, job1)
    assert fb1.decision is CritiqueDecision.ITERATE
    assert codes_in(fb1.improvements) >= {"trim_to_common_support", "add_doubly_robust"}

    # Round 2: the estimators act on both codes (trim to the suggested [0.05, 0.95], add AIPW).
    e = propensity_scores(frame, ADJ)
    trimmed = frame[(e >= 0.05) & (e <= 0.95)].reset_index(drop=True)
    applied = ["trim_to_common_support", "add_doubly_robust"]
    round2 = make_analysis(
        trimmed, job2, dr=True, rnd=2, trimmed=True, changes=["trim_to_common_support: [0.05, 0.95]"]
    )
    for e2 in round2.treatment_effects:
        e2.details.changes_applied = applied
    state.treatment_effects = round2.treatment_effects
    state.ps_diagnostics = round2.ps_diagnostics
    state.iteration_count = 1
    fb2 = run_critique(state, job2)
    assert fb2.iteration == 2
    assert not codes_in(fb2.improvements) & set(applied)
    assert [d.round for d in state.debate_history] == [1, 2]
    assert state.debate_history[0].changes_applied == []
    assert set(state.debate_history[1].changes_applied) == set(applied)
    assert len(state.critique_history) == 2
    assert fb2.decision is not CritiqueDecision.REJECT


def test_assumed_identification_lowers_the_score_but_is_not_rejected(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=1500, seed=2)
    state = make_analysis(frame, tmp_path)
    state.confounder_discovery = {
        **state.confounder_discovery.model_dump(),
        "identification": {
            "method": "data-driven (no graph)",
            "identified": False,
            "estimand": "conditional ignorability given the set (assumed, not identified from a graph)",
        },
    }
    fb = run_critique(state, tmp_path)
    assert fb.decision is CritiqueDecision.APPROVE  # the clean data otherwise pass every check
    assert fb.scores["identification"] <= 3
    assert any("assumed" in i and "x1" in i for i in fb.issues)


def test_doubtful_adjustment_lowers_identification_and_is_named(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=1500, seed=2)
    state = make_analysis(frame, tmp_path)
    state.confounder_discovery = {
        **state.confounder_discovery.model_dump(),
        "doubtful": {"x2": "kept: its edge into treated was found in 55% of resamples"},
    }
    fb = run_critique(state, tmp_path)
    assert fb.scores["identification"] == 4
    assert any("uncertain evidence for x2" in i and "55% of resamples" in i for i in fb.issues)


def test_imputed_confounder_is_flagged_and_repairs_are_not_read_as_lost_rows(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=1500, seed=2)
    state = make_analysis(frame, tmp_path)
    state.data_repairs = [
        {
            "kind": "expectation",
            "expectation": "expect_column_values_to_not_be_null",
            "column": "x1",
            "success": False,
            "unexpected_count": 450,
            "detail": "450 of 1,500 values missing (30.0%)",
        },
        X1_IMPUTED,
    ]
    fb = run_critique(state, tmp_path)
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
    state = make_analysis(frame, tmp_path)
    state.data_repairs = [dict(X1_IMPUTED)]
    cd = state.confounder_discovery.model_dump()
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
    fb = run_critique(state, tmp_path)
    flagged = any("x1 was missing and imputed" in i for i in fb.issues)
    assert flagged is not settled
    assert ("do not move the answer" in fb.reasoning) is settled


@pytest.mark.parametrize(
    ("outcome_p", "without", "doubted"), [(0.001, 2.5, True), (0.001, 2.02, False), (0.4, 2.5, False)]
)
def test_a_complete_case_headline_is_doubted_only_where_the_outcome_drives_gaps_that_matter(
    tmp_path: Path, outcome_p: float, without: float, doubted: bool
) -> None:
    """The estimators adjusted for x1 on the rows where it was measured. That answer is doubted only when
    the outcome predicts where x1 is missing (p < 0.01) and the all-rows estimate differs by more than a
    standard error; gaps at random, or a choice that does not move the answer, leave no doubt."""
    frame, _ = linear_confounding(n=1500, seed=2)
    state = make_analysis(frame, tmp_path)
    state.data_repairs = [dict(X1_IMPUTED)]
    for e in state.treatment_effects:
        e.details.extras["complete_cases"] = {"x1": {"share_imputed": 0.3, "n_complete": 1050, "outcome_p": outcome_p}}
    cd = state.confounder_discovery.model_dump()
    cd["complete_case"] = {
        "x1": {
            "with": without,
            "se_with": 0.1,
            "without": 2.0,
            "se_without": 0.12,
            "share_imputed": 0.3,
            "n_complete": 1050,
        }
    }
    state.confounder_discovery = cd
    fb = run_critique(state, tmp_path)
    assert not any("x1 was missing and imputed" in i for i in fb.issues)  # the headline used x1's real values
    assert "1,050 rows where x1 was measured" in fb.reasoning
    assert any("depends on the outcome" in i for i in fb.issues) is doubted
    assert (fb.decision is CritiqueDecision.APPROVE) is not doubted
