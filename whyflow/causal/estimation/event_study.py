"""Staggered adoption: a heterogeneity-robust ATT and its event-time coefficients, through pyfixest ``did2s``.

When units adopt the treatment at different periods, two-way fixed effects also compares later adopters
with earlier ones whose effect is already under way, and is biased when effects differ by cohort or grow
over time (Goodman-Bacon 2021). Gardner's two-stage estimator (2021; numerically the imputation estimator of
Borusyak, Jaravel and Spiess 2024) fits the unit and period effects on untreated rows only (never-treated
units and the not-yet-treated rows of later adopters) and averages what remains over the treated rows: the
ATT over treated unit-periods, whatever the cohorts' effects. Its event-time form gives one coefficient per
period relative to adoption; those before adoption are the pre-trends, jointly tested with the package's
GMM covariance (clustered by unit).

Periods in which every unit is treated have no untreated row to build the counterfactual from, and units
never untreated have no unit effect: both are left out of the robust estimate, and the details say so.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

__all__ = ["staggered_att", "event_time"]

_Y, _D, _U, _T = "y_", "d_", "unit_", "time_"
_REL, _NEVER = "rel_", -10_000


def _identifiable(data: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, int]]:
    """The rows whose unit and period both have an untreated row, with ``treat_`` and ``rel_`` (event time,
    :data:`_NEVER` for never-treated units), and how many rows, units and periods were left out."""
    panel = data.assign(treat_=(data[_D] != 0))
    untreated = panel[~panel["treat_"]]
    keep = panel[_U].isin(untreated[_U].unique()) & panel[_T].isin(untreated[_T].unique())
    dropped = {
        "rows_left_out": int((~keep).sum()),
        "units_never_untreated": int(panel[_U].nunique() - untreated[_U].nunique()),
        "periods_all_treated": int(panel[_T].nunique() - untreated[_T].nunique()),
    }
    panel = panel[keep].reset_index(drop=True)
    start = panel[panel["treat_"]].groupby(_U)[_T].min()
    first = panel[_U].map(start)
    panel[_REL] = (panel[_T] - first).fillna(_NEVER).astype(int)
    return panel, dropped


def _fit(panel: pd.DataFrame, second_stage: str, cluster: str, covariates: Sequence[str]) -> Any:
    """pyfixest ``did2s``: unit and period effects (and ``covariates``) fitted on the untreated rows."""
    import pyfixest as pf

    first = " + ".join(covariates) or "0"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pf.did2s(
            panel,
            yname=_Y,
            first_stage=f"~ {first} | {_U} + {_T}",
            second_stage=second_stage,
            treatment="treat_",
            cluster=cluster,
        )


def staggered_att(data: pd.DataFrame, cluster: str = _U, covariates: Sequence[str] = ()) -> dict[str, Any]:
    """Gardner's two-stage ATT over the treated rows (pyfixest ``did2s``), SE clustered by ``cluster`` (GMM),
    the interval from the t distribution with (clusters - 1) degrees of freedom.

    ``data`` holds y_, d_, unit_ and time_ as :func:`whyflow.causal.estimation.designs_did.did_panel` gives them,
    and the ``cluster`` and ``covariates`` columns named.
    """
    panel, dropped = _identifiable(data)
    if not panel["treat_"].any():
        raise ValueError("no treated row has a unit and period with untreated rows to compare with")
    fit = _fit(panel, "~ treat_", cluster, covariates)
    coef, se = fit.coef(), fit.se()
    name = next(k for k in coef.index if "treat_" in k)
    est, err = float(coef[name]), float(se[name])
    n_units = int(panel[_U].nunique())
    dof = max(int(panel[cluster].nunique()) - 1, 1)
    q = float(stats.t.ppf(0.975, dof))
    return {
        "estimate": round(est, 6),
        "std_error": round(err, 6),
        "ci": [round(est - q * err, 6), round(est + q * err, 6)],
        "p_value": float(2 * stats.t.sf(abs(est / err), dof)) if err > 0 else float("nan"),
        "library": "pyfixest did2s",
        "n_rows": int(len(panel)),
        "n_units": n_units,
        "n_treated_rows": int(panel["treat_"].sum()),
        **dropped,
    }


def _coefficient(when: int, est: float, se: float, q: float) -> dict[str, Any]:
    """One event time's coefficient, its standard error and its 95% interval (``q`` the t quantile)."""
    return {
        "event_time": when,
        "estimate": round(est, 6),
        "std_error": round(se, 6),
        "ci": [round(est - q * se, 6), round(est + q * se, 6)],
    }


def event_time(
    data: pd.DataFrame, cluster: str = _U, covariates: Sequence[str] = (), max_lead: int = 6, max_lag: int = 8
) -> dict[str, Any]:
    """Coefficients by period relative to adoption (two-stage, unit-clustered), and the joint pre-trend test.

    Event times further out than ``max_lead`` before or ``max_lag`` after adoption are binned into the
    end points (few units reach them; ``pooled_ends`` names the end points that pool further ones). Before
    adoption the coefficients are the average residual of the not-yet-treated rows of future adopters after
    unit and period effects: zero under parallel trends. Each coefficient's 95% interval is from the t
    distribution with (clusters - 1) degrees of freedom, as the headline's is.
    """
    panel, dropped = _identifiable(data)
    treated = panel[_REL] != _NEVER
    rel = panel.loc[treated, _REL]
    pooled = [end for end, beyond in ((-max_lead, rel < -max_lead), (max_lag, rel > max_lag)) if beyond.any()]
    panel.loc[treated, _REL] = rel.clip(-max_lead, max_lag)
    fit = _fit(panel, f"~ i({_REL}, ref={_NEVER})", cluster, covariates)
    coef, se = fit.coef(), fit.se()
    q = float(stats.t.ppf(0.975, max(int(panel[cluster].nunique()) - 1, 1)))
    times = {k: int(k.split("::")[-1]) for k in coef.index if "::" in k}
    rows = [_coefficient(times[k], float(coef[k]), float(se[k]), q) for k in sorted(times, key=times.__getitem__)]
    out: dict[str, Any] = {
        "coefficients": rows,
        "pooled_ends": pooled,
        "library": "pyfixest did2s (event-time second stage)",
        **dropped,
    }
    leads = [k for k in times if times[k] < 0]
    if not leads:
        out["pretrend_skipped"] = "no adopter is seen before it adopts: pre-trends cannot be tested"
        return out
    idx = [list(coef.index).index(k) for k in leads]
    b = np.asarray(coef.to_numpy()[idx], dtype=float)
    vcov = np.asarray(fit._vcov, dtype=float)[np.ix_(idx, idx)]
    wald = float(b @ np.linalg.pinv(vcov) @ b)
    dof = int(np.linalg.matrix_rank(vcov))
    out["pretrend_wald"] = round(wald, 4)
    out["pretrend_df"] = dof
    out["pretrend_p"] = float(stats.chi2.sf(wald, dof)) if dof else float("nan")
    return out
