"""Where an observational answer breaks: the headline re-estimated on common support and with flexible nuisances.

Why: an answer that rests on units with extreme propensity (the job-training comparison against
survey controls, approved at -0.25 where the experiment gives 1.79), or on a linear nuisance
model where confounding is nonlinear, moves when those are taken away, and the estimators can
still agree among themselves. Before the critique approves a backdoor headline it reads two
re-estimates, both AIPW on the pair's rows:

* ``common_support``: on the units with propensity in [0.1, 0.9] (Crump et al.'s rule), with
  the same cross-fitted nuisance predictions;
* ``flexible``: with the propensity refitted by gradient boosting and the outcome models re-chosen
  by cross-validated loss (when the headline's propensity was not boosting already).

A re-estimate *moves* the answer when it differs from the headline by more than the headline's
standard error and by more than the sampling noise of the difference itself (1.96 times
sqrt(|SE_re² - SE_head²|), the spread of a nested subsample's estimate around the full one), so
a trimmed subsample's own noise is not read as fragility.
"""

from __future__ import annotations

import math

import numpy as np

from whyflow.causal.estimates import CommonSupportCheck, FlexibleCheck, Stability
from whyflow.causal.estimation.nuisance import Nuisance, aipw_scores, fit_binary
from whyflow.causal.estimation.pair_setup import PairSetup, covariates_of

__all__ = ["SUPPORT_BAND", "moved", "stability_checks"]

SUPPORT_BAND = (0.1, 0.9)
"""Propensity band of the common-support re-estimate."""
MIN_ARM = 20
"""Units needed in each arm of the common-support sample."""


def _aipw(nu: Nuisance, y: np.ndarray, t: np.ndarray, e: np.ndarray) -> tuple[float, float]:
    scores = aipw_scores(nu, y, t, e)
    return float(scores.mean()), float(scores.std(ddof=1) / math.sqrt(len(y)))


def moved(head_est: float, head_se: float, est: float, se: float) -> bool:
    """Whether a re-estimate moves the answer (see the module docstring)."""
    gap = abs(est - head_est)
    noise = 1.96 * math.sqrt(abs(se**2 - head_se**2))
    return gap > head_se and gap > noise


def _not_finite(est: float, se: float) -> str | None:
    """Why a re-estimate is no number to compare (``None`` when it is one)."""
    return None if math.isfinite(est) and math.isfinite(se) else f"the re-estimate is not finite ({est}, SE {se})"


def _common_support(setup: PairSetup, nu: Nuisance, head_est: float, head_se: float) -> CommonSupportCheck | None:
    """AIPW on the units with propensity inside :data:`SUPPORT_BAND` (``None`` when none is outside it)."""
    y, t, e = setup.prep.y, setup.prep.t.astype(float), np.asarray(setup.ps, dtype=float)
    lo, hi = SUPPORT_BAND
    keep = (e >= lo) & (e <= hi)
    n_drop = int((~keep).sum())
    if not n_drop:
        return None
    if min(int(t[keep].sum()), int((1 - t[keep]).sum())) < MIN_ARM:
        return CommonSupportCheck(skipped=f"fewer than {MIN_ARM} units of an arm have propensity in [{lo}, {hi}]")
    assert nu.mu1 is not None and nu.mu0 is not None
    sub = Nuisance(nu.folds, e=e[keep], mu1=nu.mu1[keep], mu0=nu.mu0[keep])
    est, se = _aipw(sub, y[keep], t[keep], e[keep])
    why = _not_finite(est, se)
    if why:
        return CommonSupportCheck(skipped=why)
    return CommonSupportCheck(
        estimate=est,
        std_error=se,
        n_kept=int(keep.sum()),
        n_dropped=n_drop,
        band=(lo, hi),
        moved=moved(head_est, head_se, est, se),
    )


def _flexible(setup: PairSetup, head_est: float, head_se: float) -> FlexibleCheck:
    """AIPW with a boosted propensity and outcome models re-chosen by cross-validated loss."""
    y, t = setup.prep.y, setup.prep.t.astype(float)
    flex = fit_binary(covariates_of(setup), t, y, setup.seed, setup.folds, "gbm", cache_dir=setup.cache_dir)
    assert flex.e is not None
    est, se = _aipw(flex, y, t, flex.e)
    why = _not_finite(est, se)
    if why:
        return FlexibleCheck(skipped=why)
    return FlexibleCheck(
        estimate=est,
        std_error=se,
        propensity=flex.choice.get("propensity"),
        outcome=flex.choice.get("outcome"),
        moved=moved(head_est, head_se, est, se),
    )


def stability_checks(setup: PairSetup, head_est: float, head_se: float) -> Stability | None:
    """The two re-estimates of a binary backdoor headline's pair, each with whether it moved the answer.

    ``None`` when the pair has no cross-fitted nuisances (no covariates, a dose, a design) or the
    estimand is not the ATE; a re-estimate that cannot be made carries its reason instead.
    """
    nu = setup.nuisance
    if not setup.binary or setup.no_covariates or nu is None or nu.mu1 is None or nu.mu0 is None:
        return None
    if setup.estimand != "ATE" or not (math.isfinite(head_est) and math.isfinite(head_se) and head_se > 0):
        return None
    flexible = None if nu.choice.get("propensity") == "gbm" else _flexible(setup, head_est, head_se)
    return Stability(common_support=_common_support(setup, nu, head_est, head_se), flexible=flexible)
