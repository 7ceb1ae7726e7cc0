"""The nuisance fits' cache in the run's data folder: one fit per inputs, read by every later agent.

A key hashes everything a fit depends on (covariate names and values, treatment, outcome, seed,
folds, the learners tried); an entry is written atomically, so a reader sees all of it or none.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["store", "outcome_cache_path", "propensity_cache_path"]


def store(path: Path, **arrays: np.ndarray) -> None:
    """Write a cache entry atomically (a reader sees the whole file or none)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, **arrays)  # type: ignore[arg-type]
    tmp.replace(path)


def outcome_cache_path(
    cache_dir: Path | None,
    X: pd.DataFrame,
    Xv: np.ndarray,
    t: np.ndarray,
    y: np.ndarray,
    seed: int,
    folds: int,
    candidates: tuple[str, ...],
    select_rows: int,
) -> Path | None:
    """Where :func:`~agents.stats.nuisance.fit_binary` keeps its outcome models' choice and predictions for these inputs.

    A second fit on the same covariates, rows, seed, folds and candidates (a switched propensity
    model, a later critique round with the same adjustment set) reads them instead of refitting.
    """
    if cache_dir is None:
        return None
    h = hashlib.sha1()
    h.update(json.dumps(["outcome", list(map(str, X.columns)), seed, folds, list(candidates), select_rows]).encode())
    for a in (Xv, t, y):
        h.update(np.ascontiguousarray(a, dtype=float).data)
    return Path(cache_dir) / "nuisance" / f"outcome_{h.hexdigest()[:20]}.npz"


def propensity_cache_path(
    cache_dir: Path | None,
    X: pd.DataFrame,
    Xv: np.ndarray,
    t: np.ndarray,
    seed: int,
    folds: int,
    ps_model: str,
    learners: tuple[str, ...],
) -> Path | None:
    """Where :func:`~agents.stats.nuisance.fit_propensity` keeps its fit for these inputs (ps_diagnostics
    fits it, the effect estimator reads it)."""
    if cache_dir is None:
        return None
    h = hashlib.sha1()
    h.update(json.dumps([list(map(str, X.columns)), seed, folds, ps_model, list(learners)]).encode())
    h.update(np.ascontiguousarray(Xv).data)  # the bytes X.to_numpy(dtype=float) has, hashed in place
    h.update(np.ascontiguousarray(t, dtype=float).tobytes())
    return Path(cache_dir) / "nuisance" / f"propensity_{h.hexdigest()[:20]}.npz"
