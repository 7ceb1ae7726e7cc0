"""The request operations of a causal design the question names: difference in differences (pyfixest),
instrumental variables (linearmodels 2SLS), a sharp or fuzzy regression discontinuity (rdrobust),
synthetic control (pysyncon), nearest-neighbour matching on the covariates (Abadie and Imbens, with
or without their regression bias adjustment) and propensity-score stratification. Sent into the
sandbox as source after :mod:`whyflow.ask.tools.request_ops_base`, so it imports nothing else of
whyflow (the causal recipe's design estimators live in ``whyflow.causal``, which the ask family
does not import); the maths is the libraries', only the matching variance is written out here.

Each routine returns the estimate, its standard error (``None`` where the method gives no valid
one), the 95% interval, the rows used, and ``inference``: the standard error and interval in words.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from typing import Any

import numpy as np
import pandas as pd

from whyflow.ask.tools.request_ops_base import col_numbers

__all__ = ["design_effect"]


def _frame(df: pd.DataFrame, numeric: list[str], other: tuple[str, ...] | list[str] = ()) -> pd.DataFrame:
    """The complete rows of the named columns, the numeric ones as numbers."""
    parts = [col_numbers(df, c).rename(c) for c in numeric] + [df[c] for c in other if c not in numeric]
    return pd.concat(parts, axis=1).dropna()


def _arms(df: pd.DataFrame, d_name: str, y_name: str, covs: list[str]) -> tuple[pd.DataFrame, Any, Any]:
    """The complete rows of a 0/1 treatment, its outcome and covariates, with the arms and outcomes as floats."""
    data = _frame(df, [d_name, y_name, *covs])
    t, y = data[d_name].to_numpy(float), data[y_name].to_numpy(float)
    if set(np.unique(t)) - {0.0, 1.0}:
        raise ValueError(f"the treatment '{d_name}' must be 0/1")
    return data, t, y


def _interval(est: float, se: float | None) -> tuple[float, float] | None:
    return None if se is None or not np.isfinite(se) else (float(est - 1.959964 * se), float(est + 1.959964 * se))


def _result(
    est: float, se: float | None, n: int, label: str, ci: Any = None, notes: str = "", **extra: Any
) -> dict[str, Any]:
    """The estimate with its inference in words: ``label`` names the standard error (or why there is none)."""
    ci = _interval(est, se) if ci is None else (float(ci[0]), float(ci[1]))
    words = label if se is None else f"{label} {se:.3g}"
    if ci is not None:
        words += f", 95% CI {ci[0]:.4g} to {ci[1]:.4g}"
    if notes:
        words += f"; {notes}"
    return {"estimate": float(est), "se": se, "ci": ci, "n": int(n), "inference": words, **extra}


def _did(df: pd.DataFrame, opts: dict[str, Any]) -> dict[str, Any]:
    """Two-way fixed effects, y ~ D | unit + time, errors clustered by unit (pyfixest); a 2x2 design
    stated by a treated-group and a post-period column has D = group x post and their own effects."""
    import pyfixest as pf

    y = opts["outcome"]
    if opts.get("group"):
        g, p = opts["group"], opts["period"]
        data = _frame(df, [y, g, p])
        for name in (g, p):
            if set(np.unique(data[name])) - {0.0, 1.0}:
                raise ValueError(f"'{name}' must be 0/1 for a two-group, two-period difference in differences")
        data = data.assign(d_=data[g] * data[p], g_=data[g], p_=data[p], y_=data[y])
        fit = pf.feols("y_ ~ d_ | g_ + p_", data=data, vcov="hetero")
        label = "heteroskedasticity-robust standard error"
    else:
        u, t, d = opts["unit"], opts["time"], opts["treatment"]
        data = _frame(df, [y, d], [u, t])
        data = data.assign(
            d_=data[d], y_=data[y], u_=pd.factorize(data[u], sort=True)[0], t_=pd.factorize(data[t], sort=True)[0]
        )
        fit = pf.feols("y_ ~ d_ | u_ + t_", data=data, vcov={"CRV1": "u_"})
        label = f"standard error clustered by '{u}' ({data['u_'].nunique()} units)"
    if "d_" not in fit.coef().index:
        raise ValueError("the treatment is absorbed by the unit and period effects: not identified")
    ci = fit.confint().loc["d_"]
    return _result(float(fit.coef()["d_"]), float(fit.se()["d_"]), len(data), label, (ci.iloc[0], ci.iloc[1]))


def _iv(df: pd.DataFrame, opts: dict[str, Any]) -> dict[str, Any]:
    """Two-stage least squares of the outcome on the treatment instrumented by the instrument (robust SE)."""
    from linearmodels.iv import IV2SLS

    y, d, z, controls = opts["outcome"], opts["treatment"], opts["instrument"], list(opts.get("covariates") or [])
    data = _frame(df, [y, d, z, *controls])
    exog = pd.DataFrame({"const": np.ones(len(data))}, index=data.index).join(data[controls])
    fit = IV2SLS(data[y], exog, data[d], data[[z]]).fit(cov_type="robust")
    first = float(fit.first_stage.diagnostics["f.stat"].iloc[0])  # type: ignore[attr-defined]
    ci = fit.conf_int().loc[d]
    return _result(
        float(fit.params[d]),
        float(fit.std_errors[d]),
        len(data),
        "heteroskedasticity-robust standard error",
        (ci.iloc[0], ci.iloc[1]),
        f"first-stage F = {first:.1f}{' (a weak instrument: the interval is not reliable)' if first < 10 else ''}",
        first_stage_f=first,
    )


def _rdd(df: pd.DataFrame, opts: dict[str, Any]) -> dict[str, Any]:
    """rdrobust's local linear fit at the cutoff (MSE-optimal bandwidth), its robust bias-corrected SE and
    interval; fuzzy when a stated treatment column does not follow the cutoff exactly. A question that
    states "the two regressions" (``global``) gets one linear fit on each side over all the rows instead."""
    y, x, cutoff = opts["outcome"], opts["running"], float(opts["cutoff"])
    treatment = opts.get("treatment")
    data = _frame(df, [y, x, *([treatment] if treatment else [])])
    xc = data[x].to_numpy(float) - cutoff
    above = xc >= 0
    if min(above.sum(), (~above).sum()) < 10:
        raise ValueError(f"fewer than 10 rows on one side of {x} = {cutoff:g}")
    if opts.get("global"):
        import statsmodels.api as sm

        design = sm.add_constant(np.column_stack([above, xc, above * xc]).astype(float))
        fit = sm.OLS(data[y].to_numpy(float), design).fit(cov_type="HC1")
        est, se = float(fit.params[1]), float(fit.bse[1])
        return _result(est, se, len(data), "HC1 standard error", notes="one linear fit on each side over all rows")
    from rdrobust import rdrobust

    fuzzy = None
    if treatment:
        t = data[treatment].to_numpy(float)
        off = xc != 0
        if not np.array_equal(above[off], t[off] > 0):
            fuzzy = t
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = rdrobust(data[y].to_numpy(float), data[x].to_numpy(float), c=cutoff, fuzzy=fuzzy)
    est, se = float(res.coef.iloc[0, 0]), float(res.se.iloc[2, 0])
    h = float(res.bws.iloc[0, 0])
    kind = "fuzzy" if fuzzy is not None else "sharp"
    return _result(
        est,
        se,
        len(data),
        "robust bias-corrected standard error (rdrobust)",
        (res.ci.iloc[2, 0], res.ci.iloc[2, 1]),
        f"{kind} design, triangular kernel, MSE-optimal bandwidth {h:.3g} ({int(sum(res.N_h))} rows within it)",
        bandwidth=h,
    )


def _synth(df: pd.DataFrame, opts: dict[str, Any]) -> dict[str, Any]:
    """pysyncon's synthetic control of the one treated unit, fitted on the pre-treatment outcomes; the
    estimate is the mean gap over the treated periods. No standard error: one treated unit gives none."""
    from pysyncon import Dataprep, Synth

    u, t, d, y = opts["unit"], opts["time"], opts["treatment"], opts["outcome"]
    data = _frame(df, [y, d, t], [u])
    treated_units = data.loc[data[d] > 0, u].unique().tolist()
    if len(treated_units) != 1:
        raise ValueError(f"synthetic control needs exactly one treated unit; '{d}' marks {len(treated_units)}")
    unit = treated_units[0]
    start = data.loc[(data[u] == unit) & (data[d] > 0), t].min()
    times = sorted(data[t].unique().tolist())
    pre, post = [v for v in times if v < start], [v for v in times if v >= start]
    if len(pre) < 2:
        raise ValueError("synthetic control needs at least two periods before the treatment")
    controls = [v for v in data[u].unique().tolist() if v != unit]
    prep = Dataprep(
        foo=data,
        predictors=[y],
        predictors_op="mean",
        dependent=y,
        unit_variable=u,
        time_variable=t,
        treatment_identifier=unit,
        controls_identifier=controls,
        time_predictors_prior=pre,
        time_optimize_ssr=pre,
    )
    synth = Synth()
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        synth.fit(dataprep=prep)
        att = synth.att(time_period=post)
    return _result(
        float(att["att"]),
        None,
        len(data),
        "no standard error (one treated unit: placebo inference is not run here)",
        notes=f"treated unit '{unit}', mean gap over {len(post)} treated periods, weights fitted on {len(pre)} before",
    )


def _nearest(source: np.ndarray, target: np.ndarray, k: int) -> np.ndarray:
    from sklearn.neighbors import NearestNeighbors

    return NearestNeighbors(n_neighbors=k).fit(source).kneighbors(target, return_distance=False)


def _matching(df: pd.DataFrame, opts: dict[str, Any]) -> dict[str, Any]:
    """Nearest-neighbour matching with replacement on the covariates scaled by their standard deviations
    (Abadie and Imbens 2006), M matches per unit, with their regression bias adjustment (2011) when asked,
    and their variance: conditional variances from the nearest same-arm neighbour, K_M(i) reuse counts."""
    y_name, d_name, covs, m = opts["outcome"], opts["treatment"], list(opts["covariates"]), int(opts.get("k", 1))
    data, t, y = _arms(df, d_name, y_name, covs)
    if not covs:
        raise ValueError("matching needs covariates to match on")
    x = data[covs].to_numpy(float)
    x = (x - x.mean(axis=0)) / np.where(x.std(axis=0) > 0, x.std(axis=0), 1.0)
    arms = {a: np.flatnonzero(t == a) for a in (0, 1)}
    if min(len(arms[0]), len(arms[1])) <= m:
        raise ValueError("too few units in one arm to match")
    fits = {}
    for a in (0, 1):
        design = np.column_stack([np.ones(len(arms[a])), x[arms[a]]])
        fits[a] = np.linalg.lstsq(design, y[arms[a]], rcond=None)[0]
    mu = {a: np.column_stack([np.ones(len(x)), x]) @ fits[a] for a in (0, 1)}
    imputed = {a: y.copy() for a in (0, 1)}
    reuse = np.zeros(len(y))
    for a in (0, 1):
        own, other = arms[a], arms[1 - a]
        matches = other[_nearest(x[other], x[own], m)]  # each unit of arm a: its M nearest of the other arm
        np.add.at(reuse, matches.ravel(), 1.0 / m)
        value = y[matches].mean(axis=1)
        if opts.get("bias_adjust"):
            value = value + mu[1 - a][own] - mu[1 - a][matches].mean(axis=1)
        imputed[1 - a][own] = value
    sigma2 = np.zeros(len(y))
    for a in (0, 1):
        own = arms[a]
        twin = own[_nearest(x[own], x[own], 2)[:, 1]]  # the nearest other unit of the same arm
        sigma2[own] = 0.5 * (y[own] - y[twin]) ** 2
    gap = imputed[1] - imputed[0]
    if opts.get("estimand") == "att":
        treated = t == 1
        est, n1 = float(gap[treated].mean()), treated.sum()
        var = (((gap - est) ** 2)[treated].sum() + (reuse * (reuse - 1.0 / m) * sigma2)[~treated].sum()) / n1**2
    else:
        est, n = float(gap.mean()), len(y)
        var = (((gap - est) ** 2).sum() + ((reuse**2 + (2 * m - 1) / m * reuse) * sigma2).sum()) / n**2
    return _result(
        est,
        float(np.sqrt(max(var, 0.0))),
        len(y),
        "Abadie-Imbens standard error",
        n_treated=int(t.sum()),
    )


def _stratification(df: pd.DataFrame, opts: dict[str, Any]) -> dict[str, Any]:
    """Strata of a logistic propensity score at its quantiles; the difference in means within each
    stratum, weighted by its units (ATE) or its treated units (ATT); bootstrap standard error."""
    import statsmodels.api as sm

    y_name, d_name, covs, k = opts["outcome"], opts["treatment"], list(opts["covariates"]), int(opts.get("strata", 5))
    data, t, y = _arms(df, d_name, y_name, covs)
    if not covs:
        raise ValueError("stratification needs covariates for the propensity score")
    x = sm.add_constant(data[covs].to_numpy(float), has_constant="add")
    ps = sm.Logit(t, x).fit(disp=0, method="bfgs", maxiter=500).predict(x)
    edges = np.quantile(ps, np.linspace(0, 1, k + 1)[1:-1])
    stratum = np.searchsorted(edges, ps, side="right")

    def once(rows: np.ndarray) -> float:
        s, tt, yy = stratum[rows], t[rows], y[rows]
        total, weight = 0.0, 0.0
        for j in range(k):
            cell = s == j
            if (tt[cell] == 1).any() and (tt[cell] == 0).any():
                w = float((tt[cell] == 1).sum() if opts.get("estimand") == "att" else cell.sum())
                total += w * (yy[cell & (tt == 1)].mean() - yy[cell & (tt == 0)].mean())
                weight += w
        return total / weight

    every = np.arange(len(y))
    est = once(every)
    empty = sum(not ((t[stratum == j] == 1).any() and (t[stratum == j] == 0).any()) for j in range(k))
    rng = np.random.default_rng(int(opts.get("seed", 0)))
    draws = [once(rng.integers(0, len(y), len(y))) for _ in range(int(opts.get("bootstrap", 200)))]
    notes = f"{k} strata at the propensity score's quantiles"
    if empty:
        notes += f", {empty} of them lacking one arm and left out"
    label = f"bootstrap standard error ({len(draws)} resamples, strata held fixed)"
    return _result(est, float(np.std(draws, ddof=1)), len(y), label, notes=notes, n_treated=int(t.sum()))


_DESIGNS = {
    "did": _did,
    "iv": _iv,
    "rdd": _rdd,
    "synth": _synth,
    "matching": _matching,
    "stratification": _stratification,
}


def design_effect(df: pd.DataFrame, opts: dict[str, Any]) -> dict[str, Any]:
    """The effect by the design ``opts['design']`` names, with the roles the options give."""
    return _DESIGNS[opts["design"]](df, opts)
