"""Instrumental variables: two-stage least squares with a repaired control set.

linearmodels' IV2SLS refuses a regressor matrix without full column rank ("regressors [exog
endog] do not have full column rank"), which real files produce easily: a control that is an
exact linear function of the treatment and other controls (experience = age - schooling - 6),
a copy of the treatment, a constant column. As Stata's ``ivregress`` and ``fixest`` do, such
controls are dropped and named; the fitted model is unchanged by the drop (the dropped column
lies in the span of what is kept). An instrument that is itself a linear function of the
controls has no variation left given them, so the effect is not identified: that is an error.
DoWhy's IV estimator is not used: with a binary instrument it silently ignores the controls.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from whyflow.causal.estimation.backdoor import Estimate, normal_ci
from whyflow.core.errors import AgentError

__all__ = ["COLLINEAR_TOL", "iv_2sls", "collinear_columns", "controls_spanning_instrument", "anderson_rubin_ci"]

COLLINEAR_TOL = 1e-10
"""A column is collinear when 1 - R^2 of it on the columns kept before it is below this (fixest's collin.tol)."""


def _residual_share(col: np.ndarray, basis: np.ndarray | None) -> float:
    """1 - R^2 of ``col`` regressed on ``basis`` (uncentred; the basis holds the constant)."""
    total = float(col @ col)
    if total == 0:
        return 0.0
    if basis is None or not basis.shape[1]:
        return 1.0
    coef, *_ = np.linalg.lstsq(basis, col, rcond=None)
    resid = col - basis @ coef
    return float(resid @ resid) / total


def collinear_columns(columns: dict[str, np.ndarray], keep_first: int, tol: float = COLLINEAR_TOL) -> list[str]:
    """Greedy rank check in the given order: names of the columns after the first ``keep_first`` to drop.

    The first column is the constant; every later one is centred and scaled (its span with the
    constant is unchanged) and dropped when it is (almost) a linear function of those kept. The
    first ``keep_first`` columns are never dropped (the caller checks them itself).
    """
    names = list(columns)
    kept: list[np.ndarray] = []
    dropped: list[str] = []
    for i, name in enumerate(names):
        col = columns[name] - (columns[name].mean() if i else 0.0)
        scale = float(np.max(np.abs(col))) or 1.0
        col = col / scale
        basis = np.column_stack(kept) if kept else None
        if i >= keep_first and _residual_share(col, basis) < tol:
            dropped.append(name)
            continue
        kept.append(col)
    return dropped


def _clean(
    y: np.ndarray, t: np.ndarray, z: np.ndarray, X: pd.DataFrame, names: list[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, pd.DataFrame, int, list[str]]:
    """Rows with finite values only (``z`` one column per instrument); constant controls removed (named)."""
    X = X.astype(float)
    finite = np.isfinite(y) & np.isfinite(t) & np.isfinite(z).all(axis=1)
    if X.shape[1]:
        finite &= np.isfinite(X.to_numpy()).all(axis=1)
    n_bad = int((~finite).sum())
    y, t, z, X = y[finite], t[finite], z[finite], X.loc[finite].reset_index(drop=True)
    if len(y) < 20:
        raise AgentError(f"only {len(y)} rows with finite values for the instrumental-variables fit; too few")
    if np.ptp(t) == 0:
        raise AgentError("the treatment takes a single value in the rows used: 2SLS has nothing to estimate")
    for j, instrument in enumerate(names):
        if np.ptp(z[:, j]) == 0:
            raise AgentError(
                f"instrument '{instrument}' takes a single value in the rows used: it cannot move the treatment"
            )
    constant = [c for c in X.columns if np.ptp(X[c].to_numpy()) == 0]
    return y, t, z, X.drop(columns=constant), n_bad, constant


def _collinear_controls(t: np.ndarray, X: pd.DataFrame) -> tuple[list[str], list[str]]:
    """Controls to drop (in the data's column order), and those of them collinear only through the treatment.

    Controls collinear among themselves are dropped in their given order (the later one goes, as
    Stata does); the treatment's coefficient does not depend on which. Where a set of controls is
    collinear only together with the treatment (experience = age - schooling - 6), which control
    goes changes what is held fixed: the one most correlated with the treatment is dropped, the
    mark of a column derived from it (experience), while the one least related to it (age, fixed
    before schooling) is kept.
    """
    cols = {c: X[c].to_numpy() for c in X.columns}
    const = {"__const__": np.ones(len(t))}
    redundant = collinear_columns({**const, **cols}, keep_first=1)
    rest = [c for c in X.columns if c not in redundant]
    corr = {c: abs(float(np.corrcoef(cols[c], t)[0, 1])) for c in rest}
    ordered = sorted(rest, key=lambda c: corr[c])
    through_t = collinear_columns({**const, "__treatment__": t, **{c: cols[c] for c in ordered}}, keep_first=2)
    dropped = set(redundant) | set(through_t)
    return [c for c in X.columns if c in dropped], [c for c in X.columns if c in set(through_t)]


def controls_spanning_instrument(z: np.ndarray, X: pd.DataFrame) -> list[str] | None:
    """The controls of which the instrument is (almost) an exact linear function, or None when it is not.

    An empty list means the instrument is constant. Callers choosing an adjustment set can leave
    these out before the fit (other arms of the same randomisation, the instrument's components).
    """
    z = np.asarray(z, float)
    basis = np.column_stack([np.ones(len(z)), X.to_numpy(float)]) if X.shape[1] else np.ones((len(z), 1))
    zs = (z - z.mean()) / (np.abs(z - z.mean()).max() or 1.0)
    if _residual_share(zs, basis) >= COLLINEAR_TOL:
        return None
    coef, *_ = np.linalg.lstsq(basis, zs, rcond=None)
    return [c for c, b in zip(X.columns, coef[1:], strict=True) if abs(b) > 1e-8]


def _instrument_check(z: np.ndarray, X: pd.DataFrame, instrument: str) -> None:
    """Raise when the instrument is (almost) an exact linear function of the kept controls."""
    involved = controls_spanning_instrument(z, X)
    if involved is None:
        return
    raise AgentError(
        f"instrument '{instrument}' is an exact linear function of the controls ({', '.join(involved) or 'a constant'}): "
        "given them it has no variation left to move the treatment, so the instrumental-variables effect is not "
        "identified; leave them out of the adjustment set if they are parts or other arms of the instrument"
    )


def _closest_controls(z: np.ndarray, X: pd.DataFrame, top: int = 3) -> list[str]:
    """The controls most correlated with the instrument (|r| >= 0.3), strongest first: what absorbs it."""
    if z.std() == 0:
        return []
    r = {c: abs(float(np.corrcoef(z, X[c].to_numpy(float))[0, 1])) for c in X.columns if X[c].std() > 0}
    return [c for c, v in sorted(r.items(), key=lambda kv: -kv[1]) if v >= 0.3][:top]


def _r2_alone(t: np.ndarray, z: np.ndarray) -> float:
    """R² of the treatment on the instruments alone (with a constant): their pull before any control."""
    if not np.std(t) or not np.all(np.std(z, axis=0)):
        return 0.0
    if z.shape[1] == 1:
        return float(np.corrcoef(t, z[:, 0])[0, 1] ** 2)
    return 1.0 - _residual_share(t - t.mean(), np.column_stack([np.ones(len(t)), z]))


def iv_2sls(
    y: np.ndarray,
    t: np.ndarray,
    z: np.ndarray,
    X: pd.DataFrame,
    instrument: str | list[str],
    treatment: str = "treatment",
    clusters: tuple[str, np.ndarray] | None = None,
) -> Estimate:
    """Two-stage least squares of y on t instrumented by z, controlling for X (robust SEs).

    ``z`` is one instrument (a vector, ``instrument`` its name) or several (one column each,
    ``instrument`` their names): with several, the first-stage F is their joint robust Wald
    statistic over their number, and the over-identification tests (Sargan's, and Wooldridge's
    heteroskedasticity-robust score test, which the review reads) ask whether they agree.
    Collinear and constant controls are dropped (named in ``details["dropped_collinear"]`` and
    ``details["dropped_constant"]``); rows with non-finite values are left out and counted.
    ``clusters`` (a stated ``--cluster``: its name and a code per row) clusters the errors on it.
    """
    from linearmodels.iv import IV2SLS

    names = [instrument] if isinstance(instrument, str) else list(instrument)
    zm = np.asarray(z, float).reshape(len(z), -1)
    groups = None
    if clusters is not None:  # the rows _clean keeps, before it keeps them
        finite = np.isfinite(np.asarray(y, float)) & np.isfinite(np.asarray(t, float)) & np.isfinite(zm).all(axis=1)
        if X.shape[1]:
            finite &= np.isfinite(X.to_numpy(float)).all(axis=1)
        groups = pd.Series(np.asarray(clusters[1])[finite], name="cluster")
    y, t, zm, X, n_bad, constant = _clean(np.asarray(y, float), np.asarray(t, float), zm, X, names)
    dropped, involve_t = _collinear_controls(t, X)
    X = X.drop(columns=dropped)
    for j, name in enumerate(names):
        _instrument_check(zm[:, j], X, name)
    exog = X.copy()
    exog.insert(0, "const", 1.0)
    instruments = pd.DataFrame(zm, columns=names)
    try:
        model = IV2SLS(pd.Series(y, name="y"), exog, pd.Series(t, name="treatment"), instruments)
        res = model.fit(cov_type="robust") if groups is None else model.fit(cov_type="clustered", clusters=groups)
    except ValueError as exc:  # a near-collinearity the check above let through
        raise AgentError(f"2SLS could not be fitted after dropping collinear controls: {exc}") from exc
    est, se = float(res.params["treatment"]), float(res.std_errors["treatment"])
    diag = res.first_stage.diagnostics  # type: ignore[attr-defined]  # IV results (linearmodels)
    f_stat = float(diag["f.stat"].iloc[0]) / len(names)  # a robust Wald chi2(q): F is it over q
    ci, p = normal_ci(est, se)
    weak = f_stat < 10
    which = f"instrument '{names[0]}' is" if len(names) == 1 else f"instruments {', '.join(names)} are"
    joint = "" if len(names) == 1 else " joint"
    assumptions = [
        f"{which} relevant ({joint.strip() + ' ' if joint else ''}first-stage F = {f_stat:.1f}{', WEAK' if weak else ''})",
        "exclusion: the instrument affects the outcome only through the treatment",
        "independence: the instrument is as good as random given the controls",
        "monotonicity (no defiers) for the LATE interpretation",
    ]
    redundant = [c for c in dropped if c not in involve_t]
    if redundant:
        assumptions.append(
            f"controls dropped as exact linear functions of the other controls (nothing else changes): "
            f"{', '.join(redundant)}"
        )
    if involve_t:
        assumptions.append(
            f"controls dropped as exact linear functions of {treatment} and the other controls (derived from the "
            f"treatment, so holding them fixed would hold part of the treatment fixed): {', '.join(involve_t)}"
        )
    details: dict[str, Any] = {
        "library": "linearmodels IV2SLS",
        "se_method": "heteroskedasticity-robust",
        "instrument": ", ".join(names),
        "first_stage_f": round(f_stat, 2),
        "first_stage_partial_r2": round(float(diag["partial.rsquared"].iloc[0]), 4),
        # the instrument's pull on the treatment with no controls: what the controls leave of it is the ratio
        "first_stage_r2_alone": round(_r2_alone(t, zm), 4),
        "weak_instrument": weak,
        "instrument_explained_by": list(
            dict.fromkeys(c for j in range(len(names)) for c in _closest_controls(zm[:, j], X))
        ),
        "controls_used": list(X.columns),
        "dropped_collinear": dropped,
        "dropped_collinear_with_treatment": involve_t,
    }
    if clusters is not None and groups is not None:
        details["se_method"] = f"clustered by {clusters[0]} ({groups.nunique()} clusters)"
        details["clustered_by"] = clusters[0]
    if constant:
        details["dropped_constant"] = constant
    if n_bad:
        details["rows_dropped_nonfinite"] = n_bad
    if len(names) > 1:
        _overidentification(res, names, details, assumptions)
    if weak and len(names) == 1:
        ar = anderson_rubin_ci(y, t, zm[:, 0], X)
        details["anderson_rubin_ci"] = ar
        assumptions[0] += f"; the Anderson-Rubin 95% set, valid with a weak instrument, is {ar['text']}"
    return Estimate("Instrumental variables (2SLS)", "LATE", est, se, ci, p, assumptions, details)


def _overidentification(res: Any, names: list[str], details: dict[str, Any], assumptions: list[str]) -> None:
    """Several instruments: whether they agree (Sargan's test, and Wooldridge's robust score test the review reads)."""
    details["instruments"] = names
    details["n_instruments"] = len(names)
    tests = {"sargan": res.sargan, "wooldridge_overid": res.wooldridge_overid}
    details["overidentification"] = {
        k: {"statistic": round(float(v.stat), 4), "p_value": round(float(v.pval), 4), "df": int(v.df)}
        for k, v in tests.items()
    }
    details["overidentification_p"] = round(float(res.wooldridge_overid.pval), 4)
    assumptions.append(
        f"the {len(names)} instruments identify the same effect (over-identification, Wooldridge's robust score "
        f"test p = {float(res.wooldridge_overid.pval):.3g}; a rejection means one is invalid or they move "
        "different compliers)"
    )


def anderson_rubin_ci(y: np.ndarray, t: np.ndarray, z: np.ndarray, X: pd.DataFrame) -> dict[str, Any]:
    """The Anderson-Rubin 95% confidence set for one instrument (valid however weak the instrument is).

    b is in the set when the robust t-test of z in a regression of y - b*t on (1, X, z) does not
    reject; the squared t-statistic is a ratio of quadratics in b, so the set solves a quadratic
    inequality: an interval, the line minus an interval, or the whole line.
    """
    from scipy.stats import chi2

    W = np.column_stack([np.ones(len(y)), X.to_numpy(float)]) if X.shape[1] else np.ones((len(y), 1))
    proj = np.linalg.lstsq(W, np.column_stack([y, t, z]), rcond=None)[0]
    ry, rt, rz = (np.column_stack([y, t, z]) - W @ proj).T
    szz = float(rz @ rz)
    gy, gt = float(rz @ ry) / szz, float(rz @ rt) / szz  # reduced form and first stage coefficients
    ey, et = ry - gy * rz, rt - gt * rz  # residuals at b: ey - b*et
    w = rz**2
    crit = float(chi2.ppf(0.95, 1))
    n, k = len(y), W.shape[1] + 1
    dof = n / (n - k)
    # (gy - b gt)^2 <= crit * dof * sum(w (ey - b et)^2) / szz^2, as a*b^2 + bq*b + c <= 0
    s_yy, s_yt, s_tt = float(w @ (ey * ey)), float(w @ (ey * et)), float(w @ (et * et))
    m = crit * dof / szz**2
    a = gt**2 - m * s_tt
    bq = -2 * gy * gt + 2 * m * s_yt
    c = gy**2 - m * s_yy
    disc = bq**2 - 4 * a * c
    if a > 0 and disc >= 0:
        r = np.sqrt(disc)
        lo, hi = float((-bq - r) / (2 * a)), float((-bq + r) / (2 * a))
        return {"kind": "interval", "lower": round(lo, 6), "upper": round(hi, 6), "text": f"[{lo:.4g}, {hi:.4g}]"}
    if a < 0 and disc > 0:
        r = np.sqrt(disc)
        lo, hi = sorted((float((-bq + r) / (2 * a)), float((-bq - r) / (2 * a))))
        return {
            "kind": "the line outside an interval",
            "excluded_lower": round(lo, 6),
            "excluded_upper": round(hi, 6),
            "text": f"(-inf, {lo:.4g}] and [{hi:.4g}, inf): unbounded",
        }
    return {"kind": "unbounded (every value)", "text": "(-inf, inf): the data exclude no effect size"}
