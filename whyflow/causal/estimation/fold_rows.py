"""The rows a cross-fitting fold fits on, held once: gathered from the covariate columns, fitted in place.

The nuisance fits' memory at a million rows came from copies, not from the models: a float copy
of the whole covariate table (``prepare`` builds it a column at a time, so there is no matrix to
view), then each fold's training rows held three times by a scaler-and-logistic pipeline (the
rows, the scaler's temporaries, the scaled copy). Here a fold's rows are gathered straight from
the columns (:class:`Rows`), the pipeline's StandardScaler is fitted a block of rows at a time and
scales that one copy in place (:func:`fit_owned`, :func:`predict_owned`). Every shortcut gives the
numbers of what it replaces to the bit (``tests/stats/test_nuisance_memory.py``); the scaler's
block sums are checked against sklearn once at first use (:func:`scaler_exact`) and sklearn's own
fit is used if they ever differ.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "Folds",
    "splits_of",
    "Rows",
    "take_rows",
    "fit_owned",
    "predict_owned",
    "fit_scaler",
    "scaler_stats",
    "scaler_exact",
    "TAKE_ROWS",
    "STAT_ROWS",
]


class Rows:
    """The covariates as float columns; :meth:`take` gives any rows of them as one C-ordered matrix.

    ``Rows(X).take(rows)`` is ``X.to_numpy(dtype=float)[rows]`` to the bit (values and layout), without
    the float copy of every row first: a fold's fit copies its own rows only. (``X.to_numpy`` copies
    the whole table: a frame of one-column blocks, as ``prepare`` builds, has no matrix to view.)
    """

    def __init__(self, X: pd.DataFrame | np.ndarray) -> None:
        if isinstance(X, pd.DataFrame):
            self.matrix = None if X.shape[1] else np.zeros((len(X), 1))
            self.columns = [X.iloc[:, j].to_numpy(dtype=float) for j in range(X.shape[1])]
        else:
            self.matrix, self.columns = np.asarray(X, dtype=float), []
        self.shape = self.matrix.shape if self.matrix is not None else (len(X), len(self.columns))

    def __len__(self) -> int:
        return self.shape[0]

    def take(self, rows: np.ndarray | slice) -> np.ndarray:
        """Rows ``rows`` (positions, a mask or a slice) of every column, C-ordered, float.

        Gathered a block of rows at a time into a column-major buffer and transposed into place:
        written column by column, the strided writes cost 6x the gather at 800,000 x 18.
        """
        if self.matrix is not None:
            return take_rows(self.matrix, rows)
        idx = np.arange(len(self))[rows] if isinstance(rows, slice) else np.asarray(rows)
        idx = np.flatnonzero(idx) if idx.dtype == bool else idx
        out = np.empty((len(idx), len(self.columns)))
        buf = np.empty((len(self.columns), min(len(idx), TAKE_ROWS)))
        for start in range(0, len(idx), TAKE_ROWS):
            block = idx[start : start + TAKE_ROWS]
            for j, col in enumerate(self.columns):
                col.take(block, out=buf[j, : len(block)], mode="wrap")  # "wrap": unbuffered, negatives as in col[block]
            out[start : start + len(block)] = buf[:, : len(block)].T
        return out


TAKE_ROWS = 32_768
"""Rows :meth:`Rows.take` gathers at a time."""


def take_rows(Xv: np.ndarray | Rows, rows: np.ndarray | slice) -> np.ndarray:
    """Rows ``rows`` of ``Xv`` as a C-ordered array of their own (a fit may overwrite it)."""
    if isinstance(Xv, Rows):
        return Xv.take(rows)
    return np.array(Xv[rows], order="C") if isinstance(rows, slice) else np.ascontiguousarray(Xv[rows])


def fit_owned(model: Any, X: np.ndarray, y: np.ndarray) -> Any:
    """``model.fit(X, y)`` where ``X`` is the caller's own copy, which the fit may overwrite.

    A pipeline's steps are fitted in turn as ``Pipeline.fit`` fits them, except that its
    StandardScaler is fitted a block of rows at a time (:func:`fit_scaler`) and scales ``X`` in
    place: Pipeline.fit holds the training rows three times (the rows, the scaler's temporaries,
    the scaled copy), this once; the fitted model is Pipeline.fit's to the bit.
    """
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    if getattr(model, "fits_owned_copy", False):  # a learner of our own that may overwrite X (LinearPlusBoost)
        return model.fit(X, y, overwrite_X=True)
    if not isinstance(model, Pipeline):
        return model.fit(X, y)
    for _, step in model.steps[:-1]:
        if isinstance(step, StandardScaler):
            X = fit_scaler(step, X).transform(X, copy=False)
        else:
            X = step.fit_transform(X, y)
    model.steps[-1][1].fit(X, y)
    return model


def predict_owned(model: Any, X: np.ndarray, proba: bool) -> np.ndarray:
    """``model.predict_proba(X)[:, 1]`` (``proba``) or ``model.predict(X)``, scaling ``X`` (the caller's
    copy) in place on its way through a pipeline: the same numbers, no scaled copy."""
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    if isinstance(model, Pipeline):
        for _, step in model.steps[:-1]:
            X = step.transform(X, copy=False) if isinstance(step, StandardScaler) else step.transform(X)
        model = model.steps[-1][1]
    return np.asarray(model.predict_proba(X)[:, 1] if proba else model.predict(X), dtype=float)


STAT_ROWS = 65_536
"""Rows a StandardScaler's statistics are summed over at a time (:func:`fit_scaler`)."""


def fit_scaler(scaler: Any, X: np.ndarray) -> Any:
    """``scaler.fit(X)`` to the bit, its temporaries a block of rows instead of two copies of ``X``.

    StandardScaler's mean and variance (sklearn's two-pass formula) reduce ``X`` three times
    by columns: the sums, the sums of ``X - T`` and of their squares; numpy sums a C-ordered
    matrix's columns row after row, so carrying each block's sums into the next block's (one more
    row) adds the same numbers in the same order. The rest is sklearn's per-column arithmetic,
    written out as sklearn writes it; :func:`scaler_exact` checks the whole once against sklearn
    and, should they ever differ (another sklearn or numpy), every fit is sklearn's own again.
    """
    from sklearn.preprocessing import StandardScaler

    exact = type(scaler) is StandardScaler and scaler.with_mean and scaler.with_std and scaler_exact()
    # One column is summed pairwise, not row by row: sklearn's fit (and a column is small).
    blocked = exact and X.ndim == 2 and X.shape[1] > 1 and X.dtype == np.float64 and X.flags.c_contiguous
    stats = scaler_stats(X, STAT_ROWS) if blocked else None
    if stats is None:
        return scaler.fit(X)
    scaler.mean_, scaler.var_, scaler.n_samples_seen_, scaler.scale_ = stats
    scaler.n_features_in_ = X.shape[1]
    return scaler


def scaler_stats(X: np.ndarray, rows: int) -> tuple[Any, ...] | None:
    """``StandardScaler().fit(X)``'s mean_, var_, n_samples_seen_ and scale_ (None if ``X`` has NaN or inf)."""
    from sklearn.preprocessing._data import _handle_zeros_in_scale, _is_constant_feature

    n, p = X.shape
    buf = np.empty((min(n, rows) + 1, p))  # row 0 carries the sums so far into the next block's sum

    def sums(T: np.ndarray | None) -> list[np.ndarray]:
        acc: list[np.ndarray] = []
        for start in range(0, n, rows):
            k = min(rows, n - start)
            part = buf[1 : k + 1]
            if T is None:
                part[...] = X[start : start + k]
            else:
                np.subtract(X[start : start + k], T, out=part)
            for i, square in enumerate((False,) if T is None else (False, True)):
                if square:
                    part **= 2
                if acc[i:]:
                    buf[0] = acc[i]
                    acc[i] = buf[: k + 1].sum(axis=0)
                else:
                    acc.append(part.sum(axis=0))
        return acc

    (new_sum,) = sums(None)
    if not np.isfinite(new_sum).all():
        return None
    last_sample_count = np.zeros(p)
    last_sum = 0.0 * last_sample_count
    new_sample_count = n - last_sample_count  # n less the NaN count: none
    updated_sample_count = last_sample_count + new_sample_count
    mean = (last_sum + new_sum) / updated_sample_count
    correction, unnormalized = sums(new_sum / new_sample_count)
    unnormalized -= correction**2 / new_sample_count
    var = unnormalized / updated_sample_count
    seen = updated_sample_count[0] if updated_sample_count.max() == updated_sample_count.min() else updated_sample_count
    scale = _handle_zeros_in_scale(np.sqrt(var), copy=False, constant_mask=_is_constant_feature(var, mean, seen))
    return mean, var, seen, scale


@functools.cache
def scaler_exact() -> bool:
    """Whether :func:`scaler_stats` gives sklearn's StandardScaler to the bit (checked once)."""
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(0)
    X = rng.normal(size=(700, 5)) * [1.0, 1e-8, 1e8, 3.0, 0.0] + [0.0, 5.0, -1e9, 1e-3, 2.0]
    try:
        ours, theirs = scaler_stats(X, 64), StandardScaler().fit(X)
    except Exception:  # noqa: BLE001 - a private helper gone: sklearn's own fit, always
        return False
    return ours is not None and all(
        np.array_equal(np.asarray(a), np.asarray(b)) and np.asarray(a).dtype == np.asarray(b).dtype
        for a, b in zip(ours, (theirs.mean_, theirs.var_, theirs.n_samples_seen_, theirs.scale_), strict=True)
    )


class Folds(Sequence[tuple[np.ndarray, np.ndarray]]):
    """Cross-fitting folds kept as each row's fold number; ``folds[k]`` is fold k's (train, test) rows.

    sklearn's splitters give every fold's rows as ascending positions (train: the rows outside
    the fold), so the pairs are theirs exactly, made when a part asks for its fold: at 1M rows
    five folds' index arrays are 38 MiB, the fold numbers 1.
    """

    def __init__(self, fold_of: np.ndarray, k: int) -> None:
        self.fold_of, self.k = fold_of, k

    def __len__(self) -> int:
        return self.k

    def __getitem__(self, k: int) -> tuple[np.ndarray, np.ndarray]:  # type: ignore[override]
        if not -self.k <= k < self.k:
            raise IndexError(k)
        test = self.fold_of == k % self.k
        return np.flatnonzero(~test), np.flatnonzero(test)


def splits_of(n: int, folds: int, seed: int, strata: np.ndarray | None) -> Folds:
    """``folds`` shuffled (stratified by ``strata`` when given, at most the smallest stratum's size) cross-fitting folds of ``n`` rows."""
    from sklearn.model_selection import KFold, StratifiedKFold

    idx = np.zeros((n, 1))
    if strata is not None:
        k = max(2, min(folds, int(np.bincount(strata.astype(int)).min())))
        splits = StratifiedKFold(k, shuffle=True, random_state=seed).split(idx, strata)
    else:
        k = max(2, min(folds, n))
        splits = KFold(k, shuffle=True, random_state=seed).split(idx)
    fold_of = np.empty(n, dtype=np.int8 if k < 128 else np.int64)
    for i, (_, test) in enumerate(splits):
        fold_of[test] = i
    return Folds(fold_of, k)
