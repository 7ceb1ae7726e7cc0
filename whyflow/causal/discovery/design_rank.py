"""Covariate columns that make the estimators' design singular, found by the design's rank.

Why: a design [1, t, X] whose columns are linearly dependent has no unique least-squares fit;
a solver then returns one of infinitely many (an OLS "effect" of 5.8 × 10¹¹ in a randomised trial
whose file held an alias of the arm and a full set of city dummies beside the city). The columns
that cause it are a copy of the treatment (or 1 - t), a full dummy set next to its categorical's
own dummies, or any exact linear combination of other columns. Each is dropped and named with
what it repeats (:func:`collinear_columns` says which one of a set goes).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["COLLINEAR_TOL", "collinear_columns"]

COLLINEAR_TOL = 1e-9
"""Share of a standardised column's variance left after projecting it on the kept columns below
which it is an exact linear combination of them (rounding leaves about 1e-15; a real covariate
that the others explain to R² 0.999999 leaves 1e-6)."""


def _centred_gram(t: np.ndarray, X: np.ndarray, chunk: int = 65536) -> np.ndarray:
    """Z'Z of the centred [t, X] (the intercept removed), summed over row blocks so no copy of X is made."""
    mean = np.concatenate([[t.mean()], X.mean(axis=0)])
    gram = np.zeros((len(mean), len(mean)))
    for start in range(0, len(t), chunk):
        block = np.column_stack([t[start : start + chunk], X[start : start + chunk]]) - mean
        gram += block.T @ block
    return gram


def collinear_columns(t: np.ndarray, X: pd.DataFrame) -> dict[str, str]:
    """Columns of ``X`` that make the design [1, t, X] singular, each with the reason (empty when it
    has full rank).

    Columns collinear among themselves go first, the later one of each set (as Stata drops them):
    the treatment's coefficient does not depend on which. Then a set collinear only together with
    the treatment (an arm indicator that sums the other arms and this one) loses the column most
    correlated with the treatment, the mark of an alias of it; which one goes decides what is held
    fixed, so the treatment is never the one that goes.
    """
    if X.shape[1] == 0:
        return {}
    gram = _centred_gram(np.asarray(t, dtype=float), X.to_numpy(dtype=float))
    scale = np.sqrt(np.clip(np.diag(gram), 0.0, None))
    unit = np.where(scale > 0, scale, 1.0)
    gram = gram / np.outer(unit, unit)
    names = ["the treatment", *map(str, X.columns)]
    out = {
        names[j]: "constant in the analysed rows: collinear with the intercept"
        for j in range(1, len(names))
        if scale[j] == 0
    }
    varying = [j for j in range(1, len(names)) if scale[j] > 0]
    out |= _greedy(gram, names, varying, [])
    rest = sorted((j for j in varying if names[j] not in out), key=lambda j: abs(gram[0, j]))
    out |= _greedy(gram, names, rest, [0] if scale[0] > 0 else [])
    return {name: out[name] for name in names[1:] if name in out}


def _greedy(gram: np.ndarray, names: list[str], order: list[int], kept: list[int]) -> dict[str, str]:
    """The columns of ``order`` that add nothing to the rank of ``kept`` and those before them."""
    kept = list(kept)
    out: dict[str, str] = {}
    for j in order:
        if kept:
            g = gram[np.ix_(kept, kept)]
            b = gram[kept, j]
            coef = np.linalg.lstsq(g, b, rcond=None)[0]
            residual = 1.0 - float(b @ coef)
        else:
            coef, residual = np.zeros(0), 1.0
        if residual >= COLLINEAR_TOL:
            kept.append(j)
            continue
        big = [names[k] for k, w in sorted(zip(kept, coef, strict=True), key=lambda kw: -abs(kw[1])) if abs(w) > 1e-6]
        shown = ", ".join(big[:4]) + (" ..." if len(big) > 4 else "")
        out[names[j]] = (
            f"an exact linear combination of the intercept and {shown or 'nothing else'}: the design would be "
            "singular (no unique fit), so it is dropped from the estimators' covariates"
        )
    return out
