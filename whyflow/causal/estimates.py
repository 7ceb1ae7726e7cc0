"""Typed details of an estimate and of a sensitivity analysis: what agents hand each other.

Every estimate carries :class:`EstimateDetails`: its method key and ``family`` (what kind of
estimator it is), whether it headlines and why, the round, the adjustment set, trimming, the
propensity model, the standard-error method, the rows used, the critique changes applied, the
covariate columns dropped as collinear and (on a headline) its :class:`Stability` re-estimates;
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
    "StabilityCheck",
    "CommonSupportCheck",
    "FlexibleCheck",
    "Stability",
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


class StabilityCheck(BaseModel):
    """One re-estimate of a headline (:mod:`whyflow.causal.estimation.stability`), or why it was not made.

    A made check has ``estimate`` and ``std_error`` and says whether it ``moved`` the answer; a
    check that could not be made has only ``skipped``, its reason.
    """

    model_config = _CONFIG

    estimate: float | None = None
    std_error: float | None = None
    moved: bool = False
    skipped: str | None = None

    @model_validator(mode="after")
    def _made_or_skipped(self) -> StabilityCheck:
        made = self.estimate is not None and self.std_error is not None
        if self.skipped is None and not made:
            raise ValueError("a stability check needs estimate and std_error, or the reason it was skipped")
        if self.skipped is not None and (self.estimate is not None or self.moved):
            raise ValueError("a skipped stability check has no estimate and does not move the answer")
        return self


class CommonSupportCheck(StabilityCheck):
    """The headline re-estimated on the units with propensity in ``band``: how many were kept and dropped."""

    n_kept: int | None = None
    n_dropped: int | None = None
    band: tuple[float, float] | None = None


class FlexibleCheck(StabilityCheck):
    """The headline re-estimated with flexible nuisance models: the propensity and outcome models chosen."""

    propensity: str | None = None
    outcome: str | None = None


class Stability(BaseModel):
    """A backdoor headline's re-estimates on common support and with flexible nuisance models.

    A re-estimate that was not needed is ``None`` (nothing to trim, a boosted propensity already);
    ``skipped`` says why no re-estimate could be made at all.
    """

    model_config = _CONFIG

    common_support: CommonSupportCheck | None = None
    flexible: FlexibleCheck | None = None
    skipped: str | None = None

    def checks(self) -> dict[str, StabilityCheck]:
        """The re-estimates present, by name."""
        named: dict[str, StabilityCheck | None] = {"common_support": self.common_support, "flexible": self.flexible}
        return {name: c for name, c in named.items() if c is not None}


class EstimateDetails(BaseModel):
    """The typed details of one :class:`~whyflow.causal.state.TreatmentEffectResult`."""

    model_config = _CONFIG

    method_key: str
    family: Family
    headline: bool = False
    headline_reason: str | None = None
    round: int = 0
    adjustment_set: list[str] = []
    recipe_adjustment_set: list[str] | None = None
    """With ``--controls``: what the recipe would have adjusted for (``adjustment_set`` is what was stated)."""
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
    collinear_dropped: dict[str, str] = {}
    """Covariate columns left out of the design because they made it singular, each with why."""
    stability: Stability | None = None
    """A backdoor headline's re-estimates (``None`` on every other estimate, and where none applies)."""
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
