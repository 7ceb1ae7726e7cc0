"""Propensity scores, overlap, trimming and covariate balance (shared by the estimation agents).

Logistic regression is the default model (standardised covariates, light L2 penalty); the
"gbm" alternative is LightGBM, regularised (shallow trees, many samples per leaf, shrinkage)
and cross-fitted so no unit's score comes from a model that saw it. Scores are clipped to
[CLIP, 1 - CLIP] before they are used as weights, and the clipping is reported.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "CLIP",
    "OVERLAP_POOR_SHARE",
    "fit_propensity",
    "auc",
    "overlap_summary",
    "crump_bounds",
    "weights",
    "balance_table",
    "ess",
    "plot_overlap",
    "plot_love",
    "trim_mask",
    "diagnose",
    "SMD_OK",
]

CLIP = 0.01
SMD_OK = 0.1
OVERLAP_POOR_SHARE = 0.10
"""Share of units outside common support (or with extreme scores) above which overlap counts as poor."""


def logistic() -> Any:
    """The propensity model's logistic regression (scaled, nearly unpenalised); also a nuisance candidate."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(C=100.0, max_iter=2000))


def gbm_classifier(seed: int) -> Any:
    """The regularised LightGBM propensity model; also the nuisance models' boosted classifier."""
    from lightgbm import LGBMClassifier

    return LGBMClassifier(
        n_estimators=150,
        learning_rate=0.05,
        num_leaves=8,
        max_depth=3,
        min_child_samples=50,
        reg_lambda=1.0,
        subsample=0.8,
        subsample_freq=1,
        random_state=seed,
        n_jobs=1,
        verbose=-1,
    )


def fit_propensity(
    X: pd.DataFrame, t: np.ndarray, model: str = "logistic", seed: int = 0, folds: int = 5
) -> np.ndarray:
    """Cross-fitted P(T=1 | X) of the one learner ``model`` names, unclipped; a constant without covariates.

    "gbm" is LightGBM, any other name the logistic regression. Nothing is chosen and nothing is
    cached (a refit of a recorded model). The nuisance models' propensity, chosen among learners
    by held-out log loss and kept for the next agent, is
    :func:`whyflow.causal.estimation.nuisance.choose_propensity`; for a pinned "logistic" or "gbm"
    the two give the same scores (same folds, same fits).

    Each fold's rows are gathered from the covariate columns and the model fitted on that one
    copy (:class:`whyflow.causal.estimation.fold_rows.Rows`): no float copy of the whole table, no scaled copy.
    """
    from sklearn.model_selection import StratifiedKFold

    from whyflow.causal.estimation.fold_rows import Rows, fit_owned, predict_owned

    if X.shape[1] == 0:
        return np.full(len(t), float(np.mean(t)))
    rows = Rows(X)
    ps = np.empty(len(t))
    k = max(2, min(folds, int(min(t.sum(), (1 - t).sum()))))
    splitter = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
    for train, test in splitter.split(np.zeros((len(t), 1)), t):
        est = gbm_classifier(seed) if model == "gbm" else logistic()
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*feature names.*", category=UserWarning)
            fit_owned(est, rows.take(train), t[train])
            ps[test] = predict_owned(est, rows.take(test), proba=True)
    return ps


def auc(ps: np.ndarray, t: np.ndarray) -> float:
    """Area under the ROC curve of the propensity model (0.5 = no separation, 1 = perfect)."""
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(t, ps))


def crump_bounds(ps: np.ndarray) -> tuple[float, float]:
    """Crump, Hotz, Imbens & Mitnik (2009) optimal trimming: keep alpha <= e(x) <= 1 - alpha.

    alpha solves 1/(alpha(1-alpha)) = 2 E[1/(e(1-e)) | 1/(e(1-e)) <= 1/(alpha(1-alpha))]; when
    every unit satisfies the bound without trimming, alpha = 0 (nothing dropped).
    """
    e = np.clip(ps, 1e-6, 1 - 1e-6)
    g = np.sort(1.0 / (e * (1 - e)))
    if g[-1] <= 2 * g.mean():
        return 0.0, 1.0
    cum = np.cumsum(g) / np.arange(1, len(g) + 1)
    crossing = np.nonzero(g > 2 * cum)[0]
    k = int(crossing[0]) if crossing.size else len(g)
    gamma = 2 * cum[max(k - 1, 0)]
    alpha = 0.5 - np.sqrt(max(0.25 - 1.0 / gamma, 0.0))
    return float(alpha), float(1 - alpha)


def overlap_summary(ps: np.ndarray, t: np.ndarray) -> dict[str, Any]:
    """Propensity ranges, common support (min-max rule), shares outside it, a trim suggestion."""
    pt, pc = ps[t == 1], ps[t == 0]
    lo, hi = max(pt.min(), pc.min()), min(pt.max(), pc.max())
    outside = (ps < lo) | (ps > hi)
    extreme = float(np.mean((ps < 0.02) | (ps > 0.98)))
    a, b = crump_bounds(ps)
    keep = (ps >= a) & (ps <= b)
    overall = float(outside.mean())
    ok = overall <= OVERLAP_POOR_SHARE and extreme <= OVERLAP_POOR_SHARE and lo < hi
    return {
        "propensity_range": {
            "treated": [float(pt.min()), float(pt.max())],
            "control": [float(pc.min()), float(pc.max())],
        },
        "common_support": [float(lo), float(hi)],
        "outside_support": {
            "treated": float(outside[t == 1].mean()),
            "control": float(outside[t == 0].mean()),
            "overall": overall,
        },
        "extreme_share": extreme,
        "overlap_ok": bool(ok),
        "trim_suggestion": {
            "lower": round(a, 4),
            "upper": round(b, 4),
            "n_dropped": int((~keep).sum()),
            "reason": (
                "Crump et al. (2009) rule: drop units whose propensity lies outside "
                f"[{a:.3f}, {b:.3f}], which minimises the variance of the weighted estimate"
                if a > 0
                else "Crump et al. (2009) rule: no trimming needed (no unit has an extreme propensity)"
            ),
        },
    }


def weights(ps: np.ndarray, t: np.ndarray, estimand: str = "ATE") -> np.ndarray:
    """Inverse-probability weights on clipped scores: ATE 1/e, 1/(1-e); ATT 1, e/(1-e)."""
    e = np.clip(ps, CLIP, 1 - CLIP)
    if estimand == "ATT":
        return np.where(t == 1, 1.0, e / (1 - e))
    return np.where(t == 1, 1.0 / e, 1.0 / (1 - e))


def _wmean(x: np.ndarray, w: np.ndarray) -> float:
    return float(np.average(x, weights=w))


def balance_table(X: pd.DataFrame, t: np.ndarray, w: np.ndarray) -> dict[str, dict[str, float]]:
    """Standardised mean differences before and after weighting (pooled unweighted SD)."""
    out: dict[str, dict[str, float]] = {}
    treated, control = t == 1, t == 0  # the masks and the arms' weights once, not four times a column
    w1, w0 = w[treated], w[control]
    for col in X.columns:
        x = X[col].to_numpy(dtype=float)
        x1, x0 = x[treated], x[control]
        sd = np.sqrt((x1.var() + x0.var()) / 2) or 1.0
        before = (x1.mean() - x0.mean()) / sd
        after = (_wmean(x1, w1) - _wmean(x0, w0)) / sd
        out[str(col)] = {"smd_before": round(float(before), 4), "smd_after": round(float(after), 4)}
    return out


def ess(w: np.ndarray, t: np.ndarray) -> dict[str, float]:
    """Kish effective sample size per arm: (sum w)^2 / sum w^2."""
    return {
        arm: round(float(w[mask].sum() ** 2 / (w[mask] ** 2).sum()), 1)
        for arm, mask in (("treated", t == 1), ("control", t == 0))
    }


def plot_overlap(ps: np.ndarray, t: np.ndarray, support: list[float], path: Path, title: str) -> str:
    """Histograms of the propensity score by arm with the common support marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    bins = np.linspace(0, 1, 41).tolist()
    ax.hist(ps[t == 0], bins=bins, alpha=0.55, density=True, label="control", color="tab:blue")
    ax.hist(ps[t == 1], bins=bins, alpha=0.55, density=True, label="treated", color="tab:orange")
    for v in support:
        ax.axvline(v, color="black", linestyle="--", linewidth=1)
    ax.set_xlabel("estimated propensity score P(treated | covariates)")
    ax.set_ylabel("density")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)


def plot_love(balance: dict[str, dict[str, float]], path: Path, title: str) -> str:
    """Love plot: |SMD| per covariate before and after weighting, with the 0.1 threshold."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = sorted(balance, key=lambda c: abs(balance[c]["smd_before"]))[-40:]
    fig, ax = plt.subplots(figsize=(7, max(2.5, 0.3 * len(names) + 1)))
    yy = np.arange(len(names))
    ax.scatter([abs(balance[c]["smd_before"]) for c in names], yy, label="before weighting", marker="o")
    ax.scatter([abs(balance[c]["smd_after"]) for c in names], yy, label="after weighting", marker="x")
    ax.axvline(SMD_OK, color="grey", linestyle="--", linewidth=1)
    ax.set_yticks(yy, names)
    ax.set_xlabel("absolute standardised mean difference")
    ax.set_title(title)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)


def trim_mask(ps: np.ndarray) -> tuple[np.ndarray, tuple[float, float]]:
    """Units kept by the Crump et al. rule (all when it asks for no trimming) and its bounds."""
    a, b = crump_bounds(ps)
    return (ps >= a) & (ps <= b), (a, b)


def diagnose(X: pd.DataFrame, t: np.ndarray, ps: np.ndarray, estimand: str = "ATE") -> dict[str, Any]:
    """AUC, overlap, balance before/after weighting and effective sample sizes of one fit."""
    w = weights(ps, t, estimand)
    bal = balance_table(X, t, w)
    before = max((abs(v["smd_before"]) for v in bal.values()), default=0.0)
    after = max((abs(v["smd_after"]) for v in bal.values()), default=0.0)
    return {
        "auc": round(auc(ps, t), 4) if 0 < t.mean() < 1 else None,
        **overlap_summary(ps, t),
        "balance": bal,
        "max_smd_before": round(before, 4),
        "max_smd_after": round(after, 4),
        "balance_ok": bool(after <= SMD_OK),
        "ess": ess(w, t),
    }
