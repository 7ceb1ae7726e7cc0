"""Design-based estimators: instrumental variables (2SLS), difference-in-differences, RDD.

These identify an effect without "no unmeasured confounding": an instrument (LATE, linearmodels
IV2SLS with robust SEs and the first-stage F), a panel with parallel trends (two-way fixed
effects, linearmodels PanelOLS, SEs clustered by unit) or a cutoff in a running variable (local
linear regression with a triangular kernel). DoWhy's IV estimator is not used: with a binary
instrument it silently ignores the controls.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

from agents.stats.estimators import Estimate, normal_ci

__all__ = ["iv_2sls", "did_twfe", "rdd_local_linear", "rdd_bandwidth"]


def iv_2sls(y: np.ndarray, t: np.ndarray, z: np.ndarray, X: pd.DataFrame, instrument: str) -> Estimate:
    """Two-stage least squares of y on t instrumented by z, controlling for X (robust SEs)."""
    from linearmodels.iv import IV2SLS

    exog = X.copy()
    exog.insert(0, "const", 1.0)
    res = IV2SLS(pd.Series(y, name="y"), exog, pd.Series(t, name="treatment"), pd.Series(z, name=instrument)).fit(
        cov_type="robust"
    )
    est, se = float(res.params["treatment"]), float(res.std_errors["treatment"])
    diag = res.first_stage.diagnostics  # type: ignore[attr-defined]  # IV results (linearmodels)
    f_stat = float(diag["f.stat"].iloc[0])
    ci, p = normal_ci(est, se)
    weak = f_stat < 10
    return Estimate(
        "Instrumental variables (2SLS)",
        "LATE",
        est,
        se,
        ci,
        p,
        [
            f"instrument '{instrument}' is relevant (first-stage F = {f_stat:.1f}{', WEAK' if weak else ''})",
            "exclusion: the instrument affects the outcome only through the treatment",
            "independence: the instrument is as good as random given the controls",
            "monotonicity (no defiers) for the LATE interpretation",
        ],
        {
            "library": "linearmodels IV2SLS",
            "se_method": "heteroskedasticity-robust",
            "instrument": instrument,
            "first_stage_f": round(f_stat, 2),
            "first_stage_partial_r2": round(float(diag["partial.rsquared"].iloc[0]), 4),
            "weak_instrument": weak,
        },
    )


def did_twfe(frame: pd.DataFrame, unit: str, time: str, treatment: str, outcome: str) -> Estimate:
    """Two-way fixed effects DiD: y_it = a_i + g_t + tau D_it, SEs clustered by unit.

    With staggered adoption and heterogeneous effects TWFE can be biased (Goodman-Bacon 2021);
    ``details`` says whether adoption is staggered.
    """
    from linearmodels.panel import PanelOLS

    data = frame[[unit, time, treatment, outcome]].dropna().copy()
    tcodes = pd.Index(sorted(data[time].unique()))
    data["_time"] = tcodes.get_indexer(data[time])
    panel = data.set_index([unit, "_time"])
    res = PanelOLS(
        panel[outcome].astype(float), panel[[treatment]].astype(float), entity_effects=True, time_effects=True
    ).fit(cov_type="clustered", cluster_entity=True)
    est, se = float(res.params[treatment]), float(res.std_errors[treatment])
    ci, p = normal_ci(est, se)
    starts = data[data[treatment] > 0].groupby(unit)["_time"].min()
    return Estimate(
        "Difference-in-differences (TWFE)",
        "ATT",
        est,
        se,
        ci,
        p,
        ["parallel trends between treated and control units", "no anticipation", "no spillovers between units"],
        {
            "library": "linearmodels PanelOLS (entity and time effects)",
            "se_method": "clustered by unit",
            "n_units": int(data[unit].nunique()),
            "n_periods": int(len(tcodes)),
            "n_treated_units": int(starts.size),
            "staggered_adoption": bool(starts.nunique() > 1),
        },
    )


def rdd_bandwidth(x: np.ndarray) -> float:
    """Rule-of-thumb bandwidth 1.84 * sd(x) * n^(-1/5) (Silverman's rule, the IK pilot step)."""
    return float(1.84 * np.std(x) * len(x) ** (-0.2))


def _local_fit(
    xc: np.ndarray, y: np.ndarray, t: np.ndarray, h: float, sharp: bool
) -> tuple[float, float, int, float | None]:
    import statsmodels.api as sm

    w = np.clip(1 - np.abs(xc) / h, 0, None)
    keep = w > 0
    above = (xc >= 0).astype(float)
    exog = np.column_stack([np.ones(keep.sum()), above[keep], xc[keep], above[keep] * xc[keep]])
    if sharp:
        fit = sm.WLS(y[keep], exog, weights=w[keep]).fit(cov_type="HC1")
        return float(fit.params[1]), float(fit.bse[1]), int(keep.sum()), None
    from linearmodels.iv import IV2SLS

    exo = pd.DataFrame({"const": 1.0, "xc": xc[keep], "above_xc": above[keep] * xc[keep]})
    res = IV2SLS(
        pd.Series(y[keep]),
        exo,
        pd.Series(t[keep], name="treatment"),
        pd.Series(above[keep], name="above"),
        weights=w[keep],
    ).fit(cov_type="robust")
    f = float(res.first_stage.diagnostics["f.stat"].iloc[0])  # type: ignore[attr-defined]
    return float(res.params["treatment"]), float(res.std_errors["treatment"]), int(keep.sum()), f


def rdd_local_linear(x: np.ndarray, y: np.ndarray, t: np.ndarray, cutoff: float, running: str) -> Estimate:
    """Local linear RDD with a triangular kernel; fuzzy (local 2SLS) when take-up is imperfect."""
    xc = x - cutoff
    h = rdd_bandwidth(xc)
    agree = float(np.mean((xc >= 0) == (t > 0)))
    sharp = agree >= 0.99
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=RuntimeWarning)
        est, se, n_used, f = _local_fit(xc, y, t, h, sharp)
        robustness: dict[str, Any] = {}
        for label, hh in (("half_bandwidth", h / 2), ("double_bandwidth", 2 * h)):
            try:
                robustness[label] = round(_local_fit(xc, y, t, hh, sharp)[0], 4)
            except Exception:  # noqa: BLE001 - too few points at a narrow bandwidth
                robustness[label] = None
    ci, p = normal_ci(est, se)
    details: dict[str, Any] = {
        "design": "sharp" if sharp else "fuzzy",
        "running_variable": running,
        "cutoff": cutoff,
        "bandwidth": round(h, 5),
        "bandwidth_rule": "1.84 * sd(running) * n^(-1/5) (rule of thumb)",
        "kernel": "triangular",
        "n_in_bandwidth": n_used,
        "share_agreeing_with_cutoff": round(agree, 4),
        "bandwidth_sensitivity": robustness,
        "se_method": "HC1 robust (statsmodels WLS)" if sharp else "robust (linearmodels IV2SLS, weighted)",
    }
    if f is not None:
        details["first_stage_f"] = round(f, 2)
    return Estimate(
        "Regression discontinuity (local linear)",
        "LATE",
        est,
        se,
        ci,
        p,
        [
            "potential outcomes continuous in the running variable at the cutoff",
            "no manipulation of the running variable around the cutoff",
        ],
        details,
    )
