"""Regression discontinuity through rdrobust: its published Senate example and generated sharp and fuzzy designs."""

from __future__ import annotations

import numpy as np
import pytest

from whyflow.causal.estimation.designs_rdd import rdd_rdrobust
from whyflow.core.errors import AgentError


def test_senate_example_reproduces_rdrobusts_published_numbers() -> None:
    """Cattaneo, Frandsen and Titiunik (2015): vote share at t+2 on the Democratic margin at t.

    rdrobust's documentation reports 7.414 (conventional), robust 95% CI [4.094, 10.919],
    MSE-optimal bandwidth 17.754 and 360 + 323 effective observations.
    """
    from rdrobust.datasets import rdrobust_RDsenate

    senate = rdrobust_RDsenate().dropna(subset=["vote", "margin"])
    x, y = senate["margin"].to_numpy(float), senate["vote"].to_numpy(float)
    est = rdd_rdrobust(x, y, (x >= 0).astype(float), 0.0, "margin")
    assert est.estimate == pytest.approx(7.414, abs=5e-4)
    assert est.ci == pytest.approx((4.094, 10.919), abs=5e-4)
    assert est.std_error == pytest.approx(1.741, abs=5e-4)
    d = est.details
    assert d["bandwidth"] == pytest.approx(17.754, abs=5e-4) and d["n_in_bandwidth"] == 360 + 323
    assert d["design"] == "sharp" and d["library"] == "rdrobust" and est.method == "Regression discontinuity (rdrobust)"
    assert d["conventional_se"] == pytest.approx(1.459, abs=5e-4)
    assert set(d["local_linear_check"]) >= {"estimate", "std_error", "bandwidth"}


def _fuzzy(seed: int, n: int = 3000, effect: float = 2.0, sharp: bool = False):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, n)
    above = (x >= 0).astype(float)
    u = rng.normal(size=n)
    if sharp:
        t = above
    else:  # take-up jumps from about 0.2 to 0.8, more likely for high-u units on both sides
        t = (rng.uniform(size=n) < np.clip(0.2 + 0.6 * above + 0.1 * u, 0, 1)).astype(float)
    y = 1 + 0.8 * x - 0.5 * x**2 + effect * t + u + rng.normal(scale=0.5, size=n)
    return x, y, t, effect


def test_generated_designs_cover_and_equal_rdrobusts_own_call() -> None:
    from rdrobust import rdrobust

    covered = {"sharp": 0, "fuzzy": 0}
    for seed in range(4):
        for kind in covered:
            x, y, t, effect = _fuzzy(seed, sharp=kind == "sharp")
            est = rdd_rdrobust(x, y, t, 0.0, "score")
            assert est.details["design"] == kind
            covered[kind] += est.covers(effect)
    assert covered["sharp"] >= 3 and covered["fuzzy"] >= 3
    direct = rdrobust(y, x, c=0.0, fuzzy=t)  # the last (fuzzy) draw
    assert est.estimate == pytest.approx(float(direct.coef.iloc[0, 0]), rel=1e-12)
    assert est.std_error == pytest.approx(float(direct.se.iloc[2, 0]), rel=1e-12)
    assert est.ci == pytest.approx(tuple(direct.ci.iloc[2]), rel=1e-12)
    assert 0.4 < est.details["first_stage_jump"] < 0.8 and est.details["first_stage_f"] > 10


def test_treatment_below_the_cutoff_and_a_shifted_cutoff() -> None:
    x, y, t, effect = _fuzzy(5, sharp=True)
    below = 1 - t  # treated below the cutoff: the effect is the jump in the other direction
    y_below = y - 2 * effect * t + effect  # the same outcomes, with the treatment now on the left
    est = rdd_rdrobust(x + 50, y_below, below, 50.0, "score")
    assert est.details["treated_side"] == "below" and est.covers(effect) and est.ci[0] < est.estimate < est.ci[1]


def test_too_few_rows_on_one_side_is_refused() -> None:
    x, y, t, _ = _fuzzy(6, n=400, sharp=True)
    with pytest.raises(AgentError, match="too few on one side"):
        rdd_rdrobust(x, y, t, 0.99, "score")
