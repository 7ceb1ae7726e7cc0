"""effect_estimator on seeded synthetic data with known truths, through run_single_agent."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from benchmarks import synthetic_effects as S
from tests.helpers import make_state
from whyflow.causal.state import CritiqueDecision, CritiqueFeedback, StudyDesign
from whyflow.core.errors import AgentError
from whyflow.flows.running.dispatch import run_single_agent

FAST = {"methods": ["naive", "ols", "ipw", "aipw"], "bootstrap": 50}


def _by_key(state) -> dict:
    return {e.details.method_key: e for e in state.treatment_effects}


def _covers(e, value: float) -> bool:
    return e.ci_lower <= value <= e.ci_upper


def _headlines(state) -> list:
    return [e for e in state.treatment_effects if e.details.headline]


def test_linear_confounding_default_menu(tmp_path: Path) -> None:
    frame, truth = S.linear_confounding(n=2000, seed=21)
    state = make_state(frame, tmp_path, "treated", "outcome")
    result = run_single_agent("effect_estimator", state, tmp_path, {"bootstrap": 50})
    est = _by_key(state)
    assert {"naive", "ols", "ipw", "aipw", "matching", "stratification", "dr_learner"} <= set(est)
    assert est["naive"].details.is_naive and not _covers(est["naive"], truth["effect"])
    for key in ("ols", "ipw", "aipw"):
        assert _covers(est[key], truth["effect"]), key
    heads = _headlines(state)
    assert len(heads) == 1 and heads[0].details.method_key == "aipw" and heads[0].details.headline_reason
    assert all(e.details.round == 1 and e.details.n_used == 2000 for e in est.values())
    assert est["aipw"].details.adjustment_set == ["x1", "x2", "x3"]
    assert state.analyzed_pairs[0].treatment == "treated" and state.analyzed_pairs[0].priority == 1
    assert "meta-learners" in result.reasoning and "Headline" in result.reasoning


def test_nonlinear_cate_summary_orders_subgroups(tmp_path: Path) -> None:
    frame, truth = S.nonlinear_heterogeneous(n=2500, seed=1)
    state = make_state(frame, tmp_path, "treated", "outcome")
    run_single_agent("effect_estimator", state, tmp_path, {"methods": ["naive", "aipw", "dr_learner", "x_learner"]})
    est = _by_key(state)
    assert _covers(est["aipw"], truth["effect"]) or _covers(est["dr_learner"], truth["effect"])
    for key in ("dr_learner", "x_learner"):
        summary = est[key].details.extras["cate_summary"]
        assert est[key].details.extras["cate_modifier"] == "x1"
        ordered = [v["estimate"] for v in sorted(summary.values(), key=lambda v: v["quartile"])]
        assert ordered == sorted(ordered), (key, ordered)


def test_poor_overlap_trimmed_in_round_two(tmp_path: Path) -> None:
    frame, truth = S.poor_overlap(n=2500, seed=0)
    state = make_state(frame, tmp_path, "treated", "outcome")
    run_single_agent("effect_estimator", state, tmp_path, FAST)
    head = _headlines(state)[0]
    assert head.details.method_key == "ols" and "overlap is poor" in head.details.headline_reason
    state.critique_history = [
        CritiqueFeedback(
            decision=CritiqueDecision.ITERATE,
            iteration=1,
            scores={},
            issues=["poor overlap"],
            improvements=["trim_to_common_support: restrict to common support", "add_doubly_robust: add AIPW"],
            reasoning="",
        )
    ]
    state.iteration_count = 1
    result = run_single_agent("effect_estimator", state, tmp_path, {"methods": ["naive", "ols"], "bootstrap": 50})
    est = _by_key(state)
    assert "aipw" in est  # add_doubly_robust honoured even with a pinned menu
    trim = est["aipw"].details.trimmed
    assert trim.n_dropped > 300 and est["aipw"].details.n_used == 2500 - trim.n_dropped
    assert est["aipw"].details.round == 2
    assert {"trim_to_common_support", "add_doubly_robust"} <= set(est["aipw"].details.changes_applied)
    assert _headlines(state)[0].details.method_key == "aipw" and _covers(est["aipw"], truth["effect"])
    assert "dropped" in result.reasoning
    # The headline says which population it is about, in the state and in the CLI summary.
    from whyflow.flows.jobstore.summary import estimate_lines

    head = _headlines(state)[0]
    kept = f"{trim.n_kept:,} of 2,500 units inside common support"
    assert kept in head.details.population and "Population:" in head.details.headline_reason
    assert any(line.strip().startswith("Population:") and kept in line for line in estimate_lines(state))


def test_null_effect_adjusted_intervals_include_zero(tmp_path: Path) -> None:
    frame, _ = S.null_effect(n=3000, seed=6)
    state = make_state(frame, tmp_path, "treated", "outcome")
    run_single_agent("effect_estimator", state, tmp_path, FAST)
    est = _by_key(state)
    assert not _covers(est["naive"], 0.0)
    assert _covers(est["ols"], 0.0) and _covers(est["aipw"], 0.0) and _covers(_headlines(state)[0], 0.0)


def test_mediator_never_adjusted_with_or_without_discovery(tmp_path: Path) -> None:
    frame, truth = S.derived_treatment(n=2000, seed=8)
    # Without confounder discovery: domain knowledge marks the mediator post-treatment, and the
    # relabelled treatment is detected as a deterministic function of the treatment.
    state = make_state(frame, tmp_path, "treated", "outcome")
    state.domain_knowledge = {"post_treatment": ["mediator"]}
    result = run_single_agent("effect_estimator", state, tmp_path, FAST)
    for e in state.treatment_effects:
        assert "mediator" not in e.details.adjustment_set and "treated_label" not in e.details.adjustment_set
    assert _covers(_by_key(state)["aipw"], truth["effect"])  # total effect, not the direct effect 1.0
    assert "mediator (measured after the treatment" in result.reasoning and (
        "deterministic function" in result.reasoning or "derived from the treatment" in result.reasoning
    )
    # With confounder discovery naming it a mediator (even if its set carelessly lists it).
    state2 = make_state(frame, tmp_path / "b", "treated", "outcome")
    state2.confounder_discovery = {
        "treatment": "treated",
        "outcome": "outcome",
        "adjustment_set": ["x1", "x2", "mediator"],
        "excluded": {"mediator": "mediator on treated -> mediator -> outcome"},
        "mediators": ["mediator"],
    }
    run_single_agent("effect_estimator", state2, tmp_path / "b", FAST)
    assert all(e.details.adjustment_set in ([], ["x1", "x2"]) for e in state2.treatment_effects)


@pytest.mark.parametrize(
    ("gen", "design", "key"),
    [
        (lambda: S.instrument_confounded(n=3000, seed=3), StudyDesign(instrument="z"), "iv"),
        (lambda: S.panel_did(seed=0), StudyDesign(unit_column="unit", time_column="period"), "did"),
        (lambda: S.sharp_rdd(n=3000, seed=5), StudyDesign(running_variable="score", cutoff=0.0), "rdd"),
    ],
)
def test_declared_designs_headline_and_cover(tmp_path: Path, gen, design, key) -> None:
    frame, truth = gen()
    state = make_state(frame, tmp_path, "treated", "outcome")
    state.design = design
    run_single_agent("effect_estimator", state, tmp_path, {"bootstrap": 50})
    est = _by_key(state)
    heads = _headlines(state)
    assert len(heads) == 1 and heads[0].details.method_key == key and _covers(est[key], truth["effect"])
    assert "aipw" not in est  # backdoor propensity methods are not run by default under a design
    if key == "iv":
        assert est["iv"].estimand == "LATE" and not _covers(est["ols"], truth["effect"])
        assert "z" not in est["ols"].details.adjustment_set
    if key == "did":  # the panel fit's own rows, not the pair's prepared sample
        assert est["did"].details.n_used == est["did"].details.extras["n_obs"] == len(frame.dropna())


def test_string_treatment_mapped_and_dose_gets_a_slope(tmp_path: Path) -> None:
    frame, truth = S.linear_confounding(n=1500, seed=9)
    frame["treated"] = frame["treated"].map({1: "yes", 0: "no"})
    state = make_state(frame, tmp_path, "treated", "outcome")
    result = run_single_agent("effect_estimator", state, tmp_path, FAST)
    assert _by_key(state)["aipw"].details.treated_value == "yes" and "'yes' is taken as treated" in result.reasoning
    assert _covers(_by_key(state)["aipw"], truth["effect"])
    # A numeric dose is not refused: slopes, with the binary-only methods skipped and the reason recorded.
    frame["dose"] = frame["x3"].round()
    state2 = make_state(frame, tmp_path / "b", "dose", "outcome")
    result2 = run_single_agent("effect_estimator", state2, tmp_path / "b", FAST)
    head = _headlines(state2)[0]
    assert head.details.method_key == "ols" and head.estimand == "slope"
    assert "binary" in head.details.skipped_methods["aipw"] and "skipped aipw" in result2.summary
    # Unordered categories cannot be a dose: one clear error for the user to fix.
    frame["arm"] = np.random.default_rng(0).choice(["a", "b", "c"], len(frame))
    state3 = make_state(frame, tmp_path / "c", "arm", "outcome")
    with pytest.raises(AgentError, match="unordered categories"):
        run_single_agent("effect_estimator", state3, tmp_path / "c", FAST)


def test_pair_from_profile_and_unknown_method(tmp_path: Path) -> None:
    frame, _ = S.linear_confounding(n=1000, seed=10)
    state = make_state(frame, tmp_path, "treated", "outcome")
    state.treatment_variable = state.outcome_variable = None
    run_single_agent("effect_estimator", state, tmp_path, FAST)
    assert state.analyzed_pairs[0].treatment == "treated" and "profile" in state.analyzed_pairs[0].rationale
    with pytest.raises(ValidationError, match="unknown method 'magic'"):  # rejected when the options load
        run_single_agent("effect_estimator", state, tmp_path, {"methods": ["magic"]})


def test_the_estimator_adopts_the_adjustment_decision_diagnostics_recorded(tmp_path: Path) -> None:
    """One adjustment decision per pair and round: ps_diagnostics records it and the estimator uses
    that record (here edited, to show it is read, not recomputed); another pair decides afresh."""
    frame, _ = S.linear_confounding(n=1500, seed=4)
    state = make_state(frame, tmp_path, "treated", "outcome")
    run_single_agent("ps_diagnostics", state, tmp_path)
    decision = state.ps_diagnostics.adjustment
    assert decision.covariates == ["x1", "x2", "x3"] and decision.widened is False
    edited = state.ps_diagnostics.model_dump()
    edited["adjustment"] = {
        **decision.model_dump(),
        "covariates": ["x1", "x2"],
        "excluded": {"x3": "left out in this test"},
    }
    state.ps_diagnostics = edited
    run_single_agent("effect_estimator", state, tmp_path, FAST)
    for e in state.treatment_effects:
        if e.details.method_key != "naive":
            assert e.details.adjustment_set == ["x1", "x2"] and e.details.excluded_covariates == {
                "x3": "left out in this test"
            }
    state.ps_diagnostics = {**edited, "treatment": "other"}  # a record for another pair is not this pair's decision
    run_single_agent("effect_estimator", state, tmp_path, FAST)
    assert _by_key(state)["ols"].details.adjustment_set == ["x1", "x2", "x3"]


def test_a_nuisance_fit_that_fails_fails_only_the_estimators_that_read_it(tmp_path: Path) -> None:
    """One treated unit among 600: the cross-fitting fold that holds it out trains the propensity on
    controls alone, and logistic regression raises a ValueError there. The weighting and doubly robust
    estimators become failed estimators with that reason; the analysis goes on, and regression
    adjustment, which reads no propensity, still runs."""
    rng = np.random.default_rng(5)
    n = 600
    z = rng.normal(size=n)
    t = np.zeros(n, dtype=int)
    t[0] = 1
    y = 2.0 * t + z + rng.normal(size=n)
    frame = pd.DataFrame({"z": z, "treated": t, "outcome": y})
    state = make_state(frame, tmp_path, "treated", "outcome")
    run_single_agent("effect_estimator", state, tmp_path, {"methods": ["naive", "ols", "ipw", "aipw"], "bootstrap": 30})
    est = _by_key(state)
    assert "ols" in est and not {"ipw", "aipw"} & set(est)
    head = _headlines(state)
    assert len(head) == 1 and head[0].details.stability is None  # no nuisances: no re-estimates to read
    skipped = head[0].details.skipped_methods
    for key in ("ipw", "aipw"):
        assert "could not be fitted" in skipped[key] and "ValueError" in skipped[key], skipped[key]
