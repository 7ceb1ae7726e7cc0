"""The nuisance fits' memory savings change no number: each shortcut equals what it replaces, bit for bit.

Rows gathers a fold's rows from the covariate columns (no float copy of the whole table), the
pipelines are fitted on that one copy (the scaler's statistics summed a block of rows at a time,
the scaling done in place), folds are kept as fold numbers and the cache keys hash the matrix a
block of rows at a time. The block sizes are shrunk here so every path runs in several blocks.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.model_selection import KFold, StratifiedKFold

from benchmarks.synthetic import job_training
from whyflow.causal.discovery.adjustment import prepare
from whyflow.causal.estimation import fold_rows as FR
from whyflow.causal.estimation import nuisance as N
from whyflow.causal.estimation import nuisance_cache as C


def _frame(n: int = 900, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)) * [1.0, 1e-4, 1e4, 3.0] + [0.0, 7.0, -2e5, 0.5]
    X = pd.concat([pd.DataFrame({f"x{j}": x[:, j]}) for j in range(4)], axis=1)  # a block a column, as prepare builds
    X["d"] = (rng.random(n) < 0.3).astype(float)  # a dummy
    z = x[:, 0] + 0.5 * x[:, 3] + 1e-4 * (x[:, 2] + 2e5)
    t = rng.binomial(1, 1 / (1 + np.exp(-z))).astype(int)
    y = 2.0 * t + z + np.sin(x[:, 0]) + rng.normal(size=n)
    return X, t, y


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(FR, "STAT_ROWS", 97)
    monkeypatch.setattr(FR, "TAKE_ROWS", 61)
    monkeypatch.setattr(C, "HASH_ROWS", 53)


def test_rows_take_is_the_float_matrix_indexed(small_blocks: None) -> None:  # noqa: ARG001
    X, _, _ = _frame()
    frame, _ = job_training(n=600, seed=7)  # a categorical (dummies) and integer columns
    cat = prepare(frame, "training", "earnings", ["age", "education_years", "prior_earnings", "married", "region"]).X
    rng = np.random.default_rng(1)
    for table in (X, cat, X.to_numpy(), np.asfortranarray(X.to_numpy())):
        whole = table.to_numpy(dtype=float) if isinstance(table, pd.DataFrame) else table
        rows = FR.Rows(table)
        assert rows.shape == whole.shape and len(rows) == len(whole)
        mask = rng.random(len(whole)) < 0.4
        for pick in (np.sort(rng.choice(len(whole), 500, replace=False)), mask, slice(13, 700), np.array([5, -1, 3])):
            got = rows.take(pick)
            np.testing.assert_array_equal(got, whole[pick])
            assert got.flags.c_contiguous and got.dtype == np.float64
            got[:] = np.nan  # the caller's own copy: writing to it leaves the table alone
        np.testing.assert_array_equal(rows.take(slice(0, None)), whole)


def test_owned_fits_are_the_pipelines_fits(small_blocks: None) -> None:  # noqa: ARG001
    """Fitted on one copy that it overwrites, each learner predicts what sklearn's own fit predicts."""
    assert FR.scaler_exact()  # the scaler's block sums are sklearn's: the shortcut is in use
    X, t, y = _frame()
    Xv = X.to_numpy(dtype=float)
    idx = np.arange(len(y))
    train, test = idx[idx % 3 != 0], idx[idx % 3 == 0]
    for name in N.PS_LEARNERS:
        want = N._classifier(name, 4).fit(Xv[train], t[train]).predict_proba(Xv[test])[:, 1]
        model = FR.fit_owned(N._classifier(name, 4), Xv[train], t[train])
        np.testing.assert_array_equal(FR.predict_owned(model, Xv[test], proba=True), want)
    for name in N.OUTCOME_LEARNERS:
        want = N._regressor(name, 4).fit(Xv[train], y[train]).predict(Xv[test])
        model = FR.fit_owned(N._regressor(name, 4), Xv[train], y[train])
        np.testing.assert_array_equal(FR.predict_owned(model, Xv[test], proba=False), want)


def test_scaler_statistics_in_blocks_are_sklearns(small_blocks: None) -> None:  # noqa: ARG001
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(2)
    for n, p in ((1000, 2), (1000, 7), (96, 3), (97, 3), (98, 3), (5000, 40)):
        Xs = rng.normal(size=(n, p)) * rng.uniform(1e-6, 1e6, size=p) + rng.uniform(-1e6, 1e6, size=p)
        Xs[:, 0] = 3.25  # a constant column: scale 1
        ours, theirs = FR.fit_scaler(StandardScaler(), Xs), clone(StandardScaler()).fit(Xs)
        for attr in ("mean_", "var_", "scale_", "n_samples_seen_"):
            np.testing.assert_array_equal(getattr(ours, attr), getattr(theirs, attr))
        np.testing.assert_array_equal(ours.transform(Xs.copy(), copy=False), theirs.transform(Xs))
    with_nan = rng.normal(size=(300, 3))
    with_nan[5, 1] = np.nan  # not summed in blocks: sklearn's own fit
    np.testing.assert_array_equal(FR.fit_scaler(StandardScaler(), with_nan).var_, StandardScaler().fit(with_nan).var_)


def test_folds_are_sklearns_splits() -> None:
    rng = np.random.default_rng(3)
    for n, strata in ((1001, rng.binomial(1, 0.3, 1001).astype(float)), (1001, None), (7, None)):
        for k in (5, 10):
            folds = FR.splits_of(n, k, 3, strata)
            idx = np.zeros((n, 1))
            if strata is None:
                want = list(KFold(len(folds), shuffle=True, random_state=3).split(idx))
            else:
                want = list(StratifiedKFold(len(folds), shuffle=True, random_state=3).split(idx, strata))
            assert len(folds) == len(want)
            for (train, test), (wtrain, wtest) in zip(folds, want, strict=True):
                np.testing.assert_array_equal(train, wtrain)
                np.testing.assert_array_equal(test, wtest)
                assert train.dtype == wtrain.dtype and test.dtype == wtest.dtype


def test_cache_keys_hash_the_whole_matrix(small_blocks: None, tmp_path) -> None:  # noqa: ANN001, ARG001
    """The keys are those of the whole C-ordered float matrix, hashed in blocks or not, from Rows or not."""
    X, t, y = _frame()
    Xv = X.to_numpy(dtype=float)
    for matrix in (FR.Rows(X), Xv, np.ascontiguousarray(Xv)):
        path = C.propensity_cache_path(tmp_path, X, matrix, t.astype(float), 1, 5, "auto", N.PS_LEARNERS)
        h = hashlib.sha1()
        h.update(json.dumps([list(X.columns), 1, 5, "auto", list(N.PS_LEARNERS)]).encode())
        h.update(np.ascontiguousarray(Xv).tobytes())
        h.update(t.astype(float).tobytes())
        assert path is not None and path.name == f"propensity_{h.hexdigest()[:20]}.npz"
        out = C.outcome_cache_path(tmp_path, X, matrix, t.astype(float), y, 1, 5, ("linear",), 20_000)
        h = hashlib.sha1()
        h.update(json.dumps(["outcome", list(X.columns), 1, 5, ["linear"], 20_000]).encode())
        for a in (np.ascontiguousarray(Xv), t.astype(float), y):
            h.update(a.tobytes())
        assert out is not None and out.name == f"outcome_{h.hexdigest()[:20]}.npz"


def test_fits_from_the_columns_equal_fits_from_the_matrix(small_blocks: None, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ARG001
    """fit_binary gathers each fold from the frame's columns; from a float matrix, the same numbers."""
    monkeypatch.setattr(N, "SELECT_ROWS", 400)  # choose on a sample, then cross-fit the choice on every row
    X, t, y = _frame()
    nu = N.fit_binary(X, t, y, seed=2)
    assert nu.selected_on == 400
    splits = FR.splits_of(len(y), nu.folds, 2, t.astype(float))
    best = nu.choice["outcome"]
    for matrix in (X.to_numpy(dtype=float), FR.Rows(X)):
        np.testing.assert_array_equal(N._regress(matrix, y, splits, 2, t == 1, (best,))[best], nu.mu1)
        name, e, _ = N.choose_propensity(X, t, 2, matrix=matrix)
        assert name == nu.choice["propensity"]
        np.testing.assert_array_equal(e, nu.e)
