"""No crash for a legitimate design: an RCT, a dose, an instrument, a failing estimator (seeded data)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from tests.helpers import make_state
from whyflow.causal.state import StudyDesign
from whyflow.flows.running.dispatch import run_single_agent

FAST = {"bootstrap": 20}


def _rct(n: int = 1200, seed: int = 0, effect: float = 1.5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x1, x2 = rng.normal(size=(2, n))
    t = rng.binomial(1, 0.5, n)
    return pd.DataFrame({"x1": x1, "x2": x2, "treated": t, "outcome": effect * t + 2 * x1 + x2 + rng.normal(size=n)})


def _by_key(state) -> dict:  # type: ignore[no-untyped-def]
    return {e.details.method_key: e for e in state.treatment_effects}


def _head(state):  # type: ignore[no-untyped-def]
    heads = [e for e in state.treatment_effects if e.details.headline]
    assert len(heads) == 1
    return heads[0]


def test_empty_adjustment_set_gives_difference_in_means_and_lin(tmp_path: Path) -> None:
    frame = _rct()
    state = make_state(frame, tmp_path, "treated", "outcome")
    state.confounder_discovery = {
        "treatment": "treated",
        "outcome": "outcome",
        "adjustment_set": [],
        "excluded": {"x1": "not associated with the treatment", "x2": "not associated with the treatment"},
    }
    result = run_single_agent("effect_estimator", state, tmp_path, FAST)
    est, head = _by_key(state), _head(state)
    assert head.details.method_key == "diff_means" and not head.details.is_naive
    assert est["diff_means"].ci_lower <= 1.5 <= est["diff_means"].ci_upper
    lin = est["lin"]
    assert lin.ci_lower <= 1.5 <= lin.ci_upper and lin.std_error < 0.6 * est["diff_means"].std_error
    assert set(lin.details.extras["covariates_for_precision"]) == {"x1", "x2"} and "HC2" in lin.details.se_method
    skipped = head.details.skipped_methods
    assert {"ipw", "aipw", "matching", "stratification"} <= set(skipped)
    assert "adjustment set is empty" in skipped["aipw"] and "skipped" in result.summary


def test_post_treatment_column_never_used_for_precision(tmp_path: Path) -> None:
    frame = _rct(seed=1)
    frame["after"] = frame["treated"] * 2 + np.random.default_rng(2).normal(size=len(frame))  # caused by treatment
    state = make_state(frame, tmp_path, "treated", "outcome")
    state.confounder_discovery = {"treatment": "treated", "outcome": "outcome", "adjustment_set": [], "excluded": {}}
    result = run_single_agent("effect_estimator", state, tmp_path, FAST)
    lin = _by_key(state)["lin"]
    assert "after" not in lin.details.extras["covariates_for_precision"] and "imbalanced" in result.reasoning


def test_continuous_treatment_without_design_gets_slopes(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    n = 1500
    x1, x2 = rng.normal(size=(2, n))
    dose = 2 + x1 + 0.5 * x2**2 + rng.normal(size=n)
    y = 0.5 * dose + x1 + np.sin(2 * x2) + x2**2 + rng.normal(size=n)
    frame = pd.DataFrame({"x1": x1, "x2": x2, "dose": dose, "outcome": y})
    state = make_state(frame, tmp_path, "dose", "outcome")
    run_single_agent("ps_diagnostics", state, tmp_path)
    assert "binary" in state.ps_diagnostics.skipped
    run_single_agent("effect_estimator", state, tmp_path, FAST)
    head, est = _head(state), _by_key(state)
    assert head.details.method_key == "dml_plm" and head.estimand == "slope"
    assert "per one-unit increase in dose" in head.details.extras["estimand_description"]
    assert head.ci_lower <= 0.5 <= head.ci_upper and not est["ols"].ci_lower <= 0.5 <= est["ols"].ci_upper
    assert head.details.extras["crossfit_folds"] >= 5


def test_continuous_treatment_with_instrument_runs_2sls(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    n = 2000
    x1, u = rng.normal(size=(2, n))
    z = rng.binomial(1, 0.5, n)
    educ = 12 + 2 * z + u + 0.5 * x1 + rng.normal(size=n)
    wage = 0.7 * educ + 2 * u + x1 + rng.normal(size=n)
    frame = pd.DataFrame({"x1": x1, "z": z, "educ": educ, "wage": wage})
    state = make_state(frame, tmp_path, "educ", "wage")
    state.design = StudyDesign(instrument="z")
    run_single_agent("ps_diagnostics", state, tmp_path)
    assert "instrument" in state.ps_diagnostics.skipped
    run_single_agent("effect_estimator", state, tmp_path, FAST)
    head = _head(state)
    assert head.details.method_key == "iv" and head.ci_lower <= 0.7 <= head.ci_upper


def test_a_failing_estimator_is_a_recorded_skip(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    n = 24  # too few rows per stratum for DoWhy's stratification
    x = rng.normal(size=n)
    t = rng.binomial(1, 0.5, n)
    frame = pd.DataFrame({"x": x, "treated": t, "outcome": t + x + rng.normal(size=n)})
    state = make_state(frame, tmp_path, "treated", "outcome")
    result = run_single_agent("effect_estimator", state, tmp_path, FAST)
    skipped = _head(state).details.skipped_methods
    assert "stratification" in skipped and "failed" in skipped["stratification"]
    assert "stratification" in result.summary and len(state.treatment_effects) >= 3


def test_propensity_fitted_once_and_shared_by_diagnostics_and_estimator(tmp_path: Path) -> None:
    from benchmarks import synthetic_effects as S

    frame, truth = S.linear_confounding(n=1500, seed=7)
    state = make_state(frame, tmp_path, "treated", "outcome")
    run_single_agent("ps_diagnostics", state, tmp_path)
    cached = sorted((tmp_path / "data" / "nuisance").glob("propensity_*.npz"))
    assert len(cached) == 1
    run_single_agent("effect_estimator", state, tmp_path, {"methods": ["aipw", "dr_learner", "ipw"]})
    est = _by_key(state)
    after = sorted((tmp_path / "data" / "nuisance").glob("propensity_*.npz"))
    head = next(e for e in state.treatment_effects if e.details.headline)
    flexible = head.details.stability.flexible if head.details.stability else None
    # read, not refitted: the one other propensity is the boosted one of the headline's flexible re-estimate
    assert set(cached) <= set(after) and len(after) == len(cached) + (flexible is not None)
    assert est["aipw"].details.extras["propensity_learner"] == state.ps_diagnostics.model
    assert (
        est["aipw"].details.extras["crossfit_folds"] >= 5 and est["dr_learner"].details.shares_nuisance_with == "aipw"
    )
    assert est["aipw"].ci_lower <= truth["effect"] <= est["aipw"].ci_upper
