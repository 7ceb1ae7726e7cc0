"""The headline rule: which of a pair's estimates is the answer, and why, in words.

The rule is fixed, not a judgement per run: a declared design (IV, then RDD, then DiD) wins
because it does not rest on "no unmeasured confounding"; when the declared design could not be
estimated, the best remaining estimate is shown as NOT THE ANSWER. Otherwise the difference in
means headlines an empty adjustment set, a slope a non-binary treatment, AIPW a binary one with
adequate overlap (or a sample trimmed to common support), regression adjustment one with poor
overlap, and else the registry's most credible method that ran (its ``headline_rank``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from whyflow.causal.estimation.methods import REGISTRY

if TYPE_CHECKING:
    from whyflow.causal.diagnostics import PSDiagnostics
    from whyflow.causal.estimation.backdoor import Estimate
    from whyflow.causal.estimation.pair_setup import PairSetup

__all__ = ["choose_headline"]


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
        declared, failed = REGISTRY[missing[0]].label, setup.skipped.get(missing[0], "it did not run")
        return name, (
            f"NOT THE ANSWER: the design you declared ({declared}) could not be estimated ({failed}); "
            f"{estimates[name].method} is shown for reference only, it answers a different question. {why}"
        )
    return _backdoor_headline(setup, estimates, ps_diag)


def _backdoor_headline(
    setup: PairSetup, estimates: dict[str, Estimate], ps_diag: PSDiagnostics | None
) -> tuple[str, str]:
    """The headline among the estimators that assume every confounder is measured (rules 2-6).

    With a stated cluster column, regression adjustment (whose errors are clustered on it) comes first:
    an interval that treats clustered rows as independent is too narrow whatever the point estimate.
    """
    cluster = setup.cluster_column
    if cluster is not None and "ols" in estimates and estimates["ols"].details.get("clustered_by") == cluster:
        return "ols", (
            f"Regression adjustment headlines because its errors are clustered by {cluster} as stated (--cluster); "
            "the weighting and learner estimators here treat rows as independent."
        )
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
