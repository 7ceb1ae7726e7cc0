"""Above SELECT_ROWS rows the nuisance learners are chosen on a seeded sample, then only the chosen
one is cross-fitted on every row: the predictions are exactly that learner's full-data ones."""

from __future__ import annotations

import numpy as np
import pandas as pd

from whyflow.causal.estimation import fold_rows as FR
from whyflow.causal.estimation import nuisance as N


def _data(n: int, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2))
    t = rng.binomial(1, 1 / (1 + np.exp(-(0.8 * x[:, 0] - 0.5 * x[:, 1])))).astype(float)
    y = 1.5 * t + x[:, 0] + np.sin(2 * x[:, 1]) + rng.normal(size=n)
    return pd.DataFrame(x, columns=["x1", "x2"]), t, y


def test_large_data_chooses_on_a_sample_and_fits_the_choice_on_every_row(monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setattr(N, "SELECT_ROWS", 3000)  # the rule at a test's size; the shipped value is 20,000
    X, t, y = _data(8000)
    nu = N.fit_binary(X, t, y, seed=1)
    assert nu.selected_on == 3000 and "seeded sample of 3,000 rows" in nu.describe()
    assert len(nu.cv_loss["outcome"]) > 1 and len(nu.cv_loss["propensity"]) > 1  # every candidate was scored
    splits = FR.splits_of(len(y), nu.folds, 1, t)
    best = nu.choice["outcome"]
    full = N._regress(X.to_numpy(dtype=float), y, splits, 1, t == 1, (best,))[best]
    np.testing.assert_array_equal(nu.mu1, full)  # the chosen learner's own full-data cross-fit
    ps_name, e, _ = N.choose_propensity(X, t, seed=1)
    np.testing.assert_array_equal(nu.e, e)
    assert ps_name == nu.choice["propensity"]


def test_small_data_chooses_on_every_row(monkeypatch) -> None:  # noqa: ANN001
    X, t, y = _data(2000)
    nu = N.fit_binary(X, t, y, seed=1)
    assert nu.selected_on is None and "seeded sample" not in nu.describe()
    loss = nu.cv_loss["outcome"]
    assert nu.choice["outcome"] == min(loss, key=loss.get)


def test_a_second_fit_on_the_same_inputs_reads_the_first(tmp_path) -> None:  # noqa: ANN001
    """The outcome models are stored in the run's data folder: a refit with a switched propensity model
    (or a later round on the same rows) reads them and gets the very same predictions."""
    X, t, y = _data(1500, seed=3)
    first = N.fit_binary(X, t, y, seed=2, ps_model="logistic", cache_dir=tmp_path)
    stored = sorted(p.name.split("_")[0] for p in (tmp_path / "nuisance").iterdir())
    assert stored == ["outcome", "propensity"]
    (entry,) = (tmp_path / "nuisance").glob("outcome_*.npz")
    written = entry.stat().st_mtime_ns
    switched = N.fit_binary(X, t, y, seed=2, ps_model="gbm", cache_dir=tmp_path)
    assert switched.choice["propensity"] == "gbm" and switched.choice["outcome"] == first.choice["outcome"]
    np.testing.assert_array_equal(switched.mu1, first.mu1)
    np.testing.assert_array_equal(switched.mu0, first.mu0)
    assert switched.cv_loss["outcome"] == first.cv_loss["outcome"]
    assert entry.stat().st_mtime_ns == written  # read, not refitted and written again
    fresh = N.fit_binary(X, t, y, seed=2, ps_model="gbm")  # no cache: fitted again, the same numbers
    np.testing.assert_array_equal(fresh.mu1, first.mu1)
    other = N.fit_binary(X, t, y, seed=5, ps_model="logistic", cache_dir=tmp_path)  # another seed: its own entry
    assert len(list((tmp_path / "nuisance").glob("outcome_*.npz"))) == 2 and not np.array_equal(other.mu1, first.mu1)
