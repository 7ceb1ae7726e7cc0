"""The headline's re-estimates on common support and with flexible nuisances (whyflow.causal.estimation.stability),
through the effect estimator on data with a known effect."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from tests.helpers import make_state
from whyflow.causal.estimation.stability import moved
from whyflow.flows.running.dispatch import run_single_agent


def test_moved_needs_more_than_the_headline_se_and_the_subsample_noise() -> None:
    assert moved(2.0, 0.1, 1.8, 0.1)  # same precision: two SEs away
    assert not moved(2.0, 0.1, 1.95, 0.1)  # within its SE
    assert not moved(2.0, 0.1, 1.8, 0.3)  # a small subsample: 0.2 is within 1.96 x sqrt(0.09 - 0.01)
    assert moved(2.0, 0.1, 1.0, 0.3)


def _extreme_tails(n: int = 3000, seed: int = 1) -> pd.DataFrame:
    """Effect 1 inside common support, 4 among units with extreme propensity (a fifth of the rows)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    e = 1 / (1 + np.exp(-2.5 * x))
    t = rng.binomial(1, e)
    effect = np.where((e < 0.1) | (e > 0.9), 4.0, 1.0)
    y = effect * t + x + rng.normal(size=n)
    return pd.DataFrame({"x": x, "treated": t, "outcome": y})


def test_the_headline_carries_both_re_estimates(tmp_path: Path) -> None:
    state = make_state(_extreme_tails(), tmp_path, "treated", "outcome")
    run_single_agent("effect_estimator", state, tmp_path, {"methods": ["naive", "ols", "aipw"], "bootstrap": 30})
    head = next(e for e in state.treatment_effects if e.details.headline)
    checks = head.details.stability
    assert checks is not None and checks.skipped is None
    support, flexible = checks.common_support, checks.flexible
    assert support is not None and support.estimate is not None and support.std_error is not None
    assert support.n_dropped is not None and support.n_dropped > 300 and support.band == (0.1, 0.9)
    assert abs(support.estimate - 1.0) < 3 * support.std_error  # the effect inside support
    assert support.moved and head.estimate > support.estimate
    assert flexible is not None and flexible.propensity == "gbm" and np.isfinite(flexible.estimate or np.nan)
    assert all(e.details.stability is None for e in state.treatment_effects if not e.details.headline)
    reread = type(state).model_validate_json(state.model_dump_json())  # the typed checks survive state.json
    assert next(e for e in reread.treatment_effects if e.details.headline).details.stability == checks
