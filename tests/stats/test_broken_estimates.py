"""No broken number becomes a result: singular designs lose their collinear columns, and an
estimate that is not finite, has a zero-width or absurd interval, or is off the outcome's scale
becomes a failed estimator with its reason (whyflow.causal.estimation.estimate_checks)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.helpers import make_state
from whyflow.causal.diagnostics import ConfounderDiscovery
from whyflow.causal.discovery.adjustment import prepare
from whyflow.causal.estimation.estimate_checks import broken_reason
from whyflow.causal.state import StudyDesign
from whyflow.flows.running.dispatch import run_single_agent


def _cv_trial(n: int = 1500, seed: int = 4) -> pd.DataFrame:
    """A randomised CV experiment (effect 0.08 on callbacks) with the arm's alias and a full city dummy set."""
    rng = np.random.default_rng(seed)
    city = rng.choice(["boston", "chicago", "denver", "austin"], size=n)
    t = rng.binomial(1, 0.5, size=n)
    y = 0.08 * t + 0.05 * (city == "boston") + rng.normal(scale=0.3, size=n)
    frame = pd.DataFrame({"city": city, "treated": t, "arm": np.where(t == 1, 1, 0), "outcome": y})
    for c in ("boston", "chicago", "denver", "austin"):
        frame[f"is_{c}"] = (city == c).astype(int)
    return frame


def test_a_singular_design_drops_and_names_its_collinear_columns() -> None:
    frame = _cv_trial()
    covs = ["city", "arm", "is_boston", "is_chicago", "is_denver", "is_austin"]
    prep = prepare(frame, "treated", "outcome", covs)
    assert "arm" in prep.collinear and "the treatment" in prep.collinear["arm"]
    assert len([c for c in prep.collinear if c.startswith("is_")]) == 4  # city's own dummies came first
    assert set(prep.X.columns).isdisjoint(prep.collinear)
    X = np.column_stack([np.ones(len(prep.y)), prep.t, prep.X.to_numpy()])
    assert np.linalg.matrix_rank(X) == X.shape[1]
    assert any("singular" in n and "arm" in n for n in prep.notes)


def test_an_indicator_of_any_arm_goes_not_the_other_arms() -> None:
    """A column that sums this arm and the others ('contacted in any arm') aliases the treatment
    together with the other arms' indicators: it is the one dropped, so the other arms stay held
    fixed and the treatment keeps its meaning (dropping an other arm instead answers another question)."""
    rng = np.random.default_rng(3)
    arm = rng.choice(["control", "this", "second", "third"], size=3000)
    frame = pd.DataFrame({f"is_{a}": (arm == a).astype(int) for a in ("this", "second", "third")})
    frame["any_arm"] = frame[["is_this", "is_second", "is_third"]].sum(axis=1)
    frame["age"] = rng.normal(50, 10, size=len(arm))
    frame["outcome"] = 0.5 * frame["is_this"] + 0.2 * frame["is_second"] + rng.normal(size=len(arm))
    for order in (["any_arm", "is_second", "is_third", "age"], ["is_second", "is_third", "any_arm", "age"]):
        prep = prepare(frame, "is_this", "outcome", order)
        assert list(prep.collinear) == ["any_arm"], order
        assert "the treatment" in prep.collinear["any_arm"]


def test_the_estimators_on_a_singular_adjustment_set_give_finite_numbers_that_cover(tmp_path: Path) -> None:
    frame = _cv_trial()
    state = make_state(frame, tmp_path, "treated", "outcome")
    covs = ["city", "arm", "is_boston", "is_chicago", "is_denver", "is_austin"]
    state.confounder_discovery = ConfounderDiscovery(treatment="treated", outcome="outcome", adjustment_set=covs)
    run_single_agent("effect_estimator", state, tmp_path, {"methods": ["naive", "ols", "aipw"], "bootstrap": 30})
    ols = next(e for e in state.treatment_effects if e.details.method_key == "ols")
    assert ols.ci_lower <= 0.08 <= ols.ci_upper and ols.ci_upper - ols.ci_lower < 0.2
    dropped = ols.details.collinear_dropped
    assert len([c for c in dropped if c.startswith("is_")]) == 4
    assert "arm" in dropped or "arm" not in ols.details.adjustment_set  # an alias goes, by one rule or the other


def _two_by_two(n_per_cell: int = 150, seed: int = 2) -> pd.DataFrame:
    """Individuals in rows, two groups x two periods, the second group treated in the second period (effect 1)."""
    rng = np.random.default_rng(seed)
    rows = []
    for g in (0, 1):
        for p in (0, 1):
            y = 2.0 * g + 0.5 * p + 1.0 * (g * p) + rng.normal(size=n_per_cell)
            rows.append(pd.DataFrame({"group": g, "period": p, "treated": g * p, "outcome": y}))
    return pd.concat(rows, ignore_index=True)


def test_a_did_on_two_groups_of_individuals_has_row_level_errors_not_a_zero_width_interval(tmp_path: Path) -> None:
    # Clustered on the two groups, this interval was 4e-9 wide (each cluster's score sums to zero).
    frame = _two_by_two()
    state = make_state(frame, tmp_path, "treated", "outcome")
    state.design = StudyDesign(unit_column="group", time_column="period")
    run_single_agent("effect_estimator", state, tmp_path, {"bootstrap": 30})
    did = next(e for e in state.treatment_effects if e.details.method_key == "did")
    assert did.ci_lower <= 1.0 <= did.ci_upper and did.ci_upper - did.ci_lower > 0.1
    assert "row level" in str(did.details.se_method) and "2 groups" in did.details.extras["row_level_errors"]
    for e in state.treatment_effects:
        assert math.isfinite(e.estimate) and e.ci_upper - e.ci_lower > 1e-6, e


@pytest.mark.parametrize(
    ("estimate", "se", "ci", "why"),
    [
        (float("nan"), 1.0, (0.0, 1.0), "not finite"),
        (1.0, float("inf"), (-math.inf, math.inf), "not finite"),
        (5.8e11, 3e11, (-1e11, 1.2e12), "off the outcome's scale"),
        (1.0, 1e6, (-2e6, 2e6), "no information"),
        (0.73, 1e-9, (0.73 - 2e-9, 0.73 + 2e-9), "zero width"),
        (0.0, 0.0, (0.0, 0.0), "zero width"),
    ],
)
def test_broken_numbers_are_named(estimate: float, se: float, ci: tuple[float, float], why: str) -> None:
    assert why in broken_reason(estimate, se, ci, scale=10.0)


def test_an_ordinary_estimate_passes() -> None:
    assert broken_reason(0.08, 0.015, (0.05, 0.11), scale=1.8) == ""
    assert broken_reason(-339.0, 226.0, (-782.0, 104.0), scale=60000.0) == ""
