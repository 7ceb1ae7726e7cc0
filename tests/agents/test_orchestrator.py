"""Orchestrator: recommendations name the analysis's specific weak point, with its numbers."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.synthetic import linear_confounding
from tests.factories import make_estimate
from tests.helpers import make_state
from whyflow.causal.queries import evalue_of_limit
from whyflow.causal.state import AnalysisState, CausalDAG, CausalEdge, TreatmentEffectResult
from whyflow.flows.running.dispatch import run_single_agent

ADJ = ["x1", "x2", "x3"]


def _ols(frame: pd.DataFrame, adj: list[str]) -> TreatmentEffectResult:
    import statsmodels.api as sm

    fit = sm.OLS(frame["outcome"], sm.add_constant(frame[["treated", *adj]])).fit()
    lo, hi = fit.conf_int().loc["treated"]
    return make_estimate(
        "ols",
        float(fit.params["treated"]),
        float(fit.bse["treated"]),
        label="regression_adjustment",
        ci=(float(lo), float(hi)),
        headline=True,
        adjustment_set=adj,
        n_used=len(frame),
    )


def _aipw(frame: pd.DataFrame, adj: list[str]) -> TreatmentEffectResult:
    """The doubly robust estimate beside the regression: approval needs the credible estimators to agree."""
    from whyflow.causal.estimation.backdoor import aipw
    from whyflow.causal.estimation.nuisance import choose_propensity

    X, t, y = frame[adj], frame["treated"].to_numpy(), frame["outcome"].to_numpy()
    _, ps, _ = choose_propensity(X, t, 0, 5, "logistic", None)
    est = aipw(X, y, t, ps)
    return make_estimate("aipw", est.estimate, est.std_error, ci=est.ci, adjustment_set=adj, n_used=len(frame))


def _analysed(frame: pd.DataFrame, job: Path, adj: list[str] = ADJ) -> AnalysisState:
    """Estimate, run the real sensitivity analyst (E-values only) and the critique."""
    state = make_state(frame, job, "treated", "outcome")
    state.treatment_effects = [_ols(frame, adj), *([_aipw(frame, adj)] if adj else [])]
    state.confounder_discovery = {
        "treatment": "treated",
        "outcome": "outcome",
        "adjustment_set": adj,
        "data_associated": adj[:2],
        "identification": {"method": "backdoor", "identified": True, "estimand": "E[Y|do(T)]"},
    }
    run_single_agent("sensitivity_analyst", state, job, {"refuters": False})
    state.max_iterations = 1
    run_single_agent("critique", state, job)
    return state


def _recommend(state: AnalysisState, job: Path) -> list[str]:
    run_single_agent("orchestrator", state, job)
    assert state.recommendations
    return state.recommendations


def test_small_evalue_names_the_confounder_to_collect(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=800, effect=0.4, seed=9)
    state = _analysed(frame, tmp_path)
    ev = next(r for r in state.sensitivity_results if r.method == "e_value")
    assert evalue_of_limit(ev) < 2  # precondition: a weak effect relative to the outcome's spread
    state.domain_knowledge = {"roles": {"motivation": "confounder", "x1": "confounder"}}
    recs = _recommend(state, tmp_path)
    hit = [r for r in recs if "motivation" in r]
    assert hit and f"{evalue_of_limit(ev):.2f}" in hit[0]
    assert "x1" not in hit[0].split("Domain knowledge")[1]  # x1 is already adjusted for


def test_uncertain_graph_edge_is_named(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=800, seed=9)
    state = _analysed(frame, tmp_path)
    state.proposed_dag = CausalDAG(
        nodes=["x1", "x2", "x3", "treated", "outcome"],
        edges=[
            CausalEdge(source="x1", target="treated", confidence=0.95),
            CausalEdge(source="x2", target="treated", confidence=0.55),
            CausalEdge(source="treated", target="outcome", confidence=0.9),
        ],
        discovery_method="pc",
    )
    recs = _recommend(state, tmp_path)
    edge = [r for r in recs if "x2 -> treated" in r]
    assert edge and "0.55" in edge[0]
    assert not any("x1 -> treated" in r for r in recs)


def test_wide_interval_asks_for_more_data_with_a_sample_size(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=120, effect=0.3, seed=11)
    state = _analysed(frame, tmp_path)
    head = state.treatment_effects[0]
    assert head.ci_lower < 0 < head.ci_upper  # precondition on this seed
    recs = _recommend(state, tmp_path)
    assert abs(head.estimate) >= head.std_error  # precondition: a sample size can be named
    needed = math.ceil((1.96 * head.std_error / abs(head.estimate)) ** 2 * 120)
    assert any(f"{needed:,} units" in r and "n = 120" in r for r in recs)
    assert any(f"{2.8 * head.std_error:.3g} (2.8 standard errors)" in r for r in recs)
    assert recs[0].startswith("Do not") or "with caution" in recs[0]


def test_poor_overlap_and_rejection_are_explained(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=800, seed=3, with_mediator=True)
    state = _analysed(frame, tmp_path, adj=[])
    state.confounder_discovery = {
        **state.confounder_discovery.model_dump(),
        "adjustment_set": [],
        "mediators": ["mediator"],
        "data_associated": ["mediator"],
    }
    state.ps_diagnostics = {
        "treatment": "treated",
        "outside_support": {"treated": 0.23, "control": 0.23, "overall": 0.23},
        "common_support": [0.04, 0.93],
        "overlap_ok": False,
        "trimmed": False,
    }
    run_single_agent("critique", state, tmp_path)
    recs = _recommend(state, tmp_path)
    assert recs[0].startswith("Do not use") and "mediator" in recs[0]
    assert any("23%" in r and "[0.040, 0.930]" in r for r in recs)
    assert any(r.startswith("Confirm that mediator is measured after treated") for r in recs)


def test_clean_approved_analysis_is_trusted(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    frame, _ = linear_confounding(n=1500, effect=3.0, seed=1)
    frame["outcome"] = frame["outcome"] + rng.normal(scale=0.1, size=len(frame))
    state = _analysed(frame, tmp_path)
    assert state.critique_history[-1].decision.value == "APPROVE"
    recs = _recommend(state, tmp_path)
    assert recs[0].startswith("Trust the regression_adjustment estimate")
    assert f"{state.treatment_effects[0].estimate:.3g}" in recs[0]


def test_data_driven_adjustment_set_asks_to_confirm_timing(tmp_path: Path) -> None:
    from benchmarks.synthetic import job_training

    frame, _ = job_training(n=600, seed=3)
    frame = frame.rename(columns={"training": "treated", "earnings": "outcome"})
    adj = ["age", "prior_earnings", "skills_score"]  # a mediator among them, as data-driven selection can do
    state = _analysed(frame, tmp_path, adj=adj)
    state.confounder_discovery = {
        **state.confounder_discovery.model_dump(),
        "identification": {"method": "data-driven (no graph)", "identified": False, "estimand": "assumed"},
    }
    recs = _recommend(state, tmp_path)
    hit = [r for r in recs if "chosen from data associations" in r]
    assert hit and "skills_score" in hit[0] and "measured before treated" in hit[0]


def test_weak_identification_is_not_called_trustworthy(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from whyflow.causal.report.orchestrator import OrchestratorAgent
    from whyflow.causal.state import CritiqueDecision, CritiqueFeedback

    head = make_estimate("aipw", 1.2, 0.1, label="AIPW", ci=(1.0, 1.4), headline=True)
    verdict = OrchestratorAgent._trust(  # noqa: SLF001 - the verdict rule itself
        head,
        CritiqueFeedback(
            decision=CritiqueDecision.APPROVE,
            iteration=1,
            scores={"identification": 3, "overlap": 5},
            issues=["Residual confounding is likely: x1 was missing and imputed for 30% of rows."],
            improvements=[],
            reasoning="",
        ),
        [],
        "treated",
        "outcome",
    )
    assert verdict.startswith("Treat the") and "with suspicion" in verdict and "imputed for 30%" in verdict


def test_a_disagreeing_estimator_marked_not_credible_is_told_apart(tmp_path: Path) -> None:
    """A plug-in learner off the headline is named with the estimator's reason, not as a disagreement to chase."""
    frame, _ = linear_confounding(n=1500, effect=3.0, seed=1)
    state = _analysed(frame, tmp_path)
    head = state.treatment_effects[0]
    why = "a plug-in average of regularised CATE models without bias correction"
    off = head.estimate + 10 * head.std_error
    state.treatment_effects.append(make_estimate("s_learner", off, head.std_error, credible=False, credible_reason=why))
    recs = _recommend(state, tmp_path)
    (line,) = [r for r in recs if "S-learner" in r]
    assert line.startswith("S-learner 3.") and "differs from the headline regression_adjustment" in line
    assert f"marked it not credible for the average effect ({why})" in line
    assert not any(r.startswith("Estimators disagree") for r in recs)

    state.treatment_effects.append(make_estimate("ipw", off, head.std_error))  # a credible one disagrees too
    recs = _recommend(state, tmp_path)
    (disagree,) = [r for r in recs if r.startswith("Estimators disagree")]
    assert "Inverse probability weighting" in disagree and "S-learner" not in disagree
