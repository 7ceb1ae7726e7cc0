"""Which estimators a pair gets, which are skipped and why, and which one headlines.

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
    from whyflow.causal.diagnostics import PSDiagnostics
    from whyflow.causal.estimation.backdoor import Estimate
    from whyflow.causal.estimation.pair_setup import PairSetup

__all__ = ["METHODS", "PS_METHODS", "DESIGN_METHODS", "META_MIN_N", "default_methods", "choose_headline"]

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


def choose_headline(setup: PairSetup, estimates: dict[str, Estimate], ps_diag: PSDiagnostics | None) -> tuple[str, str]:
    """The headline method and why, by a fixed rule (see docs/agents.md and the module docs).

    1. A declared design (IV, then RDD, then DiD) wins: it does not rest on "no unmeasured
       confounding". 2. An empty adjustment set: the difference in means. 3. A continuous
       treatment: the partially linear DML slope, else the OLS slope. 4. AIPW when overlap is
       adequate (or the sample was trimmed to common support). 5. With poor overlap and no
       trimming, OLS. 6. Else the first available of OLS, IPW, matching, stratification, learners.
    """
    for kind in ("iv", "rdd", "did"):
        if kind in estimates:
            return (
                kind,
                f"{estimates[kind].method} headlines because the user declared that design; it identifies the effect "
                "without assuming all confounders are measured.",
            )
    missing = [k for k in ("iv", "rdd", "did") if k in setup.design]
    if missing:
        name, why = _backdoor_headline(setup, estimates, ps_diag)
        failed = setup.skipped.get(missing[0], "it did not run")
        return name, (
            f"NOT THE ANSWER: the design you declared ({METHODS[missing[0]]}) could not be estimated ({failed}); "
            f"{estimates[name].method} is shown for reference only, it answers a different question. {why}"
        )
    return _backdoor_headline(setup, estimates, ps_diag)


def _backdoor_headline(
    setup: PairSetup, estimates: dict[str, Estimate], ps_diag: PSDiagnostics | None
) -> tuple[str, str]:
    """The headline among the estimators that assume every confounder is measured (rules 2-6)."""
    if "diff_means" in estimates:
        extra = " Lin's covariate-adjusted difference is shown for precision." if "lin" in estimates else ""
        return "diff_means", (
            "The difference in means headlines: nothing needs adjusting for (an empty adjustment set, as in a "
            f"randomised experiment), so the comparison of the arms is the effect.{extra}"
        )
    if not setup.binary:
        for key in ("dml_plm", "ols"):
            if key in estimates:
                return key, (
                    f"{estimates[key].method} headlines: the treatment is not binary, so the effect is a slope "
                    f"({estimates[key].details.get('estimand_description', 'per unit of the treatment')})."
                )
    overlap_ok = bool((setup.overlap or {}).get("overlap_ok", True))
    if ps_diag is not None and ps_diag.treatment == setup.treatment and not setup.trim and not ps_diag.skipped:
        overlap_ok = overlap_ok and ps_diag.overlap_ok is not False
    agree = _agreement(estimates)
    if "aipw" in estimates and (overlap_ok or setup.trim):
        where = "on the trimmed common-support sample" if setup.trim else "and propensity overlap is adequate"
        return (
            "aipw",
            "AIPW headlines: it is doubly robust (consistent if either the propensity or the outcome model is right) "
            f"{where}. {agree}",
        )
    if not overlap_ok and "ols" in estimates:
        return "ols", (
            "Regression adjustment headlines because propensity overlap is poor: weighting estimators rest on a few "
            "extreme weights there, while OLS extrapolates linearly across the gap (trimming to common support is "
            f"advised). {agree}"
        )
    ranked = sorted((k for k in estimates if k in REGISTRY), key=lambda k: REGISTRY[k].headline_rank)
    if ranked:
        name = ranked[0]
        return name, f"{estimates[name].method} headlines as the most credible method that was run. {agree}"
    name = next(iter(estimates))
    return name, f"{estimates[name].method} is the only estimate."


def _agreement(estimates: dict[str, Estimate]) -> str:
    if "aipw" in estimates and "ols" in estimates:
        a, o = estimates["aipw"], estimates["ols"]
        gap = abs(a.estimate - o.estimate) / max(float(np.hypot(a.std_error, o.std_error)), 1e-12)
        verdict = "agree" if gap < 2 else "DISAGREE (check model specification and overlap)"
        return f"AIPW and OLS {verdict} ({gap:.1f} combined SEs apart)."
    return ""
