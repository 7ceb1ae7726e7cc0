"""The one way tests build fake estimates and sensitivity results: through the typed models.

A fake estimate takes its label and family from the estimator registry, so a test cannot use a
method name or a details key that production never writes (the typed models reject unknown
fields; anything estimator-specific goes into ``extras`` as production puts it).
"""

from __future__ import annotations

from typing import Any

from whyflow.causal.estimates import EstimateDetails, SensitivityDetails
from whyflow.causal.estimation.backdoor import normal_ci
from whyflow.causal.estimation.methods import REGISTRY
from whyflow.causal.state import SensitivityResult, TreatmentEffectResult

__all__ = ["make_estimate", "make_sensitivity"]

_FIELDS = frozenset(EstimateDetails.model_fields) - {"extras", "method_key", "family"}


def make_estimate(
    key: str = "ols",
    estimate: float = 1.0,
    std_error: float = 0.1,
    *,
    treatment: str = "treated",
    outcome: str = "outcome",
    round: int = 1,  # noqa: A002 - the details field's name
    headline: bool = False,
    estimand: str = "ATE",
    ci: tuple[float, float] | None = None,
    label: str | None = None,
    **details: Any,
) -> TreatmentEffectResult:
    """An estimate of registry method ``key`` (its label and family), with a normal 95% interval.

    ``details`` are :class:`EstimateDetails` fields (``adjustment_set=[...]``, ``trimmed=...``);
    any other keyword lands in ``extras``.
    """
    spec = REGISTRY[key]
    (lo, hi), p = normal_ci(estimate, std_error)
    if ci is not None:
        lo, hi = ci
    typed = {k: v for k, v in details.items() if k in _FIELDS}
    extras = {k: v for k, v in details.items() if k not in _FIELDS}
    return TreatmentEffectResult(
        method=label or spec.label,
        estimand=estimand,
        estimate=estimate,
        std_error=std_error,
        ci_lower=lo,
        ci_upper=hi,
        p_value=p,
        details=EstimateDetails(
            method_key=key, family=spec.family, round=round, headline=headline, extras=extras, **typed
        ),
        treatment_variable=treatment,
        outcome_variable=outcome,
    )


def make_sensitivity(
    kind: str,
    method: str,
    robustness_value: float,
    *,
    passed: bool | None = None,
    headline: bool = False,
    estimate_method: str | None = None,
    interpretation: str = "",
    **extras: Any,
) -> SensitivityResult:
    """A sensitivity result of ``kind`` (e_value, rosenbaum, refuter, unobserved) with ``extras``."""
    return SensitivityResult(
        method=method,
        robustness_value=robustness_value,
        interpretation=interpretation or f"{method}: {robustness_value}",
        details=SensitivityDetails(
            kind=kind,  # type: ignore[arg-type]
            passed=passed,
            headline=headline,
            estimate_method=estimate_method,
            extras=extras,
        ),
    )
