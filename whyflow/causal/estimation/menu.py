"""Which estimators a pair gets, and which are skipped and why.

The menu follows the design: a declared instrument, discontinuity or panel runs its design
estimator; an empty adjustment set (a randomised experiment) runs the difference in means and,
for precision, Lin's covariate-adjusted difference; a binary treatment with covariates runs
regression, weighting, doubly robust, matching and stratification (and meta-learners when n
allows); a continuous or multi-valued treatment gets slope estimates (regression adjustment and
the partially linear model by double machine learning). Every method left out is recorded in
``setup.skipped`` with its reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from whyflow.causal.estimation.methods import REGISTRY, keys_where

if TYPE_CHECKING:
    from whyflow.causal.estimation.pair_setup import PairSetup

__all__ = ["METHODS", "PS_METHODS", "DESIGN_METHODS", "META_MIN_N", "default_methods"]

METHODS: dict[str, str] = {key: spec.label for key, spec in REGISTRY.items()}
"""Method key -> display label, from the registry (``methods:`` takes these keys)."""
PS_METHODS = keys_where(needs_binary=True)
DESIGN_METHODS = keys_where(default="design")
META_MIN_N = 1000
NEEDS_COVARIATES = (
    "needs covariates and the adjustment set is empty (nothing to weight, match or stratify on); the difference in "
    "means identifies the effect when nothing confounds the treatment, as in a randomised experiment"
)


def _skip(setup: PairSetup, names: tuple[str, ...] | list[str], reason: str) -> None:
    for name in names:
        setup.skipped.setdefault(name, reason)


def default_methods(setup: PairSetup, codes: list[str]) -> tuple[list[str], list[str]]:
    """Methods chosen from the data and design, and why each family is in or out."""
    designs = [k for k in DESIGN_METHODS if k in setup.design]
    why: list[str] = []
    for kind, label in (("iv", "an instrument"), ("did", "a panel (unit and time columns)"), ("rdd", "a cutoff")):
        if kind in designs:
            why.append(f"{METHODS[kind]}: the user declared {label}.")
    if not designs:
        why.append("No instrument, panel or discontinuity declared: design-based estimators not run.")
    if not setup.binary:
        methods = _continuous(setup, designs, why)
    elif setup.no_covariates and not designs:
        methods = _randomised(setup, why)
    else:
        methods = [*keys_where(default="contrast"), *designs]
        why.insert(0, "Naive difference reported for contrast (it ignores confounding).")
        if designs:
            why.append(
                "A design was declared, so the propensity methods (which assume every confounder is measured) are not "
                "run by default; pin them with `methods` to compare."
            )
            _skip(setup, PS_METHODS, "not run by default under a declared design (pin it with `methods` to compare)")
        else:
            methods += _backdoor(setup, why)
    if "add_doubly_robust" in codes and "aipw" not in methods and setup.binary and not setup.no_covariates:
        methods.append("aipw")
        setup.skipped.pop("aipw", None)
    return methods, why


def _backdoor(setup: PairSetup, why: list[str]) -> list[str]:
    n, t = len(setup.prep.y), setup.prep.t
    methods = list(keys_where(default="backdoor"))
    why.append("Binary treatment: propensity methods (IPW, AIPW, matching, stratification) run.")
    if n >= META_MIN_N and min(t.sum(), len(t) - t.sum()) >= 200:
        methods += keys_where(default="backdoor_large_n")
        why.append(f"n = {n} with >= 200 units per arm: meta-learners (S, T, X, DR) run for effect heterogeneity.")
    else:
        why.append(f"n = {n} (or an arm under 200 units): meta-learners skipped, too few units for stable CATEs.")
        _skip(setup, keys_where(default="backdoor_large_n"), f"n = {n} or an arm under 200 units")
    return methods


def _randomised(setup: PairSetup, why: list[str]) -> list[str]:
    methods = list(keys_where(default="randomised"))
    why.append(
        "The adjustment set is empty: the difference in means (Neyman standard error) is the estimate, as in a "
        "randomised experiment."
    )
    if setup.precision is not None and setup.precision.shape[1]:
        methods += keys_where(default="randomised_precision")
        why.append("Lin's covariate-adjusted difference (interacted regression, HC2) is added for precision.")
    else:
        setup.skipped["lin"] = "no pre-treatment covariate is available for precision"
    setup.skipped["naive"] = "with an empty adjustment set the difference in means is the estimate, not a contrast"
    _skip(setup, ["ols", *PS_METHODS], NEEDS_COVARIATES)
    return methods


def _continuous(setup: PairSetup, designs: list[str], why: list[str]) -> list[str]:
    levels = len(np.unique(setup.prep.t))
    why.append(
        f"'{setup.treatment}' takes {levels} values: effects are slopes (change in {setup.outcome} per unit of "
        f"{setup.treatment}); the propensity methods need a binary treatment and are skipped."
    )
    _skip(setup, PS_METHODS, f"needs a binary treatment ('{setup.treatment}' takes {levels} values)")
    methods = [*keys_where(default="contrast"), *designs]
    if setup.no_covariates:
        setup.skipped["dml_plm"] = "no covariates: the partially linear model reduces to the unadjusted slope"
    elif "iv" not in designs and "rdd" not in designs:
        methods += keys_where(default="slope")
        why.append(
            "Partially linear DML (cross-fitted, learners chosen by CV loss) lets the covariates act in any form."
        )
    return methods
