"""Typed records of three analysis steps: propensity diagnostics, confounder discovery, data repairs.

:class:`PSDiagnostics` is what ``ps_diagnostics`` writes (``AnalysisState.ps_diagnostics``),
:class:`ConfounderDiscovery` what ``confounder_discovery`` writes and :data:`DataRepairEntry` one
entry of ``data_repairs`` (a failed expectation, a repair, or a check still failing after them).

Every record serialises to exactly the keys its writer set, in the order it set them
(:class:`Record`): a skipped diagnosis holds five keys, not every field with a default, so
``state.json`` and the report built from these records read as they did when they were dicts,
and a ``state.json`` written before these models existed still loads. This module imports nothing from
:mod:`whyflow.causal.state` (which imports it).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    ConfigDict,
    Field,
)

from whyflow.causal.records import Record
from whyflow.core.job import JOB_CONFIG

__all__ = [
    "AdjustmentDecision",
    "ArmShares",
    "ArmSizes",
    "CompleteCase",
    "ConfounderDiscovery",
    "DataRepairEntry",
    "ExpectationFailure",
    "Identification",
    "LeftOutColumn",
    "MoveCarrier",
    "PSDiagnostics",
    "PropensityPlots",
    "PropensityRange",
    "RandomisationCheck",
    "RepairAction",
    "SmdPair",
    "TrimApplied",
    "TrimSuggestion",
    "Unrepaired",
    "WithWithout",
]


_ALIASED = ConfigDict(**{**JOB_CONFIG, "validate_by_name": True, "validate_by_alias": True, "serialize_by_alias": True})


# ---- propensity-score diagnostics ------------------------------------------------------------------


class PropensityRange(Record):
    """The smallest and largest propensity score in each arm."""

    treated: list[float]
    """``[min, max]`` among the treated."""
    control: list[float]
    """``[min, max]`` among the controls."""


class ArmShares(Record):
    """Shares of units outside common support, by arm and overall."""

    treated: float
    control: float
    overall: float


class TrimSuggestion(Record):
    """The Crump et al. (2009) trimming rule's band and what it would drop."""

    lower: float
    upper: float
    n_dropped: int
    reason: str
    """The rule in words (or that no trimming is needed)."""


class TrimApplied(Record):
    """The trimming a critique round applied: the band kept and the units dropped."""

    lower: float
    upper: float
    n_dropped: int


class SmdPair(Record):
    """One covariate's standardised mean difference before and after inverse-probability weighting."""

    smd_before: float
    smd_after: float


class ArmSizes(Record):
    """Kish effective sample size per arm after weighting."""

    treated: float
    control: float


class PropensityPlots(Record):
    """Paths of the two figures (none when there was nothing to plot)."""

    overlap: str | None = None
    """Histogram of the propensity score by arm."""
    love_plot: str | None = None
    """|SMD| per covariate before and after weighting."""


class AdjustmentDecision(Record):
    """The pair's adjustment decision; the effect estimator adopts it for the same pair."""

    covariates: list[str]
    excluded: dict[str, str]
    """Column -> why it is not adjusted for."""
    source: str
    """Where the set came from (confounder discovery, the profile, ...)."""
    added: list[str]
    """Covariates added by widening the set."""
    caveat: str
    """What to keep in mind about the set ("" when nothing)."""
    widened: bool
    """True when the critique asked to widen the set."""
    recipe_choice: list[str] | None = None
    """The set the recipe would have chosen, when the analyst stated the controls (``--controls``)."""


class PSDiagnostics(Record):
    """Propensity model, overlap, trimming, balance and effective sample sizes of the primary pair.

    A skipped diagnosis (a declared design, a non-binary treatment) holds only ``treatment``,
    ``outcome``, ``skipped``, ``covariates`` and ``changes``; readers check ``skipped`` first.
    """

    treatment: str | None = None
    outcome: str | None = None
    model: str | None = None
    """The propensity learner ("logistic", "gbm", ...)."""
    model_detail: str | None = None
    """The learner in words (trees, folds, regularisation)."""
    model_cv_loss: dict[str, float] | None = None
    """Learner -> cross-validated log loss."""
    model_choice: str | None = None
    """Why this learner: pinned by the recipe or chosen by loss."""
    covariates: list[str] = []
    """Columns of the propensity model (encoded dummies included)."""
    excluded: dict[str, str] | None = None
    """Column -> why it is not adjusted for."""
    adjustment: AdjustmentDecision | None = None
    auc: float | None = None
    """AUC of the propensity score for the treatment (None when an arm is empty)."""
    propensity_range: PropensityRange | None = None
    common_support: list[float] | None = None
    """``[lower, upper]`` of the min-max common support."""
    outside_support: ArmShares | None = None
    extreme_share: float | None = None
    """Share of scores below 0.02 or above 0.98."""
    overlap_ok: bool | None = None
    """Overlap adequate: <= 10% outside support and <= 10% extreme scores."""
    trim_suggestion: TrimSuggestion | None = None
    balance: dict[str, SmdPair] | None = None
    """Covariate -> SMD before and after weighting."""
    max_smd_before: float | None = None
    max_smd_after: float | None = None
    balance_ok: bool | None = None
    """Largest |SMD| after weighting within 0.1."""
    ess: ArmSizes | None = None
    trimmed: bool | None = None
    """True when this round's diagnostics describe a trimmed sample."""
    trim_applied: TrimApplied | None = None
    n_used: int | None = None
    """Units the diagnostics used (after trimming)."""
    plots: PropensityPlots | None = None
    changes: list[str] = []
    """What this round changed because of the critique."""
    skipped: str | None = None
    """Why the diagnostics do not apply (set only on a skip)."""
    note: str | None = None
    """A remark on a degenerate case (no covariates to adjust for)."""


# ---- confounder discovery ---------------------------------------------------------------------------


class Identification(Record):
    """How the adjustment set is justified."""

    method: str
    identified: bool
    """False when the set is assumed from data associations, not derived from a graph."""
    estimand: str


class _TwoFits(Record):
    """The treatment's effect fitted twice (OLS, HC1 errors): ``with`` something and ``without`` it."""

    model_config = _ALIASED

    with_: float = Field(alias="with")
    se_with: float
    without: float
    se_without: float


class WithWithout(_TwoFits):
    """The effect with and without one doubtful variable in the adjustment set."""

    shift_in_se: float
    """|with - without| in units of the larger standard error."""


class CompleteCase(_TwoFits):
    """An imputed confounder's estimate on all rows (``with``) and on the rows where it was measured."""

    n_complete: int
    share_imputed: float


class LeftOutColumn(Record):
    """One column left out of the adjustment set, its role and why."""

    column: str
    role: str
    reason: str


class MoveCarrier(Record):
    """A column the randomised-treatment check names as carrying the move."""

    column: str
    role: str
    reason: str
    leave_out: bool


class RandomisationCheck(Record):
    """The randomised-treatment check (``whyflow.causal.discovery.randomised_move``)."""

    applies: bool
    why: str
    unadjusted: float
    adjusted: float
    se_adjusted: float
    carriers: list[MoveCarrier]
    resolved: bool
    """False when the move stays after the carriers are out."""


class ConfounderDiscovery(Record):
    """The adjustment set of the primary pair with a reason for every column kept, left out or doubted."""

    treatment: str | None = None
    outcome: str | None = None
    adjustment_set: list[str] = []
    rationale: dict[str, str] = {}
    """Adjusted column -> why."""
    excluded: dict[str, str] = {}
    """Column left out -> why."""
    mediators: list[str] = []
    colliders: list[str] = []
    descendants: list[str] = []
    derived_from_treatment: list[str] = []
    instruments: list[str] = []
    instrument_like: list[str] = []
    identification: Identification | None = None
    data_associated: list[str] = []
    """Columns associated with both the treatment and the outcome."""
    doubtful: dict[str, str] = {}
    """Column adjusted or excluded on weak evidence -> why (the critique reads it)."""
    doubtful_sensitivity: dict[str, WithWithout] = {}
    policy: str | None = None
    """The exclusion policy in words."""
    column_roles: list[LeftOutColumn] = []
    """Every column left out and why."""
    randomisation_check: RandomisationCheck | None = None
    complete_case: dict[str, CompleteCase] = {}
    """Imputed confounder -> its complete-case check."""
    recipe_adjustment_set: list[str] | None = None
    """With ``--controls``: the set the recipe chose on its own (``adjustment_set`` holds the stated one)."""


# ---- data repairs ------------------------------------------------------------------------------------


class ExpectationFailure(Record):
    """A Great Expectations check the input data failed."""

    kind: Literal["expectation"]
    expectation: str
    column: str | None
    """None for table-level checks (duplicate rows)."""
    success: bool
    unexpected_count: int
    detail: str
    repaired: bool | None = None
    """Whether the repairs fixed it (set once they ran)."""
    kept: str | None = None
    """Why the values were kept as they are (outliers are reported, not changed)."""


class RepairAction(Record):
    """One repair applied to the data, with counts before and after."""

    kind: Literal["repair"]
    column: str | None
    issue: str
    action: str
    n_before: int
    n_after: int
    detail: str


class Unrepaired(Record):
    """The expectations of one column still failing after the repairs."""

    kind: Literal["unrepaired"]
    column: str | None
    expectations: list[str]
    detail: str


DataRepairEntry = Annotated[ExpectationFailure | RepairAction | Unrepaired, Field(discriminator="kind")]
"""One ``data_repairs`` entry."""
