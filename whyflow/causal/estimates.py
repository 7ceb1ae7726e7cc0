"""Typed details of an estimate and of a sensitivity analysis: what agents hand each other.

Every estimate carries :class:`EstimateDetails`: its method key and ``family`` (what kind of
estimator it is), whether it headlines and why, the round, the adjustment set, trimming, the
propensity model, the standard-error method, the rows used and the critique changes applied;
whatever else an estimator reports goes into ``extras``. Consumers read ``family`` — never a
display label — so a new estimator labelled "Overlap weighting" or "TMLE" is classed by its
registry entry, not by a regular expression on its name.

States written before these models existed hold plain dicts: the ``before`` validators move the
known keys into fields and everything else into ``extras``, and derive a missing family from
the method key or label (the one place a label is ever read), so old jobs still resume.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

__all__ = [
    "FAMILIES",
    "Family",
    "Trimming",
    "EstimateDetails",
    "SensitivityKind",
    "SensitivityDetails",
    "family_of_legacy",
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

    @model_validator(mode="before")
    @classmethod
    def _legacy(cls, data: Any) -> Any:
        """Read a plain dict from an older state: unknown keys into ``extras``, family derived."""
        if not isinstance(data, dict):
            return data
        out = _known_and_extras(data, set(cls.model_fields))
        extras = out["extras"]
        if "method_key" not in out:
            out["method_key"] = str(extras.get("method") or "unknown")
        if "family" not in out:
            naive = extras.pop("naive", None)
            out["family"] = "naive" if naive is True else family_of_legacy(str(out["method_key"]))
        else:
            extras.pop("naive", None)
        return out


def _known_and_extras(data: dict[str, Any], known: set[str]) -> dict[str, Any]:
    """A details dict split into the model's fields and ``extras`` (every other key, merged in)."""
    out = {k: v for k, v in data.items() if k in known}
    out["extras"] = {**(out.get("extras") or {}), **{k: v for k, v in data.items() if k not in known}}
    return out


def family_of_legacy(name: str) -> str:
    """The family of an estimate saved without one, from its method key or label (old states only).

    New estimates always carry the family of their registry entry (``whyflow.causal.estimation.methods``).
    """
    for pattern, family in _LEGACY:
        if pattern.search(name):
            return family
    return "regression"


_LEGACY: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"naive|unadjusted", re.I), "naive"),
    (re.compile(r"diff_means|difference.in.means", re.I), "experiment"),
    (re.compile(r"^iv$|instrument|2sls|two.stage", re.I), "iv"),
    (re.compile(r"discontinuity|rdd", re.I), "rdd"),
    (re.compile(r"^did$|difference.in.difference|twfe", re.I), "did"),
    (re.compile(r"aipw|doubly|dr.?learner|tmle|dml", re.I), "doubly_robust"),
    (re.compile(r"weight|ipw", re.I), "weighting"),
    (re.compile(r"match", re.I), "matching"),
    (re.compile(r"stratif", re.I), "stratification"),
    (re.compile(r"learner", re.I), "meta"),
)


SensitivityKind = Literal["e_value", "rosenbaum", "refuter", "unobserved", "other"]


class SensitivityDetails(BaseModel):
    """The typed details of one :class:`~whyflow.causal.state.SensitivityResult`.

    ``kind`` says what analysis it is; ``passed`` is set for refuters (``None`` otherwise);
    ``estimate_method`` and ``headline`` name the estimate it is about; the rest is in ``extras``.
    """

    model_config = _CONFIG

    kind: SensitivityKind = "other"
    passed: bool | None = None
    estimate_method: str | None = None
    headline: bool = False
    extras: dict[str, Any] = {}

    @model_validator(mode="before")
    @classmethod
    def _legacy(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        out = _known_and_extras(data, set(cls.model_fields))
        if out.get("kind") not in SensitivityKind.__args__:  # type: ignore[attr-defined]
            out["kind"] = "unobserved" if out.get("kind") == "unobserved_common_cause" else "other"
        return out
