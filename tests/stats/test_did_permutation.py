"""One treated unit in a panel: placebo-in-space permutation inference, on generated panels with a known
effect (the interval covers at its rate), and the critique approves on it only where it is finite."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from tests.factories import make_estimate
from whyflow.causal.estimation.designs_did import did_panel, did_twfe
from whyflow.causal.estimation.did_permutation import MIN_UNITS, placebo_in_space
from whyflow.causal.review.rules import ReviewInputs, review
from whyflow.causal.state import CritiqueDecision


def _panel(seed: int, units: int = 30, periods: int = 8, effect: float = -0.5, rho: float = 0.5) -> pd.DataFrame:
    """Unit and period effects, AR(1) errors within units; unit 0 treated from the middle period on."""
    rng = np.random.default_rng(seed)
    a = rng.normal(scale=2.0, size=units)
    g = np.cumsum(rng.normal(scale=0.5, size=periods))
    e = np.zeros((units, periods))
    e[:, 0] = rng.normal(size=units)
    for k in range(1, periods):
        e[:, k] = rho * e[:, k - 1] + np.sqrt(1 - rho**2) * rng.normal(size=units)
    u, t = np.meshgrid(np.arange(units), np.arange(periods), indexing="ij")
    d = ((u == 0) & (t >= periods // 2)).astype(int)
    y = a[u] + g[t] + effect * d + e
    return pd.DataFrame({"state": [f"s{k:02d}" for k in u.ravel()], "q": t.ravel(), "treat": d.ravel(), "y": y.ravel()})


def test_the_treated_estimate_is_the_twfe_coefficient() -> None:
    f = _panel(1)
    perm = placebo_in_space(did_panel(f, "state", "q", "treat", "y"))
    est = did_twfe(f, "state", "q", "treat", "y")
    assert abs(perm["estimate"] - est.estimate) < 1e-6
    assert perm["n_units_compared"] == 30 and perm["ci"] is not None
    assert perm["ci"][0] <= perm["estimate"] <= perm["ci"][1]


def test_the_permutation_interval_covers_at_its_rate() -> None:
    """400 panels of 30 units: the exact test rejects a true effect with probability 1/30 under exchangeable
    units, so coverage should be about 96.7% (binomial SD 0.9 points)."""
    covered = 0
    for seed in range(400):
        perm = placebo_in_space(did_panel(_panel(seed), "state", "q", "treat", "y"))
        lo, hi = perm["ci"]
        covered += lo <= -0.5 <= hi
    assert 0.94 <= covered / 400 <= 0.99, covered


def test_an_unbalanced_panel_with_repeated_rows_still_gives_the_twfe_estimate() -> None:
    f = _panel(4, units=25)
    f = pd.concat([f, f.sample(frac=0.3, random_state=1).assign(y=lambda x: x["y"] + 0.1)])
    f = f.drop(f[(f["state"] == "s05") & (f["q"] < 2)].index).reset_index(drop=True)
    perm = placebo_in_space(did_panel(f, "state", "q", "treat", "y"))
    est = did_twfe(f, "state", "q", "treat", "y")
    assert abs(perm["estimate"] - est.estimate) < 1e-6


def test_did_twfe_reports_the_permutation_interval_for_one_treated_unit() -> None:
    est = did_twfe(_panel(2), "state", "q", "treat", "y")
    perm = est.details["permutation"]
    assert est.ci == tuple(perm["ci"]) and est.p_value == perm["p_value"]
    assert est.details["ci_method"].startswith("placebo-in-space permutation over 30 units")
    assert "clustered_ci" in est.details


def test_too_few_units_keep_the_clustered_interval_and_say_why() -> None:
    f = _panel(3, units=MIN_UNITS - 1)
    est = did_twfe(f, "state", "q", "treat", "y")
    perm = est.details["permutation"]
    assert perm["ci"] is None and "at least 20 units" in perm["reason"]
    assert est.details["ci_method"].startswith("t distribution")


def _review(**extras: Any) -> CritiqueDecision:
    did = make_estimate("did", -0.02, 0.005, headline=True, estimand="ATT", n_treated_units=1, **extras)
    return review(
        ReviewInputs(
            treatment="treated", outcome="outcome", estimates=[did], round=1, max_iterations=3, declared=("did",)
        )
    ).decision


def test_the_critique_approves_one_treated_unit_only_on_a_finite_permutation_interval() -> None:
    finite = {"ci": [-0.05, 0.01], "n_units_compared": 27, "p_value": 0.18}
    assert _review(permutation=finite) is CritiqueDecision.APPROVE
    few = {"ci": None, "n_units_compared": 12, "reason": "only 12 units can be compared"}
    assert _review(permutation=few) is CritiqueDecision.REJECT
    assert _review() is CritiqueDecision.REJECT
