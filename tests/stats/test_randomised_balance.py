"""A treatment balanced on every covariate but one that follows the outcome: that one is post-treatment
(left out when it carries the move); a lone confounder among balanced covariates is never taken for it."""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmarks.truth_kinds import make
from whyflow.causal.discovery.randomised_move import randomised_move


def _observational(seed: int, n: int = 3000) -> pd.DataFrame:
    """One strong confounder c drives the treatment; four prognostic covariates unrelated to it."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4))
    c = rng.normal(size=n)
    t = rng.binomial(1, 1 / (1 + np.exp(-1.2 * c)))
    y = 1.0 * t + 1.5 * c + x @ np.array([0.8, 0.5, -0.4, 0.3]) + rng.normal(size=n)
    return pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "d": x[:, 2], "e": x[:, 3], "c": c, "t": t, "y": y})


def test_an_unstated_trial_names_the_reported_outcome() -> None:
    for seed in range(3):
        case = make("rct_outcome_report", seed)
        f = case.frame
        cols = [c for c in f.columns if c not in ("treated", "outcome")]
        move = randomised_move(f, "treated", "outcome", cols)
        assert move.applies and move.why.startswith("balanced on the 4 other covariates"), move.why
        assert [c.column for c in move.carriers] == ["outcome_reported"] and move.resolved
        assert "follows the outcome's covariate pattern" in move.carriers[0].reason


def test_a_lone_confounder_among_balanced_covariates_is_kept() -> None:
    for seed in range(5):
        move = randomised_move(_observational(seed), "t", "y", ["a", "b", "d", "e", "c"])
        assert not move.applies and not move.carriers, move


def test_balance_on_covariates_that_do_not_predict_the_outcome_is_no_evidence() -> None:
    """An outcome report among balanced covariates that are pure noise: nothing says it is a trial."""
    rng = np.random.default_rng(7)
    n = 2000
    t = rng.binomial(1, 0.5, n)
    y = 1.0 * t + rng.normal(size=n)
    f = pd.DataFrame({f"z{k}": rng.normal(size=n) for k in range(4)}).assign(t=t, y=y)
    f["report"] = 0.8 * y + rng.normal(scale=0.8, size=n)
    move = randomised_move(f, "t", "y", ["z0", "z1", "z2", "z3", "report"])
    assert not move.carriers, move


def test_an_out_of_balance_column_that_does_not_move_the_estimate_stays() -> None:
    """A trial where one column is out of balance and follows the outcome but adds nothing to it given the
    covariates (it is their sum): it stands out, yet no move is large, so nothing is left out."""
    rng = np.random.default_rng(3)
    n = 3000
    x = rng.normal(size=(n, 4))
    t = rng.binomial(1, 0.5, n)
    y = 1.0 * t + x @ np.array([0.8, 0.5, -0.4, 0.3]) + rng.normal(size=n)
    f = pd.DataFrame(x, columns=["a", "b", "d", "e"]).assign(t=t, y=y)
    f["s"] = x @ np.array([0.8, 0.5, -0.4, 0.3]) + 0.5 * t + rng.normal(scale=0.3, size=n)
    move = randomised_move(f, "t", "y", ["a", "b", "d", "e", "s"])
    assert not move.carriers, move
