"""Least squares with HC1 standard errors: statsmodels' numbers, without statsmodels' copies of the data.

Regression adjustment fits ``y ~ 1 + t + W`` on every row. ``sm.OLS(y, X).fit(cov_type="HC1")``
holds four n x k arrays at once (the design, its SVD's left vectors, the pseudo-inverse and the
sandwich's weighted copy); at a million rows x 20 covariates that is 640 MB for a 150 MB table.

:func:`block_rows_for` chooses between two ways to compute the same quantities:

- up to :data:`BLOCKED_FROM_CELLS` cells in the design, statsmodels' own operations in its order
  (:func:`statsmodels_order`): the same bits as ``sm.OLS``, with two n x k arrays at once;
- from there, a block of :data:`BLOCK_ROWS` rows at a time (:func:`blocked`): the R factor of
  ``[X | y]`` by a QR of each block stacked under the previous R (a tall-skinny QR), whose SVD
  gives the singular values and right vectors of X, hence statsmodels' pseudo-inverse
  ``pinv(X) = (X'X)^+ X'`` and its rank cut-off; then the residuals and the HC1 sandwich's
  middle ``X' diag(e^2) X`` a block at a time. No array of n x k is made; the results agree with
  statsmodels' to about 1e-12 relative (``tests/stats/test_ols.py`` checks 1e-10, with a
  rank-deficient design among them), not to the last bit.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["block_rows_for", "statsmodels_order", "blocked", "BLOCKED_FROM_CELLS", "BLOCK_ROWS"]

BLOCKED_FROM_CELLS = 4_000_000
"""Designs of this many cells (rows x columns) or more are fitted a block at a time: 32 MB a copy,
where statsmodels' computation holds about four (200,000 rows x 20 columns)."""

BLOCK_ROWS = 65_536
"""Rows per block: 11 MB of a 21-column design, a third of one 32 MB copy of a design at the threshold."""

Fit = tuple[float, float, float]
"""The coefficient of column ``column`` of the design, its HC1 standard error, and R squared."""


def block_rows_for(n: int, k: int) -> int | None:
    """The rows per block to fit an n x k design by (:func:`blocked`), or None for :func:`statsmodels_order`."""
    return BLOCK_ROWS if n * k >= BLOCKED_FROM_CELLS else None


def statsmodels_order(y: np.ndarray, design: Callable[[], np.ndarray], column: int = 1) -> Fit:
    """statsmodels 0.15's operations in its order on the same arrays, so every bit is its.

    pinv_extended's SVD and pseudo-inverse, params, wresid, HC1's sandwich, rsquared with its
    unit weights; but ``design()`` is asked again rather than kept while the pseudo-inverse is
    formed, the singular vectors are scaled in place, and no model or results object keeps
    anything: at most two n x k arrays at once where statsmodels has four (at 1M x 20 the step
    peaked 633 MB above its start, this 335).
    """
    exog = design()
    u, s, vt = np.linalg.svd(exog, False)
    del exog
    s_orig = np.copy(s)
    cutoff = 1e-15 * np.maximum.reduce(s)
    for i in range(min(u.shape[0], vt.shape[1])):
        s[i] = 1.0 / s[i] if s[i] > cutoff else 0.0
    pinv = np.dot(np.transpose(vt), np.multiply(s[:, np.newaxis], np.transpose(u), out=np.transpose(u)))
    del u
    nobs = float(len(y))
    df_resid = nobs - np.linalg.matrix_rank(np.diag(s_orig))
    params = np.dot(pinv, y)
    wresid = y - np.dot(design(), params)
    cov = np.dot(pinv, (nobs / df_resid * (wresid**2))[:, None] * pinv.T)
    del pinv
    ones = np.repeat(np.array(1.0), len(y))
    r2 = 1 - np.dot(wresid, wresid) / np.sum(ones * (y - np.average(y, weights=ones)) ** 2)
    return float(params[column]), float(np.sqrt(np.diag(cov))[column]), float(r2)


def blocked(
    y: np.ndarray, rows: Callable[[int, int], np.ndarray], k: int, column: int = 1, block_rows: int = BLOCK_ROWS
) -> Fit:
    """The same fit ``block_rows`` rows at a time (see the module's docstring)."""
    n = len(y)
    r: np.ndarray = np.zeros((0, k + 1))
    for start in range(0, n, block_rows):
        stop = min(n, start + block_rows)
        block = np.empty((stop - start, k + 1))
        block[:, :k] = rows(start, stop)
        block[:, k] = y[start:stop]
        r = np.asarray(np.linalg.qr(np.vstack([r, block]), mode="r"))
    r_x, qty = r[:k, :k], r[:k, k]  # X = Q R_x, Q'y = qty
    if r_x.shape[0] < k:  # fewer rows than columns
        r_x = np.vstack([r_x, np.zeros((k - r_x.shape[0], k))])
        qty = np.concatenate([qty, np.zeros(k - len(qty))])
    u, s, vt = np.linalg.svd(r_x)  # X = (Q u) diag(s) vt: X's singular values and right vectors
    cutoff = 1e-15 * np.maximum.reduce(s)
    s_inv = np.where(s > cutoff, 1.0 / np.where(s > 0, s, 1.0), 0.0)
    params = vt.T @ (s_inv * (u.T @ qty))
    gram_pinv = (vt.T * s_inv**2) @ vt  # (X'X)^+, so that pinv(X) = (X'X)^+ X'
    df_resid = float(n) - np.linalg.matrix_rank(np.diag(s))
    middle = np.zeros((k, k))
    ssr = 0.0
    for start in range(0, n, block_rows):
        stop = min(n, start + block_rows)
        x = rows(start, stop)
        e = y[start:stop] - x @ params
        ssr += float(e @ e)
        middle += x.T @ (x * (e**2)[:, None])
    cov = gram_pinv @ (middle * (n / df_resid)) @ gram_pinv
    centred = y - y.mean()
    r2 = 1 - ssr / float(centred @ centred)
    return float(params[column]), float(np.sqrt(cov[column, column])), float(r2)
