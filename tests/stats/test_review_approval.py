"""Approval needs positive evidence: the critique's rules on hand-built rounds (whyflow.causal.review.rules).

A spent budget is not evidence, an open doubt keeps the answer unapproved, and a design the user
stated is the question: its estimator headlines or the answer is refused with the reason.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from tests.factories import make_estimate
from whyflow.causal.diagnostics import ConfounderDiscovery, DataRepairEntry, PSDiagnostics
from whyflow.causal.estimates import CommonSupportCheck, FlexibleCheck, Stability
from whyflow.causal.review.doubts import AGAINST_THE_GRAPH
from whyflow.causal.review.rules import ReviewInputs, review
from whyflow.causal.state import CritiqueDecision

CD: dict[str, Any] = {
    "treatment": "treated",
    "outcome": "outcome",
    "adjustment_set": ["x1", "x2"],
    "excluded": {},
    "data_associated": ["x1", "x2"],
    "identification": {"method": "backdoor", "identified": True, "estimand": "E[Y|do(T)]"},
}
PS: dict[str, Any] = {
    "treatment": "treated",
    "covariates": ["x1", "x2"],
    "outside_support": {"treated": 0.0, "control": 0.0, "overall": 0.0},
    "common_support": [0.05, 0.95],
    "auc": 0.7,
    "extreme_share": 0.0,
    "overlap_ok": True,
    "max_smd_after": 0.02,
    "balance_ok": True,
    "model": "logistic",
}


def _backdoor(aipw: float = 2.0, others: float = 2.0, se: float = 0.1) -> list:
    return [
        make_estimate("aipw", aipw, se, headline=True),
        make_estimate("ols", others, se),
        make_estimate("ipw", others, se),
        make_estimate("naive", 5.0, se),
    ]


def _inputs(**kw: Any) -> ReviewInputs:
    base: dict[str, Any] = dict(
        treatment="treated",
        outcome="outcome",
        estimates=_backdoor(),
        round=1,
        max_iterations=3,
        ps=PS,
        confounders=CD,
    )
    base.update(kw)  # the records as hand-built dicts, read as the state reads them
    base["ps"] = PSDiagnostics.model_validate(base["ps"]) if base["ps"] is not None else None
    base["confounders"] = ConfounderDiscovery.model_validate(base["confounders"]) if base["confounders"] else None
    base["repairs"] = TypeAdapter(list[DataRepairEntry]).validate_python(base.get("repairs", []))
    return ReviewInputs(**base)


def test_a_clean_round_with_agreeing_estimators_is_approved() -> None:
    rv = review(_inputs())
    assert rv.decision is CritiqueDecision.APPROVE, rv.reasoning
    assert rv.verdict.startswith("APPROVE") and not rv.limit_reached


def test_a_spent_budget_with_an_untried_improvement_is_not_approved() -> None:
    cd = {**CD, "data_associated": ["x1", "x2", "x3"]}  # x3 confounds and is neither adjusted nor excluded
    first = review(_inputs(confounders=cd, round=1))
    assert first.decision is CritiqueDecision.ITERATE and not first.limit_reached
    last = review(_inputs(confounders=cd, round=3))
    assert last.decision is not CritiqueDecision.APPROVE
    assert last.limit_reached
    assert last.verdict.startswith("NOT APPROVED (limit)")
    assert "x3" in last.verdict and "widen_adjustment_set" in last.verdict  # says which doubts remain


def test_uncertain_adjustment_listed_every_round_is_never_approved() -> None:
    weak = "kept, but post-treatment by its name (ends in _followup), which suggests it is measured after the treatment"
    cd = {**CD, "doubtful": {"x2": weak}}
    for rnd in (1, 2, 3):
        rv = review(_inputs(confounders=cd, round=rnd))
        assert rv.decision is not CritiqueDecision.APPROVE, rnd
        assert "uncertain adjustment" in rv.verdict and "x2" in rv.verdict
    assert review(_inputs(confounders=cd, round=3)).limit_reached


def test_an_unoriented_edge_is_the_stated_assumption_not_a_doubt() -> None:
    for why in (
        "left out on the collider signature: predicted by treatment and outcome jointly; if it precedes the "
        "treatment, adjust for it",
        "kept as the baseline of the change-score outcome (gain = weight1 - weight0)",
        "kept: its edge with the treatment is undirected (orientation unknown)",
        f"{AGAINST_THE_GRAPH}: the graph makes it a mediator, but its best directed path from the treatment has "
        "an edge in only 40% of bootstrap resamples; a weak orientation is not evidence that the treatment causes it",
    ):
        rv = review(_inputs(confounders={**CD, "doubtful": {"x1": why}}, round=1))
        assert rv.decision is CritiqueDecision.APPROVE, rv.reasoning
        assert any("x1" in i for i in rv.issues)  # still said, as an assumption


def test_residual_confounding_from_an_imputed_confounder_blocks_approval() -> None:
    repairs = [
        {
            "kind": "repair",
            "column": "x1",
            "issue": "missing values",
            "action": "imputed with the median",
            "n_before": 400,
            "n_after": 0,
            "detail": "400 of 1,000 values (40.0%) imputed",
        }
    ]
    rv = review(_inputs(repairs=repairs, n_input_rows=1000, round=3))
    assert rv.decision is not CritiqueDecision.APPROVE
    assert "residual confounding" in rv.verdict and "x1" in rv.verdict


def test_credible_estimators_disagreeing_beyond_their_intervals_never_approve() -> None:
    for rnd in (1, 3):
        rv = review(_inputs(estimates=_backdoor(aipw=2.74, others=2.0, se=0.06), round=rnd))
        assert rv.decision is not CritiqueDecision.APPROVE, rv.reasoning


def test_a_stated_instrument_that_could_not_be_fitted_refuses_the_regression_answer() -> None:
    ols = make_estimate(
        "ols",
        0.5,
        0.1,
        headline=True,
        skipped_methods={"iv": "Instrumental variables (2SLS) failed (ValueError: regressors do not have full rank)"},
    )
    rv = review(_inputs(estimates=[ols, make_estimate("naive", 0.6, 0.1)], declared=("iv",), instrument="z"))
    assert rv.decision is CritiqueDecision.REJECT
    assert "instrumental variables" in rv.verdict and "full rank" in rv.verdict
    assert "different question" in rv.verdict


def test_the_stated_design_as_headline_passes_the_contract() -> None:
    iv = make_estimate("iv", 1.0, 0.2, headline=True, estimand="LATE", first_stage_f=85.0)
    rv = review(_inputs(estimates=[iv, make_estimate("ols", 0.4, 0.1)], declared=("iv",), instrument="z"))
    assert rv.decision is CritiqueDecision.APPROVE, rv.reasoning


def test_a_weak_instrument_is_refused_with_its_first_stage_f() -> None:
    iv = make_estimate("iv", 1.0, 0.9, headline=True, estimand="LATE", first_stage_f=3.7)
    rv = review(_inputs(estimates=[iv], declared=("iv",), instrument="z"))
    assert rv.decision is CritiqueDecision.REJECT
    assert "weak instrument" in rv.verdict and "3.7" in rv.verdict


def test_instruments_that_disagree_are_refused_with_the_overidentification_test() -> None:
    iv = make_estimate("iv", 1.0, 0.2, headline=True, estimand="LATE", first_stage_f=85.0, overidentification_p=0.003)
    rv = review(_inputs(estimates=[iv, make_estimate("ols", 0.4, 0.1)], declared=("iv",), instrument="z"))
    assert rv.decision is CritiqueDecision.REJECT
    assert "instruments disagree" in rv.verdict and "0.003" in rv.verdict
    agree = make_estimate("iv", 1.0, 0.2, headline=True, estimand="LATE", first_stage_f=85.0, overidentification_p=0.6)
    rv = review(_inputs(estimates=[agree, make_estimate("ols", 0.4, 0.1)], declared=("iv",), instrument="z"))
    assert rv.decision is CritiqueDecision.APPROVE, rv.reasoning
    assert any("does not reject" in i for i in rv.issues)


def test_staggered_twfe_far_from_the_two_stage_check_is_not_approved() -> None:
    def did(check: float) -> Any:
        two_stage = {"estimate": check, "std_error": 0.1, "library": "pyfixest did2s"}
        return make_estimate("did", 1.0, 0.1, headline=True, estimand="ATT", n_treated_units=12, did2s_check=two_stage)

    rv = review(_inputs(estimates=[did(2.0)], declared=("did",)))
    assert rv.decision is not CritiqueDecision.APPROVE and "staggered adoption" in rv.verdict
    close = review(_inputs(estimates=[did(1.1)], declared=("did",)))
    assert close.decision is CritiqueDecision.APPROVE and any("agrees" in i for i in close.issues)


def test_one_treated_unit_in_a_panel_is_refused() -> None:
    did = make_estimate("did", -0.02, 0.005, headline=True, estimand="ATT", n_treated_units=1, n_units=50)
    rv = review(_inputs(estimates=[did], declared=("did",)))
    assert rv.decision is CritiqueDecision.REJECT
    assert "single treated unit" in rv.verdict
    many = make_estimate("did", -0.02, 0.005, headline=True, estimand="ATT", n_treated_units=12, n_units=50)
    assert review(_inputs(estimates=[many], declared=("did",))).decision is CritiqueDecision.APPROVE


def test_a_few_groups_with_row_level_errors_are_not_refused_as_one_treated_unit() -> None:
    why = "a repeated cross-section in 2 groups: errors clustered on 2 groups are not credible"
    did = make_estimate(
        "did", 1.4, 0.13, headline=True, estimand="ATT", n_treated_units=1, n_units=2, row_level_errors=why
    )
    rv = review(_inputs(estimates=[did], declared=("did",)))
    assert rv.decision is CritiqueDecision.APPROVE, rv.reasoning
    assert any("Row-level robust errors" in i for i in rv.issues)


def test_a_fuzzy_discontinuity_needs_a_strong_jump_in_take_up() -> None:
    weak = make_estimate(
        "rdd", 2.0, 0.9, headline=True, estimand="LATE", design="fuzzy", first_stage_jump=0.05, first_stage_f=2.1
    )
    rv = review(_inputs(estimates=[weak], declared=("rdd",)))
    assert rv.decision is CritiqueDecision.REJECT
    assert "weak first stage of the fuzzy discontinuity" in rv.verdict and "2.1" in rv.verdict
    strong = make_estimate(
        "rdd", 2.0, 0.3, headline=True, estimand="LATE", design="fuzzy", first_stage_jump=0.5, first_stage_f=60.0
    )
    assert review(_inputs(estimates=[strong], declared=("rdd",))).decision is CritiqueDecision.APPROVE


def test_an_uncertain_role_that_does_not_move_the_estimate_is_settled() -> None:
    moves = {"x2": {"with": 2.0, "se_with": 0.1, "without": 2.5, "se_without": 0.1, "shift_in_se": 5.0}}
    still = {"x2": {"with": 2.0, "se_with": 0.1, "without": 2.04, "se_without": 0.1, "shift_in_se": 0.4}}
    cd = {**CD, "doubtful": {"x2": "kept, but its name ends in _2, which suggests it is measured after the treatment"}}
    assert review(_inputs(confounders={**cd, "doubtful_sensitivity": moves})).decision is not CritiqueDecision.APPROVE
    rv = review(_inputs(confounders={**cd, "doubtful_sensitivity": still}))
    assert rv.decision is CritiqueDecision.APPROVE, rv.reasoning
    assert any("do not matter" in r and "x2" in r for r in rv.reasoning)


def test_a_panel_analysed_as_independent_rows_is_not_approved() -> None:
    import numpy as np
    import pandas as pd

    from whyflow.causal.dataprep.panel_shape import repeated_units

    rng = np.random.default_rng(0)
    units, years = 10, 60
    frame = pd.DataFrame(
        {
            "cc": np.repeat([f"C{i}" for i in range(units)], years),
            "year": np.tile(np.arange(1950, 1950 + years), units),
            "x": rng.normal(size=units * years),
        }
    )
    panel = repeated_units(frame, "year", ("x",))
    assert panel is not None and panel["unit"] == "cc" and panel["n_units"] == 10 and panel["rows_per_unit"] == 60
    assert repeated_units(frame.drop_duplicates("cc"), "year") is None  # one row a unit: nothing repeats
    found = repeated_units(frame, None, ("x",))  # no time column known: 'year' is found from the data
    assert found == {**panel, "time_found_in_data": True}
    head = make_estimate("dml_plm", -0.003, 0.002, headline=True, repeated_units=panel)
    rv = review(_inputs(estimates=[head, make_estimate("ols", -0.003, 0.002)]))
    assert rv.decision is not CritiqueDecision.APPROVE
    assert "repeated units" in rv.verdict and "--unit cc --time year" in rv.verdict


def test_controls_that_absorb_the_instrument_leave_the_2sls_unapproved() -> None:
    absorbed = make_estimate(
        "iv",
        0.16,
        0.11,
        headline=True,
        estimand="LATE",
        first_stage_f=68.0,
        first_stage_partial_r2=0.049,
        first_stage_r2_alone=0.4955,
        instrument_explained_by=["enrolment", "classes"],
    )
    rv = review(_inputs(estimates=[absorbed], declared=("iv",), instrument="z"))
    assert rv.decision is not CritiqueDecision.APPROVE
    assert "absorb 90%" in rv.verdict and "most related to it: enrolment, classes" in rv.verdict
    kept = make_estimate(
        "iv",
        0.005,
        0.011,
        headline=True,
        estimand="LATE",
        first_stage_f=12000.0,
        first_stage_partial_r2=0.604,
        first_stage_r2_alone=0.603,
    )
    assert review(_inputs(estimates=[kept], declared=("iv",), instrument="z")).decision is CritiqueDecision.APPROVE


def test_an_answer_that_hinges_on_an_unoriented_column_is_not_approved() -> None:
    """A self-reported copy of the outcome with an unoriented edge halves the trial's effect when kept."""
    why = "kept as a possible confounder, but its edge anytest_sr -> tx has this orientation in only 20% of resamples"
    moves = {"anytest_sr": {"with": 0.122, "se_with": 0.019, "without": 0.246, "se_without": 0.021, "shift_in_se": 5.9}}
    cd = {**CD, "doubtful": {"anytest_sr": why}, "doubtful_sensitivity": moves}
    trial = {
        **PS,
        "balance": {
            "anytest_sr": {"smd_before": 0.46, "smd_after": 0.02},
            "age": {"smd_before": 0.08, "smd_after": 0.01},
        },
    }
    rv = review(_inputs(confounders=cd, ps=trial))
    assert rv.decision is not CritiqueDecision.APPROVE
    assert "anytest_sr" in rv.verdict and "metadata" in rv.verdict
    small = {
        "anytest_sr": {"with": 0.122, "se_with": 0.019, "without": 0.150, "se_without": 0.021, "shift_in_se": 1.33}
    }
    assert review(_inputs(confounders={**cd, "doubtful_sensitivity": small}, ps=trial)).decision is (
        CritiqueDecision.APPROVE
    )
    # Several covariates out of balance: confounding is the ordinary reading, and a confounder moves the answer.
    confounded = {
        **PS,
        "balance": {
            "anytest_sr": {"smd_before": 0.46, "smd_after": 0.02},
            "age": {"smd_before": 0.35, "smd_after": 0.01},
        },
    }
    assert review(_inputs(confounders=cd, ps=confounded)).decision is CritiqueDecision.APPROVE
    collider = {"m": "left out on the collider signature: predicted by treatment and outcome jointly"}
    big = {"m": {"with": -0.475, "se_with": 0.04, "without": -0.024, "se_without": 0.049, "shift_in_se": 9.2}}
    decided = {**CD, "doubtful": collider, "doubtful_sensitivity": big}
    assert review(_inputs(confounders=decided)).decision is CritiqueDecision.APPROVE


def test_an_answer_that_hinges_on_a_column_kept_against_the_graph_is_not_approved() -> None:
    """The shipped example's study without its metadata: the graph puts skills_score (a mediator) after the
    training on a weak path, so it stays adjusted for; the effect is 712 with it and 1,218 without."""
    why = (
        f"{AGAINST_THE_GRAPH}: the graph makes it a descendant of the treatment in the graph, but its best directed "
        "path from the treatment has an edge in only 50% of bootstrap resamples; a weak orientation is not evidence"
    )
    moves = {"skills": {"with": 711.9, "se_with": 190.0, "without": 1218.0, "se_without": 140.0, "shift_in_se": 2.66}}
    cd = {**CD, "doubtful": {"skills": why}, "doubtful_sensitivity": moves}
    rv = review(_inputs(confounders=cd))  # an observational study: several covariates may be out of balance
    assert rv.decision is not CritiqueDecision.APPROVE
    assert "skills" in rv.verdict and "711.9 with, 1218 without" in rv.verdict and "metadata" in rv.verdict
    # Within two standard errors the weak orientation stays the stated assumption.
    near = {"skills": {**moves["skills"], "without": 1000.0, "shift_in_se": 1.5}}
    rv = review(_inputs(confounders={**cd, "doubtful_sensitivity": near}))
    assert rv.decision is CritiqueDecision.APPROVE, rv.reasoning
    # Stated by the analyst (--controls): their assumption, not the recipe's doubt.
    stated = {**cd, "adjustment_set": ["x1", "x2", "skills"], "recipe_adjustment_set": ["x1", "x2", "skills"]}
    rv = review(_inputs(confounders=stated))
    assert rv.decision is CritiqueDecision.APPROVE and "learned graph puts" not in rv.verdict, rv.verdict
    # An unoriented edge (no directed path) is not the graph's word against the adjustment.
    unoriented = why.replace(AGAINST_THE_GRAPH, "kept")
    rv = review(_inputs(confounders={**cd, "doubtful": {"skills": unoriented}}))
    assert rv.decision is CritiqueDecision.APPROVE, rv.reasoning


def _with_stability(stability: Stability) -> list:
    rows = _backdoor()
    rows[0] = make_estimate("aipw", 2.0, 0.1, headline=True, stability=stability)
    return rows


def test_an_answer_that_moves_on_common_support_is_not_approved() -> None:
    moved = CommonSupportCheck(estimate=1.6, std_error=0.12, n_kept=800, n_dropped=200, band=(0.1, 0.9), moved=True)
    rv = review(_inputs(estimates=_with_stability(Stability(common_support=moved))))
    assert rv.decision is not CritiqueDecision.APPROVE
    assert "common-support sample" in rv.verdict and "more than its standard error" in rv.verdict


def test_an_answer_that_moves_with_flexible_nuisances_is_not_approved_and_a_steady_one_is() -> None:
    flexible = FlexibleCheck(estimate=2.5, std_error=0.1, propensity="gbm", outcome="linear+boosting", moved=True)
    rv = review(_inputs(estimates=_with_stability(Stability(flexible=flexible))))
    assert rv.decision is not CritiqueDecision.APPROVE and "flexible nuisance models" in rv.verdict
    steady = flexible.model_copy(update={"estimate": 2.05, "moved": False})
    assert review(_inputs(estimates=_with_stability(Stability(flexible=steady)))).decision is CritiqueDecision.APPROVE


def test_a_skipped_re_estimate_neither_moves_nor_holds_an_estimate() -> None:
    skipped = CommonSupportCheck(skipped="fewer than 20 units of an arm have propensity in [0.1, 0.9]")
    assert review(_inputs(estimates=_with_stability(Stability(common_support=skipped)))).decision is (
        CritiqueDecision.APPROVE
    )
    with pytest.raises(ValidationError):
        CommonSupportCheck(skipped="no arm", estimate=1.0, std_error=0.1, moved=True)
    with pytest.raises(ValidationError):
        FlexibleCheck(propensity="gbm")  # neither made nor skipped
