"""The estimator registry: one entry per method, the only place a method is described.

An entry names the method's key (what ``effect_estimator``'s ``methods:`` option takes), its
display label, its family (:data:`whyflow.causal.estimates.Family`: what every consumer reads), what
it needs (a binary treatment, covariates, a declared design), when it runs by default, its rank
when the headline falls back on "the most credible method that was run", and the function that
fits it on a :class:`~whyflow.causal.estimation.pair_setup.PairSetup`.

Adding an estimator is two steps: write its fit function (returning an
:class:`~whyflow.causal.estimation.backdoor.Estimate`) and add one :class:`EstimatorSpec` to ``_SPECS``.
The menu, the ``methods:`` validation, the critique, sensitivity analysis and the notebook pick
it up from here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypedDict

from whyflow.causal.estimates import Family

if TYPE_CHECKING:
    from whyflow.causal.estimation.backdoor import Estimate
    from whyflow.causal.estimation.pair_setup import PairSetup

__all__ = ["Default", "EstimatorSpec", "REGISTRY", "METHOD_KEYS", "keys_where"]

Default = Literal["contrast", "backdoor", "backdoor_large_n", "randomised", "randomised_precision", "slope", "design"]
"""When a method runs without a pinned ``methods:`` list.

``contrast``: every binary or continuous treatment (an unadjusted contrast and regression
adjustment); ``backdoor``: a binary treatment with covariates and no declared design;
``backdoor_large_n``: the same when n >= META_MIN_N with >= 200 units per arm; ``randomised``:
an empty adjustment set; ``randomised_precision``: the same when pre-treatment covariates exist;
``slope``: a continuous treatment with covariates and no instrument or cutoff; ``design``: the
user declared the design of the same key.
"""


@dataclass(frozen=True)
class EstimatorSpec:
    """One estimator: key, label, family, needs, default, headline rank and fit function."""

    key: str
    label: str
    family: Family
    fit: Callable[[PairSetup], Estimate]
    default: Default
    needs_binary: bool = False
    needs_covariates: bool = False
    headline_rank: int = 100
    """Lower is more credible when the headline rule falls back on rank (rules 1-5 come first)."""
    recompute: Literal["ols", "ipw", "aipw"] | None = None
    """How the notebook reproduces the estimate in a short cell (None: shown from the state only)."""

    @property
    def is_design(self) -> bool:
        """A design estimator: runs only when the user declared the design of the same key."""
        return self.default == "design"


# ---- fit functions: one per method, each from a PairSetup -----------------------------------


def _naive(s: PairSetup) -> Estimate:
    from whyflow.causal.estimation import backdoor as E
    from whyflow.causal.estimation import dose

    p = s.prep
    return E.naive_difference(p.y, p.t) if s.binary else dose.slope_ols(p.y, p.t, s.covariates, *s.names, naive=True)


def _ols(s: PairSetup) -> Estimate:
    from whyflow.causal.estimation import backdoor as E
    from whyflow.causal.estimation import dose

    if not s.binary:
        return dose.slope_ols(s.prep.y, s.prep.t, s.covariates, *s.names)
    clusters = s.clusters()
    if clusters is not None:
        from whyflow.causal.estimation.clustered import ols_clustered

        return ols_clustered(s.covariates, s.prep.t, s.prep.y, clusters[1], clusters[0])
    return E.ols_adjustment(s.covariates, s.prep.t, s.prep.y, s.ols_design())  # reads no propensity


def _diff_means(s: PairSetup) -> Estimate:
    from whyflow.causal.estimation.backdoor import diff_in_means

    return diff_in_means(s.prep.y, s.prep.t)


def _lin(s: PairSetup) -> Estimate:
    from whyflow.causal.estimation.backdoor import lin_adjusted
    from whyflow.core.errors import AgentError

    if s.precision is None or not s.precision.shape[1]:
        raise AgentError("no pre-treatment covariate is available for precision")
    return lin_adjusted(s.prep.y, s.prep.t, s.precision)


def _dml_plm(s: PairSetup) -> Estimate:
    from whyflow.causal.estimation.dose import plm_dml

    return plm_dml(s.prep.y, s.prep.t, s.covariates, s.seed, s.folds, *s.names)


def _ipw(s: PairSetup) -> Estimate:
    from whyflow.causal.estimation.backdoor import ipw_hajek

    return ipw_hajek(s.prep.y, s.prep.t, s.scores, s.estimand)


def _aipw(s: PairSetup) -> Estimate:
    from whyflow.causal.estimation.backdoor import aipw

    return aipw(s.covariates, s.prep.y, s.prep.t, s.scores, s.seed, s.estimand, nuisance=s.nuisance)


def _matching(s: PairSetup) -> Estimate:
    from whyflow.causal.estimation.backdoor import ps_matching

    return ps_matching(s.dowhy(), s.estimand, s.bootstrap, s.seed)


def _stratification(s: PairSetup) -> Estimate:
    from whyflow.causal.estimation.backdoor import ps_stratification

    return ps_stratification(s.dowhy(), s.estimand, s.bootstrap, s.seed)


def _meta(kind: str) -> Callable[[PairSetup], Estimate]:
    def fit(s: PairSetup) -> Estimate:
        from whyflow.causal.estimation.meta_learners import meta_learner

        return meta_learner(kind, s.covariates, s.prep.y, s.prep.t, s.scores, s.seed)

    return fit


def _dr_learner(s: PairSetup) -> Estimate:
    from whyflow.causal.estimation.meta_learners import dr_learner
    from whyflow.core.errors import AgentError

    scores = s.scores  # why the nuisance models are missing, when their fit failed
    if s.nuisance is None:
        raise AgentError("the DR-learner needs the cross-fitted nuisance models (a binary treatment with covariates)")
    return dr_learner(s.covariates, s.prep.y, s.prep.t, scores, s.nuisance, s.seed)


def _iv(s: PairSetup) -> Estimate:
    import pandas as pd

    from whyflow.causal.estimation.designs import iv_2sls
    from whyflow.core.errors import AgentError

    names = s.design["iv"].get("instruments") or [s.design["iv"]["instrument"]]
    for z in names:
        col = s.prep.frame[z]
        if not (pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col)):
            raise AgentError(f"instrument '{z}' is not numeric ({col.dtype}); give a numeric or 0/1 instrument column")
    if len(names) == 1:
        z = names[0]
        zs = s.prep.frame[z].astype(float).to_numpy()
        return iv_2sls(s.prep.y, s.prep.t, zs, s.covariates, z, s.treatment, s.clusters())
    zs = s.prep.frame[names].astype(float).to_numpy()
    return iv_2sls(s.prep.y, s.prep.t, zs, s.covariates, names, s.treatment, s.clusters())


def _did(s: PairSetup) -> Estimate:
    from whyflow.causal.estimation.designs import did_twfe

    d = s.design["did"]
    unit, time, rcs = d["unit_column"], d["time_column"], bool(d.get("cross_section"))
    if s.adjustment.recipe_choice is None or s.no_covariates:  # the recipe's DiD: unit and period effects only
        return did_twfe(s.frame, unit, time, s.treatment, s.outcome, s.cluster_column, cross_section=rcs)
    rows = s.frame.loc[s.prep.rows].reset_index(drop=True)  # stated controls: their complete rows, encoded
    return did_twfe(rows, unit, time, s.treatment, s.outcome, s.cluster_column, s.covariates, cross_section=rcs)


def _rdd(s: PairSetup) -> Estimate:
    import pandas as pd

    from whyflow.causal.estimation.designs import rdd_rdrobust
    from whyflow.core.errors import AgentError

    d = s.design["rdd"]
    col = s.prep.frame[d["running_variable"]]
    if not pd.api.types.is_numeric_dtype(col):
        raise AgentError(f"running variable '{d['running_variable']}' is not numeric ({col.dtype})")
    running = d["running_variable"]
    est = rdd_rdrobust(col.astype(float).to_numpy(), s.prep.y, s.prep.t, float(d["cutoff"]), running, s.clusters())
    if d.get("stated_fuzzy") and est.details["design"] == "sharp":
        est.details["stated_fuzzy"] = (
            f"--fuzzy was stated, but every row's take-up follows its side of the cutoff ({est.details['treated_side']}"
            " treated): the jump in take-up is 1 and the fuzzy form is the sharp one"
        )
    if s.adjustment.recipe_choice is not None and not s.no_covariates:
        est.details["controls_not_used"] = (
            "the discontinuity fit takes no covariates: the stated controls are not in it"
        )
    return est


class _Needs(TypedDict):
    needs_binary: bool
    needs_covariates: bool


_PS: _Needs = {"needs_binary": True, "needs_covariates": True}
"""What the propensity-score methods need: a binary treatment and covariates."""
_SPECS: tuple[EstimatorSpec, ...] = (
    EstimatorSpec("naive", "Naive difference", "naive", _naive, "contrast", headline_rank=200),
    EstimatorSpec(
        "ols", "Regression adjustment (OLS)", "regression", _ols, "contrast", headline_rank=10, recompute="ols"
    ),
    EstimatorSpec(
        "ipw", "Inverse probability weighting", "weighting", _ipw, "backdoor", **_PS, headline_rank=20, recompute="ipw"
    ),
    EstimatorSpec(
        "aipw", "AIPW (doubly robust)", "doubly_robust", _aipw, "backdoor", **_PS, headline_rank=30, recompute="aipw"
    ),
    EstimatorSpec("matching", "Propensity score matching", "matching", _matching, "backdoor", **_PS, headline_rank=40),
    EstimatorSpec(
        "stratification",
        "Propensity score stratification",
        "stratification",
        _stratification,
        "backdoor",
        **_PS,
        headline_rank=50,
    ),
    EstimatorSpec("s_learner", "S-learner", "meta", _meta("S"), "backdoor_large_n", **_PS, headline_rank=90),
    EstimatorSpec("t_learner", "T-learner", "meta", _meta("T"), "backdoor_large_n", **_PS, headline_rank=80),
    EstimatorSpec("x_learner", "X-learner", "meta", _meta("X"), "backdoor_large_n", **_PS, headline_rank=70),
    EstimatorSpec(
        "dr_learner", "DR-learner", "doubly_robust", _dr_learner, "backdoor_large_n", **_PS, headline_rank=60
    ),
    EstimatorSpec("diff_means", "Difference in means (Neyman)", "experiment", _diff_means, "randomised"),
    EstimatorSpec(
        "lin",
        "Covariate-adjusted difference (Lin 2013)",
        "regression",
        _lin,
        "randomised_precision",
        headline_rank=150,
    ),
    EstimatorSpec("dml_plm", "Partially linear DML (cross-fitted)", "doubly_robust", _dml_plm, "slope"),
    EstimatorSpec("iv", "Instrumental variables (2SLS)", "iv", _iv, "design"),
    EstimatorSpec("did", "Difference-in-differences", "did", _did, "design"),
    EstimatorSpec("rdd", "Regression discontinuity", "rdd", _rdd, "design"),
)

REGISTRY: dict[str, EstimatorSpec] = {s.key: s for s in _SPECS}
"""Method key -> its entry, in menu order."""
METHOD_KEYS: tuple[str, ...] = tuple(REGISTRY)
"""Every valid value of ``effect_estimator``'s ``methods:`` option."""


def keys_where(**conditions: object) -> tuple[str, ...]:
    """Keys of the entries whose attributes equal ``conditions`` (``keys_where(default="backdoor")``)."""
    return tuple(k for k, s in REGISTRY.items() if all(getattr(s, a) == v for a, v in conditions.items()))
