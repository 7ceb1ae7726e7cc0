"""Regression discontinuity: rdrobust (Calonico, Cattaneo and Titiunik), with a local-linear cross-check.

The headline is rdrobust's: local linear fits on each side with a triangular kernel and the
MSE-optimal bandwidth, the conventional point estimate with the robust bias-corrected interval
and standard error (what rdrobust's own summary reports). Fuzzy when take-up does not follow the
cutoff exactly (rdrobust's ``fuzzy=``: the jump in the outcome over the jump in take-up). The
earlier hand-written local-linear fit (rule-of-thumb bandwidth, HC1 SEs) is kept only as a
cross-check in ``details["local_linear_check"]``.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from typing import Any

import numpy as np
import pandas as pd

from whyflow.causal.estimation.backdoor import Estimate, normal_ci
from whyflow.core.errors import AgentError

__all__ = ["rdd_rdrobust", "rdd_local_linear", "rdd_bandwidth", "rdd_side"]

MIN_SIDE = 10
"""Fewest rows on each side of the cutoff for a discontinuity fit."""


def rdd_side(xc: np.ndarray, t: np.ndarray) -> tuple[str, float]:
    """How take-up follows the cutoff: "sharp_above", "sharp_below" or "fuzzy", and the agreement share.

    Rows exactly at the cutoff are left out of the comparison (rdrobust puts them on the right,
    while a treatment may be coded as strictly above): they neither make nor break sharpness.
    """
    off = xc != 0
    above, treated = xc[off] >= 0, t[off] > 0
    agree = float(np.mean(above == treated)) if off.any() else 0.0
    if agree == 1.0:
        return "sharp_above", agree
    if agree == 0.0:
        return "sharp_below", agree
    return "fuzzy", agree


def _rdrobust(
    y: np.ndarray,
    x: np.ndarray,
    cutoff: float,
    fuzzy: np.ndarray | None,
    h: float | None = None,
    cluster: np.ndarray | None = None,
) -> Any:
    """rdrobust's fit, its printed notes captured (it prints mass-point notices to stdout)."""
    from rdrobust import rdrobust

    out = io.StringIO()
    with contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = rdrobust(y, x, c=cutoff, fuzzy=fuzzy, h=h, cluster=cluster)
    res.notes_ = [line.strip() for line in out.getvalue().splitlines() if line.strip()]
    return res


def rdd_rdrobust(
    x: np.ndarray,
    y: np.ndarray,
    t: np.ndarray,
    cutoff: float,
    running: str,
    clusters: tuple[str, np.ndarray] | None = None,
) -> Estimate:
    """RDD through rdrobust: conventional estimate, robust bias-corrected SE, interval and p-value.

    ``clusters`` (a stated ``--cluster``: its name and a code per row) gives rdrobust's cluster-robust variance.
    """
    x, y, t = (np.asarray(a, float) for a in (x, y, t))
    keep = np.isfinite(x) & np.isfinite(y) & np.isfinite(t)
    x, y, t = x[keep], y[keep], t[keep]
    groups = None if clusters is None else np.asarray(clusters[1])[keep]
    xc = x - cutoff
    n_left, n_right = int((xc < 0).sum()), int((xc >= 0).sum())
    if min(n_left, n_right) < MIN_SIDE:
        raise AgentError(
            f"the running variable '{running}' has {n_left} rows below and {n_right} at or above the cutoff "
            f"{cutoff:g}: too few on one side for a discontinuity"
        )
    side, agree = rdd_side(xc, t)
    sign = -1.0 if side == "sharp_below" else 1.0
    try:
        res = _rdrobust(y, x, cutoff, t if side == "fuzzy" else None, cluster=groups)
    except Exception as exc:  # noqa: BLE001 - rdrobust's own errors are numerical; say what failed
        raise AgentError(f"rdrobust could not fit the discontinuity at {running} = {cutoff:g}: {exc}") from exc
    est = sign * float(res.coef.iloc[0, 0])
    se = float(res.se.iloc[2, 0])
    lo, hi = (sign * float(v) for v in res.ci.iloc[2])
    ci = (min(lo, hi), max(lo, hi))
    p = float(res.pv.iloc[2, 0])
    if not (np.isfinite(est) and np.isfinite(se) and se > 0):
        raise AgentError(f"rdrobust gave no finite estimate at {running} = {cutoff:g} (too few rows near the cutoff?)")
    h = float(res.bws.iloc[0, 0])
    details: dict[str, Any] = {
        "design": "fuzzy" if side == "fuzzy" else "sharp",
        "treated_side": {"sharp_above": "above", "sharp_below": "below"}.get(side, "take-up varies on both sides"),
        "running_variable": running,
        "cutoff": cutoff,
        "library": "rdrobust",
        "bandwidth": round(h, 6),
        "bandwidth_bias": round(float(res.bws.iloc[1, 0]), 6),
        "bandwidth_rule": "MSE-optimal, common on both sides (rdrobust mserd)",
        "kernel": "triangular",
        "polynomial_order": 1,
        "n_in_bandwidth": int(sum(int(v) for v in res.N_h)),
        "n_left": n_left,
        "n_right": n_right,
        "share_agreeing_with_cutoff": round(agree, 4),
        "se_method": "robust bias-corrected (rdrobust, nearest-neighbour variance)",
        "ci_method": "robust bias-corrected; centred on the bias-corrected estimate, not on the conventional one",
        "conventional_se": round(float(res.se.iloc[0, 0]), 6),
        "bias_corrected_estimate": round(sign * float(res.coef.iloc[1, 0]), 6),
    }
    if clusters is not None and groups is not None:
        details["se_method"] = f"robust bias-corrected, clustered by {clusters[0]} (rdrobust cluster=)"
        details["clustered_by"] = clusters[0]
    if side == "fuzzy" and res.tau_T is not None:
        jump, jump_se = float(res.tau_T.iloc[0, 0]), float(res.se_T.iloc[0, 0])
        details["first_stage_jump"] = round(jump, 4)
        details["first_stage_f"] = round((jump / jump_se) ** 2, 2) if jump_se > 0 else None
    if res.notes_:
        details["rdrobust_notes"] = res.notes_
    details["bandwidth_sensitivity"] = _sensitivity(y, x, cutoff, t if side == "fuzzy" else None, h, sign)
    try:
        check = rdd_local_linear(x, y, t, cutoff, running)
        details["local_linear_check"] = {
            "estimate": round(check.estimate, 6),
            "std_error": round(check.std_error, 6),
            "ci": [round(check.ci[0], 6), round(check.ci[1], 6)],
            "bandwidth": check.details["bandwidth"],
            "bandwidth_rule": check.details["bandwidth_rule"],
        }
    except Exception as exc:  # noqa: BLE001 - the cross-check is optional
        details["local_linear_check"] = {"error": str(exc)[:200]}
    assumptions = [
        "potential outcomes continuous in the running variable at the cutoff",
        "no manipulation of the running variable around the cutoff",
    ]
    if side == "fuzzy":
        assumptions.append("crossing the cutoff affects the outcome only through take-up (fuzzy RD), no defiers")
    return Estimate("Regression discontinuity (rdrobust)", "LATE", est, se, ci, p, assumptions, details)


def _sensitivity(
    y: np.ndarray, x: np.ndarray, cutoff: float, fuzzy: np.ndarray | None, h: float, sign: float
) -> dict[str, float | None]:
    """The conventional estimate at half and at double the chosen bandwidth."""
    out: dict[str, float | None] = {}
    for label, hh in (("half_bandwidth", h / 2), ("double_bandwidth", 2 * h)):
        try:
            out[label] = round(sign * float(_rdrobust(y, x, cutoff, fuzzy, h=hh).coef.iloc[0, 0]), 6)
        except Exception:  # noqa: BLE001 - too few points at a narrow bandwidth
            out[label] = None
    return out


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
    """Local linear RDD with a triangular kernel and a rule-of-thumb bandwidth; fuzzy (local 2SLS) when needed.

    The cross-check of :func:`rdd_rdrobust`: the same sharp/fuzzy rule, a sharp design with
    treatment below the cutoff reported with its sign turned.
    """
    xc = x - cutoff
    h = rdd_bandwidth(xc)
    side, agree = rdd_side(xc, t)
    sharp = side != "fuzzy"
    sign = -1.0 if side == "sharp_below" else 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=RuntimeWarning)
        est, se, n_used, f = _local_fit(xc, y, t, h, sharp)
        robustness: dict[str, Any] = {}
        for label, hh in (("half_bandwidth", h / 2), ("double_bandwidth", 2 * h)):
            try:
                robustness[label] = round(sign * _local_fit(xc, y, t, hh, sharp)[0], 4)
            except Exception:  # noqa: BLE001 - too few points at a narrow bandwidth
                robustness[label] = None
    est *= sign
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
