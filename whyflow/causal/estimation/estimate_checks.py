"""The numbers an estimator may hand on: finite, with an interval of real width, on the outcome's scale.

Why: a broken fit still returns numbers. A singular design gives an OLS "effect" of 5.8 × 10¹¹;
a DiD clustered on two groups gives a 95% interval 4 × 10⁻⁹ wide; a solver that diverged gives
NaN. None of these is an estimate, and printed they read as one. Every estimate passes
:func:`check_estimate` before it becomes a result (``run_method`` calls it): one that fails becomes
a failed estimator with its reason, like any other estimator that could not run.

The scale is the outcome's range, per unit of the treatment's standard deviation when the
treatment is a dose (a slope). An effect or an interval width more than :data:`OFF_SCALE` times
that is no estimate, and neither is an interval narrower than :data:`ZERO_WIDTH` of it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from whyflow.core.errors import AgentError

__all__ = ["OFF_SCALE", "ZERO_WIDTH", "BrokenEstimate", "broken_reason", "check_estimate", "effect_scale"]

OFF_SCALE = 1e4
"""An effect (or interval width) this many times the outcome's range or more is off the outcome's scale."""
ZERO_WIDTH = 1e-8
"""An interval narrower than this share of the outcome's scale (and of the estimate) has zero width."""


class BrokenEstimate(AgentError):
    """An estimator returned numbers that are not an estimate (non-finite, zero or absurd width, off scale)."""


def effect_scale(y: np.ndarray, t: np.ndarray, binary: bool) -> float:
    """The outcome's range (per standard deviation of a dose treatment); 0 when it cannot be read."""
    yv = np.asarray(y, dtype=float)
    yv = yv[np.isfinite(yv)]
    if yv.size < 2:
        return 0.0
    span = float(yv.max() - yv.min())
    if binary:
        return span
    tv = np.asarray(t, dtype=float)
    sd = float(np.nanstd(tv)) if tv.size > 1 else 0.0
    return span / sd if sd > 0 else 0.0


def broken_reason(estimate: float, std_error: float, ci: tuple[float, float], scale: float) -> str:
    """Why these numbers are not an estimate ("" when they are)."""
    values = {"estimate": estimate, "standard error": std_error, "lower limit": ci[0], "upper limit": ci[1]}
    bad = [k for k, v in values.items() if not math.isfinite(float(v))]
    if bad:
        return f"not finite ({', '.join(bad)})"
    width = float(ci[1] - ci[0])
    if scale > 0 and abs(estimate) >= OFF_SCALE * scale:
        return f"the effect {estimate:.3g} is off the outcome's scale (range {scale:.3g}): a singular or diverged fit"
    if scale > 0 and width >= OFF_SCALE * scale:
        return f"the 95% interval is {width:.3g} wide against an outcome range of {scale:.3g}: no information"
    if width <= ZERO_WIDTH * max(scale, abs(estimate)) or std_error <= 0:
        return (
            f"the 95% interval has zero width ({width:.2g}): its standard error is not credible (too few clusters, "
            "or an outcome that the design determines exactly)"
        )
    return ""


def check_estimate(label: str, est: Any, y: np.ndarray, t: np.ndarray, binary: bool) -> None:
    """Raise :class:`BrokenEstimate` naming ``label`` when ``est`` (an ``Estimate``) is not an estimate."""
    why = broken_reason(est.estimate, est.std_error, est.ci, effect_scale(y, t, binary))
    if why:
        raise BrokenEstimate(f"{label} gave no usable estimate: {why}")
