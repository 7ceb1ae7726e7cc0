"""The estimator registry: one entry per method, and adding one is a function plus an entry."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmarks.synthetic_effects import linear_confounding
from tests.helpers import make_state
from whyflow.causal.estimates import FAMILIES
from whyflow.causal.estimation import menu
from whyflow.causal.estimation import methods as registry
from whyflow.causal.estimation.backdoor import Estimate, normal_ci
from whyflow.causal.estimation.methods import REGISTRY, EstimatorSpec
from whyflow.flows.running.dispatch import run_single_agent


def test_every_entry_is_well_formed() -> None:
    assert list(menu.METHODS) == list(REGISTRY) and len({s.label for s in REGISTRY.values()}) == len(REGISTRY)
    for key, spec in REGISTRY.items():
        assert spec.key == key and spec.family in FAMILIES and callable(spec.fit)
        assert not spec.is_design or key in ("iv", "did", "rdd")
    assert set(menu.PS_METHODS) == {k for k, s in REGISTRY.items() if s.needs_binary}


def _overlap_weighting(s) -> Estimate:  # noqa: ANN001 - a PairSetup
    """Overlap (ATO) weighting by weighted least squares with HC1 errors."""
    import statsmodels.api as sm

    y, t, ps = s.prep.y, s.prep.t, s.scores
    w = np.where(t == 1, 1 - ps, ps)
    fit = sm.WLS(y, sm.add_constant(t.astype(float)), weights=w).fit(cov_type="HC1")
    est, se = float(fit.params[1]), float(fit.bse[1])
    ci, p = normal_ci(est, se)
    return Estimate("Overlap weighting (ATO)", "ATO", est, se, ci, p, ["overlap"], {"se_method": "HC1 robust WLS"})


def test_adding_an_estimator_is_a_function_and_one_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = EstimatorSpec(
        "overlap",
        "Overlap weighting (ATO)",
        "weighting",
        _overlap_weighting,
        "backdoor",
        needs_binary=True,
        needs_covariates=True,
        headline_rank=25,
    )
    monkeypatch.setitem(registry.REGISTRY, "overlap", spec)
    frame, truth = linear_confounding(n=2000, seed=3)
    # It runs by default for a binary treatment with covariates ...
    state = make_state(frame, tmp_path / "default", "treated", "outcome")
    run_single_agent("effect_estimator", state, tmp_path / "default", {"bootstrap": 20})
    est = {e.details.method_key: e for e in state.treatment_effects}
    assert "overlap" in est and est["overlap"].details.family == "weighting"
    assert est["overlap"].details.propensity_model is not None and est["overlap"].details.se_method == "HC1 robust WLS"
    assert est["overlap"].ci_lower <= truth["effect"] <= est["overlap"].ci_upper  # a constant effect: ATO = ATE
    # ... `methods:` accepts its key, and the critique counts it among the credible estimators.
    pinned = make_state(frame, tmp_path / "pinned", "treated", "outcome")
    run_single_agent("effect_estimator", pinned, tmp_path / "pinned", {"methods": ["ols", "overlap"]})
    assert {e.details.method_key for e in pinned.treatment_effects} == {"ols", "overlap"}
    run_single_agent("critique", pinned, tmp_path / "pinned")
    fb = pinned.critique_history[-1]
    assert "Only one credible adjusted estimator" not in fb.reasoning and fb.scores["agreement"] >= 4


def test_the_notebook_refits_what_the_registry_says_not_what_the_label_suggests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.factories import make_estimate
    from whyflow.causal.report.context import recompute_kind

    spec = EstimatorSpec("overlap", "Overlap weighting (ATO)", "weighting", _overlap_weighting, "backdoor")
    monkeypatch.setitem(registry.REGISTRY, "overlap", spec)
    # A weighting label, but its entry names no cheap refit (IPW would be a different estimand): shown from the state.
    assert recompute_kind(make_estimate("overlap")) is None
    assert recompute_kind(make_estimate("ols", label="anything")) == "ols"
    assert recompute_kind(make_estimate("ipw", label="Regression adjustment (OLS)")) == "ipw"
    monkeypatch.setitem(registry.REGISTRY, "overlap", EstimatorSpec(**{**spec.__dict__, "recompute": "ipw"}))
    assert recompute_kind(make_estimate("overlap")) == "ipw"  # the entry decides
