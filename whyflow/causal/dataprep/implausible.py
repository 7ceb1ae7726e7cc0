"""Values too large to be measurements: those whose squares would make a column's sums overflow.

An export writes 1e308 (or 1.0e+308) where it had no value, or a value overflowed upstream; the
number reads as a float, and every mean, variance and regression over its column overflows to
infinity. The profiler and data repair read such values as missing, and say so.
"""

from __future__ import annotations

import numpy as np

__all__ = ["overflow_limit", "overflowing"]


def overflow_limit(n: int) -> float:
    """The magnitude above which the squares of ``n`` values may sum past the largest float.

    Every mean, variance and regression sums values or their squares; one value above this
    limit can make such a sum overflow to infinity (an export's 1e308 sentinel, a "1.0e+308"
    written for "no value"). No measurement comes near it: for a million values it is 1.3e151.
    """
    return float(np.sqrt(np.finfo(np.float64).max / max(n, 1)))


def overflowing(values: np.ndarray) -> np.ndarray:
    """A mask of the finite ``values`` (floats) whose magnitude exceeds :func:`overflow_limit` of their count."""
    finite = np.isfinite(values)
    return finite & (np.abs(np.where(finite, values, 0.0)) > overflow_limit(int(finite.sum())))
