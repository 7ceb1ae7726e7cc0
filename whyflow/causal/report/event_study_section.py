"""The notebook's event-time figure: a staggered-adoption headline's coefficients by period relative to adoption.

Shown only when the headline is Gardner's two-stage estimate with its event-time coefficients
(``details.extras['event_study']``, :mod:`whyflow.causal.estimation.event_study`); the figure cell reads
them from the state, and the pre-trend test's result is put in words here, beside it, with the level
the critique applies (:data:`whyflow.causal.review.doubts.PRETREND_P`).
"""

from __future__ import annotations

import math
from typing import Any

from whyflow.causal.review.doubts import PRETREND_P
from whyflow.causal.state import TreatmentEffectResult

__all__ = ["event_study_context"]


def event_study_context(index: int, headline: TreatmentEffectResult | None) -> dict[str, Any] | None:
    """What the event-time section shows for the headline at ``treatment_effects[index]``; None without one."""
    if headline is None or headline.details.family != "did":
        return None
    study = headline.details.extras.get("event_study")
    if not isinstance(study, dict) or not study.get("coefficients"):
        return None
    coefficients = study["coefficients"]
    pooled = [int(e) for e in study.get("pooled_ends") or []]
    p = _p(study)
    return {
        "index": index,
        "n_coefficients": len(coefficients),
        "n_leads": sum(1 for c in coefficients if c["event_time"] < 0),
        "pretrend": _pretrend_words(study),
        "pretrend_rejects": p is not None and p < PRETREND_P,
        "pooled": ", ".join(f"{e:+d}" for e in pooled),
    }


def _p(study: dict[str, Any]) -> float | None:
    """The pre-trend test's p-value, None when it was not computed."""
    p = study.get("pretrend_p")
    return float(p) if isinstance(p, (int, float)) and math.isfinite(p) else None


def _pretrend_words(study: dict[str, Any]) -> str:
    """The joint pre-trend test's result in a sentence or two."""
    p, df = _p(study), study.get("pretrend_df")
    if p is None:
        why = study.get("pretrend_skipped") or "the test could not be computed"
        return f"Pre-trends are not tested: {str(why).rstrip('.')}."
    test = f"Wald χ² = {float(study['pretrend_wald']):.3g} on {df} degrees of freedom, p = {p:.3g}"
    if p < PRETREND_P:
        return (
            f"**Pre-trends: rejected.** The {df} coefficients before adoption are jointly non-zero ({test}, below "
            f"{PRETREND_P:g}): the adopters were already drifting away from the comparison units before they were "
            "treated, so parallel trends are in doubt and the critique does not approve the answer."
        )
    return (
        f"**Pre-trends: not rejected.** The {df} coefficients before adoption are jointly indistinguishable from "
        f"zero ({test}). This is a failure to find a pre-trend, not proof of parallel trends: a small or slow "
        "drift can hide within the intervals."
    )
