"""Covariate columns that make the estimators' design singular, found by the design's rank.

Why: a design [1, t, X] whose columns are linearly dependent has no unique least-squares fit;
a solver then returns one of infinitely many (an OLS "effect" of 5.8 × 10¹¹ in a randomised trial
whose file held an alias of the arm and a full set of city dummies beside the city). The columns
that cause it are a copy of the treatment (or 1 - t), a full dummy set next to its categorical's
own dummies, or any exact linear combination of other columns. Each is dropped, in order, from
the right: a column is kept when it adds to the rank of the columns before it (the intercept and
the treatment first, so an alias of the treatment is what goes), and named with what it repeats.
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
    """Columns of ``X`` that are exact linear combinations of the intercept, ``t`` and the columns
    of ``X`` before them, each with the reason (empty when the design has full rank)."""
    if X.shape[1] == 0:
        return {}
    gram = _centred_gram(np.asarray(t, dtype=float), X.to_numpy(dtype=float))
    scale = np.sqrt(np.clip(np.diag(gram), 0.0, None))
    unit = np.where(scale > 0, scale, 1.0)
    gram = gram / np.outer(unit, unit)
    names = ["the treatment", *map(str, X.columns)]
    kept: list[int] = [0] if scale[0] > 0 else []
    out: dict[str, str] = {}
    for j in range(1, len(names)):
        if scale[j] == 0:
            out[names[j]] = "constant in the analysed rows: collinear with the intercept"
            continue
        if kept:
            g = gram[np.ix_(kept, kept)]
            b = gram[kept, j]
            coef = np.linalg.lstsq(g, b, rcond=None)[0]
            residual = 1.0 - float(b @ coef)
        else:
            coef, residual = np.zeros(0), 1.0
        if residual < COLLINEAR_TOL:
            big = [
                names[k] for k, w in sorted(zip(kept, coef, strict=True), key=lambda kw: -abs(kw[1])) if abs(w) > 1e-6
            ]
            shown = ", ".join(big[:4]) + (" ..." if len(big) > 4 else "")
            out[names[j]] = (
                f"an exact linear combination of the intercept and {shown or 'nothing else'}: the design would be "
                "singular (no unique fit), so it is dropped from the estimators' covariates"
            )
        else:
            kept.append(j)
    return out
