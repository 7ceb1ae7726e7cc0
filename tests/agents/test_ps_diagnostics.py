"""ps_diagnostics on seeded synthetic data: overlap, balance, trimming, model switch, exclusions."""

from __future__ import annotations

from pathlib import Path

from benchmarks import synthetic_effects as S
from tests.helpers import make_state
from whyflow.causal.state import CritiqueDecision, CritiqueFeedback
from whyflow.flows.running.dispatch import run_single_agent


def _critique(*improvements: str) -> list[CritiqueFeedback]:
    return [
        CritiqueFeedback(
            decision=CritiqueDecision.ITERATE,
            iteration=1,
            scores={},
            issues=[],
            improvements=list(improvements),
            reasoning="",
        )
    ]


def test_good_overlap_balance_and_plots(tmp_path: Path) -> None:
    frame, _ = S.linear_confounding(n=2000, seed=3)
    state = make_state(frame, tmp_path, "treated", "outcome")
    run_single_agent("ps_diagnostics", state, tmp_path)
    d = state.ps_diagnostics
    assert d.model == "logistic" and 0.65 < d.auc < 0.85
    assert d.overlap_ok and d.outside_support.overall < 0.05
    assert d.max_smd_before > 0.3 and d.max_smd_after < 0.1 and d.balance_ok
    assert set(d.balance) == {"x1", "x2", "x3"} and d.ess.treated < (frame["treated"] == 1).sum()
    assert not d.trimmed and d.n_used == 2000
    for path in (d.plots.overlap, d.plots.love_plot):
        assert Path(path).exists() and Path(path).stat().st_size > 5000


def test_poor_overlap_reported_then_trimmed_in_round_two(tmp_path: Path) -> None:
    frame, _ = S.poor_overlap(n=2500, seed=2)
    state = make_state(frame, tmp_path, "treated", "outcome")
    run_single_agent("ps_diagnostics", state, tmp_path)
    first = state.ps_diagnostics
    assert not first.overlap_ok and first.outside_support.overall > 0.1  # model chosen by CV loss
    assert first.trim_suggestion.n_dropped > 300 and not first.trimmed
    state.critique_history = _critique("trim_to_common_support: drop units outside common support")
    state.iteration_count = 1
    run_single_agent("ps_diagnostics", state, tmp_path)
    second = state.ps_diagnostics
    assert second.trimmed and second.n_used == 2500 - second.trim_applied.n_dropped
    assert second.outside_support.overall < first.outside_support.overall
    assert any(c.startswith("trim_to_common_support") for c in second.changes)


def test_switch_model_and_mediator_excluded(tmp_path: Path) -> None:
    frame, _ = S.derived_treatment(n=2000, seed=8)
    state = make_state(frame, tmp_path, "treated", "outcome")
    state.confounder_discovery = {
        "treatment": "treated",
        "outcome": "outcome",
        "adjustment_set": ["x1", "x2", "x3", "mediator"],  # a careless set: the rules still drop the mediator
        "excluded": {},
        "mediators": ["mediator"],
    }
    state.critique_history = _critique("switch_propensity_model: try a flexible model")
    state.iteration_count = 1
    run_single_agent("ps_diagnostics", state, tmp_path)
    d = state.ps_diagnostics
    assert d.model == "gbm" and "mediator" not in d.covariates and "mediator" in d.excluded
    assert d.changes and d.changes[0].startswith("switch_propensity_model")
    # Without confounder discovery the relabelled treatment is detected and excluded.
    state2 = make_state(frame, tmp_path / "b", "treated", "outcome")
    run_single_agent("ps_diagnostics", state2, tmp_path / "b")
    assert "treated_label_programme" not in state2.ps_diagnostics.covariates
    assert "treatment" in state2.ps_diagnostics.excluded["treated_label"]


def test_no_covariates_gives_trivial_diagnostics_not_an_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import numpy as np
    import pandas as pd

    from tests.helpers import make_state
    from whyflow.flows.running.dispatch import run_single_agent

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"treated": rng.binomial(1, 0.3, 500), "outcome": rng.normal(size=500)})
    state = make_state(frame, tmp_path, "treated", "outcome")
    result = run_single_agent("ps_diagnostics", state, tmp_path)
    ps = state.ps_diagnostics
    assert ps is not None and ps.covariates == [] and ps.overlap_ok is True
    assert abs(ps.common_support[0] - frame["treated"].mean()) < 1e-9
    assert "no covariates" in result.summary
