"""The nuisance fits' cache in the run's data folder: one fit per inputs, read by every later agent.

A key hashes everything a fit depends on (covariate names and values, treatment, outcome, seed,
folds, the learners tried); an entry is written atomically, so a reader sees all of it or none.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["store", "outcome_cache_path", "propensity_cache_path"]

HASH_ROWS = 65_536
"""Rows of the covariate matrix hashed at a time: the key is that of the whole matrix's C-ordered
bytes, without a C-ordered copy of the whole matrix (144 MB at 1M rows x 18 covariates)."""


def _hash_rows(h: Any, Xv: Any) -> None:
    """Feed ``h`` the bytes of ``np.ascontiguousarray(Xv, dtype=float)``, a block of rows at a time.

    ``Xv`` is an array or anything with ``take(slice)`` giving those rows as a C-ordered float array
    (:class:`whyflow.causal.estimation.fold_rows.Rows`); row blocks of a C-ordered matrix follow one another in its
    bytes, so the digest is the whole matrix's.
    """
    for start in range(0, len(Xv), HASH_ROWS):
        rows = slice(start, start + HASH_ROWS)
        block = np.ascontiguousarray(Xv[rows], dtype=float) if isinstance(Xv, np.ndarray) else Xv.take(rows)
        h.update(block.data)


def store(path: Path, **arrays: np.ndarray) -> None:
    """Write a cache entry atomically (a reader sees the whole file or none)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, **arrays)  # type: ignore[arg-type]
    tmp.replace(path)


def outcome_cache_path(
    cache_dir: Path | None,
    X: pd.DataFrame,
    Xv: Any,
    t: np.ndarray,
    y: np.ndarray,
    seed: int,
    folds: int,
    candidates: tuple[str, ...],
    select_rows: int,
) -> Path | None:
    """Where :func:`~whyflow.causal.estimation.nuisance.fit_binary` keeps its outcome models' choice and predictions for these inputs.

    A second fit on the same covariates, rows, seed, folds and candidates (a switched propensity
    model, a later critique round with the same adjustment set) reads them instead of refitting.
    """
    if cache_dir is None:
        return None
    h = hashlib.sha1()
    h.update(json.dumps(["outcome", list(map(str, X.columns)), seed, folds, list(candidates), select_rows]).encode())
    _hash_rows(h, Xv)
    for a in (t, y):
        h.update(np.ascontiguousarray(a, dtype=float).data)
    return Path(cache_dir) / "nuisance" / f"outcome_{h.hexdigest()[:20]}.npz"


def propensity_cache_path(
    cache_dir: Path | None,
    X: pd.DataFrame,
    Xv: Any,
    t: np.ndarray,
    seed: int,
    folds: int,
    ps_model: str,
    learners: tuple[str, ...],
) -> Path | None:
    """Where :func:`~whyflow.causal.estimation.nuisance.choose_propensity` keeps its fit for these inputs (ps_diagnostics
    fits it, the effect estimator reads it)."""
    if cache_dir is None:
        return None
    h = hashlib.sha1()
    h.update(json.dumps([list(map(str, X.columns)), seed, folds, ps_model, list(learners)]).encode())
    _hash_rows(h, Xv)  # the bytes X.to_numpy(dtype=float) has in C order
    h.update(np.ascontiguousarray(t, dtype=float).tobytes())
    return Path(cache_dir) / "nuisance" / f"propensity_{h.hexdigest()[:20]}.npz"
