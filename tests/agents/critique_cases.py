"""Hand-built analyses for the critique's tests: estimates and diagnostics computed from seeded data."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tests.factories import make_estimate
from tests.helpers import make_state
from whyflow.causal.state import AnalysisState, TreatmentEffectResult
from whyflow.flows.running.dispatch import run_single_agent

ADJ = ["x1", "x2", "x3"]


# ---- real estimates and diagnostics, computed here -----------------------------------------
def propensity_scores(frame: pd.DataFrame, covs: list[str]) -> np.ndarray:
    from sklearn.linear_model import LogisticRegression

    x = frame[covs].to_numpy()
    e = LogisticRegression(C=1e6, max_iter=2000).fit(x, frame["treated"]).predict_proba(x)[:, 1]
    return np.clip(e, 1e-6, 1 - 1e-6)  # as estimators clip; separation still shows in the ranges


_KEYS = {"naive_difference": "naive", "regression_adjustment": "ols", "ipw": "ipw", "aipw": "aipw"}


def make_result(method: str, est: float, se: float, rnd: int, **details: Any) -> TreatmentEffectResult:
    return make_estimate(
        _KEYS[method],
        est,
        se,
        round=rnd,
        label=method,
        ci=(est - 1.96 * se, est + 1.96 * se),
        adjustment_set=ADJ,
        **details,
    )


def make_estimates(frame: pd.DataFrame, e: np.ndarray, rnd: int, *, dr: bool, changes: list[str] | None = None) -> list:
    """Naive, OLS (headline), IPW and optionally AIPW estimates of treated -> outcome."""
    import statsmodels.api as sm

    t, y = frame["treated"].to_numpy(), frame["outcome"].to_numpy()
    extra = {"changes_applied": changes or []}
    naive = y[t == 1].mean() - y[t == 0].mean()
    out = [
        make_result(
            "naive_difference", naive, math.sqrt(y[t == 1].var() / t.sum() + y[t == 0].var() / (1 - t).sum()), rnd
        )
    ]
    ols = sm.OLS(y, sm.add_constant(frame[["treated", *ADJ]])).fit()
    out.append(
        make_result("regression_adjustment", ols.params["treated"], ols.bse["treated"], rnd, headline=True, **extra)
    )
    w = t / e + (1 - t) / (1 - e)
    ipw = sm.WLS(y, sm.add_constant(t), weights=w).fit(cov_type="HC1")
    out.append(make_result("ipw", ipw.params[1], ipw.bse[1], rnd, **extra))
    if dr:
        x = sm.add_constant(frame[ADJ])
        mu1 = sm.OLS(y[t == 1], x[t == 1]).fit().predict(x)
        mu0 = sm.OLS(y[t == 0], x[t == 0]).fit().predict(x)
        psi = mu1 - mu0 + t * (y - mu1) / e - (1 - t) * (y - mu0) / (1 - e)
        out.append(make_result("aipw", psi.mean(), psi.std(ddof=1) / math.sqrt(len(psi)), rnd, **extra))
    return out


def make_ps_diag(frame: pd.DataFrame, e: np.ndarray, covs: list[str], *, trimmed: bool = False, changes=None) -> dict:
    """ps_diagnostics in the README's shape, from propensity scores ``e``."""
    from sklearn.metrics import roc_auc_score

    t = frame["treated"].to_numpy()
    lo, hi = max(e[t == 1].min(), e[t == 0].min()), min(e[t == 1].max(), e[t == 0].max())
    out = (e < lo) | (e > hi)
    w = t / e + (1 - t) / (1 - e)
    balance = {}
    for c in covs:
        v = frame[c].to_numpy()
        sd = math.sqrt((v[t == 1].var() + v[t == 0].var()) / 2)
        m1w, m0w = np.average(v[t == 1], weights=w[t == 1]), np.average(v[t == 0], weights=w[t == 0])
        balance[c] = {"smd_before": (v[t == 1].mean() - v[t == 0].mean()) / sd, "smd_after": (m1w - m0w) / sd}
    max_after = max(abs(b["smd_after"]) for b in balance.values())
    return {
        "treatment": "treated",
        "model": "logistic",
        "covariates": covs,
        "auc": float(roc_auc_score(t, e)),
        "propensity_range": {
            "treated": [e[t == 1].min(), e[t == 1].max()],
            "control": [e[t == 0].min(), e[t == 0].max()],
        },
        "common_support": [float(lo), float(hi)],
        "outside_support": {
            "treated": float(out[t == 1].mean()),
            "control": float(out[t == 0].mean()),
            "overall": float(out.mean()),
        },
        "overlap_ok": bool(out.mean() <= 0.05),
        "extreme_share": float(np.mean((e < 0.02) | (e > 0.98))),
        "trim_suggestion": {
            "lower": 0.05,
            "upper": 0.95,
            "n_dropped": int(((e < 0.05) | (e > 0.95)).sum()),
            "reason": "Crump",
        },
        "trimmed": trimmed,
        "n_used": len(frame),
        "balance": balance,
        "max_smd_before": max(abs(b["smd_before"]) for b in balance.values()),
        "max_smd_after": float(max_after),
        "balance_ok": bool(max_after <= 0.1),
        "ess": {
            "treated": float(w[t == 1].sum() ** 2 / (w[t == 1] ** 2).sum()),
            "control": float(w[t == 0].sum() ** 2 / (w[t == 0] ** 2).sum()),
        },
        "changes": changes or [],
    }


def make_analysis(
    frame: pd.DataFrame, job: Path, *, dr: bool = True, rnd: int = 1, trimmed: bool = False, changes=None
) -> AnalysisState:
    """A state after estimation, with confounder discovery, ps diagnostics and estimates."""
    state = make_state(frame, job, "treated", "outcome")
    e = propensity_scores(frame, ADJ)
    state.ps_diagnostics = make_ps_diag(frame, e, ADJ, trimmed=trimmed, changes=changes)
    state.treatment_effects = make_estimates(frame, e, rnd, dr=dr, changes=changes)
    state.confounder_discovery = {
        "treatment": "treated",
        "outcome": "outcome",
        "adjustment_set": ADJ,
        "excluded": {},
        "data_associated": ["x1", "x2"],
        "identification": {"method": "backdoor", "identified": True, "estimand": "E[Y|do(T)]"},
    }
    state.iteration_count = rnd - 1
    return state


def run_critique(state: AnalysisState, job: Path):
    run_single_agent("critique", state, job)
    return state.critique_history[-1]
