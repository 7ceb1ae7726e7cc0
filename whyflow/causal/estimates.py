"""Typed details of an estimate and of a sensitivity analysis: what agents hand each other.

Every estimate carries :class:`EstimateDetails`: its method key and ``family`` (what kind of
estimator it is), whether it headlines and why, the round, the adjustment set, trimming, the
propensity model, the standard-error method, the rows used and the critique changes applied;
whatever else an estimator reports goes into ``extras``. Consumers read ``family`` — never a
display label — so a new estimator labelled "Overlap weighting" or "TMLE" is classed by its
registry entry, not by a regular expression on its name.

A state written before these models existed is brought to this shape when it is read
(:mod:`whyflow.versions`); the models read only their own fields.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

__all__ = [
    "FAMILIES",
    "Family",
    "Trimming",
    "EstimateDetails",
    "SensitivityKind",
    "SensitivityDetails",
]

Family = Literal[
    "naive",
    "experiment",
    "regression",
    "weighting",
    "doubly_robust",
    "matching",
    "stratification",
    "meta",
    "iv",
    "did",
    "rdd",
]
"""What kind of estimator produced an estimate.

``naive``: an unadjusted contrast shown for comparison; ``experiment``: the difference in means
of a design with nothing to adjust for (a randomised experiment); ``regression``: outcome
regression (OLS, Lin's interacted regression, a dose-response slope); ``weighting``: inverse
probability weighting; ``doubly_robust``: AIPW, the DR-learner, cross-fitted partially linear
DML; ``matching`` and ``stratification`` on the propensity score; ``meta``: S/T/X-learner plug-in
averages; ``iv``, ``did``, ``rdd``: the design estimators.
"""
FAMILIES: tuple[str, ...] = Family.__args__  # type: ignore[attr-defined]
DESIGN_FAMILIES = frozenset({"iv", "did", "rdd"})

_CONFIG = ConfigDict(extra="forbid", validate_assignment=True, ser_json_inf_nan="constants")


class Trimming(BaseModel):
    """Trimming to common support: the propensity band kept and how many units left."""

    model_config = _CONFIG

    lower: float
    upper: float
    n_dropped: int
    n_kept: int


class EstimateDetails(BaseModel):
    """The typed details of one :class:`~whyflow.causal.state.TreatmentEffectResult`."""

    model_config = _CONFIG

    method_key: str
    family: Family
    headline: bool = False
    headline_reason: str | None = None
    round: int = 0
    adjustment_set: list[str] = []
    excluded_covariates: dict[str, str] = {}
    trimmed: Trimming | None = None
    population: str = ""
    propensity_model: str | None = None
    se_method: str | None = None
    n_used: int | None = None
    changes_applied: list[str] = []
    treated_value: Any = None
    credible: bool = True
    credible_reason: str | None = None
    shares_nuisance_with: str | None = None
    skipped_methods: dict[str, str] = {}
    unverified_assumption: str | None = None
    sample_rows: str | None = None
    """The analysed sample: a ``.npy`` file (in the run's data folder) of the data's row labels the
    estimate used, after dropping incomplete rows and any trimming; sensitivity analysis reads it."""
    extras: dict[str, Any] = {}

    @property
    def is_naive(self) -> bool:
        """An unadjusted contrast (shown for comparison, never evidence of an effect)."""
        return self.family == "naive"

    @property
    def is_design(self) -> bool:
        """An instrument, panel or discontinuity estimator."""
        return self.family in DESIGN_FAMILIES


SensitivityKind = Literal["e_value", "rosenbaum", "refuter", "unobserved", "other"]


class SensitivityDetails(BaseModel):
    """The typed details of one :class:`~whyflow.causal.state.SensitivityResult`.

    ``kind`` says what analysis it is; ``passed`` is set for refuters (``None`` otherwise);
    ``estimate_method`` and ``headline`` name the estimate it is about; an E-value result carries
    the E-values of the estimate and of the confidence limit closest to the null, and whether the
    interval crosses the null; the rest is in ``extras``.
    """

    model_config = _CONFIG

    kind: SensitivityKind = "other"
    passed: bool | None = None
    estimate_method: str | None = None
    headline: bool = False
    evalue_estimate: float | None = None
    evalue_ci: float | None = None
    ci_crosses_null: bool | None = None
    extras: dict[str, Any] = {}

    @model_validator(mode="after")
    def _evalue_complete(self) -> SensitivityDetails:
        if self.kind == "e_value" and None in (self.evalue_estimate, self.evalue_ci, self.ci_crosses_null):
            raise ValueError("an e_value result needs evalue_estimate, evalue_ci and ci_crosses_null")
        return self
