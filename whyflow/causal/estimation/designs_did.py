"""Difference-in-differences: two-way fixed effects through pyfixest, SEs clustered by unit.

The panel named by ``--unit``/``--time`` may hold several rows per unit and period (repeated
cross-sections: pupils within schools before and after, stores in two waves with a 0/1 period
column): pyfixest absorbs unit and period effects from the rows as they are, where
linearmodels' PanelOLS refuses a duplicated index. ``--group``/``--period`` state such a repeated
cross-section outright. Where its rows fall in fewer than :data:`FEW_GROUPS` groups, errors
clustered by group are not credible (with two groups and two periods each cluster's score sums to
zero and the "interval" is 10⁻⁹ wide): heteroskedasticity-robust errors on the rows replace them,
which take the individuals as independent draws and the groups' period shocks as absent, the
assumption a handful of groups identifies the effect under anyway. With staggered adoption TWFE compares
later with earlier adopters and can be biased when effects differ by cohort or grow over time
(Goodman-Bacon 2021); Gardner's two-stage estimator (:mod:`whyflow.causal.estimation.event_study`), which
builds the counterfactual from untreated rows only, is then the answer, with TWFE beside it and the
event-time coefficients (pre-trends) in the details. With a single
treated unit the clustered interval is replaced by placebo-in-space permutation inference
(:mod:`whyflow.causal.estimation.did_permutation`) where there are enough units for it.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from whyflow.causal.estimation.backdoor import Estimate
from whyflow.core.errors import AgentError

__all__ = ["FEW_GROUPS", "MANY_ROWS", "did_twfe", "did_panel"]

_Y, _D, _U, _T, _C = "y_", "d_", "unit_", "time_", "cluster_"
FEW_GROUPS = 10
"""A repeated cross-section in fewer groups than this gets row-level robust errors, not errors clustered by group."""
MANY_ROWS = 5
"""Median rows per unit and period from which an unstated ``--unit`` is read as groups of individuals."""


def did_panel(
    frame: pd.DataFrame,
    unit: str,
    time: str,
    treatment: str,
    outcome: str,
    cluster: str | None = None,
    covariates: Sequence[str] = (),
) -> pd.DataFrame:
    """The complete, finite rows as a frame of y_, d_ (numeric), unit_ and time_ (integer codes, time ordered),
    cluster_ (codes of a stated ``--cluster`` column) when ``cluster`` is given, and the numeric ``covariates``."""
    for col in (unit, time, treatment, outcome, *([cluster] if cluster else [])):
        if col not in frame.columns:
            raise AgentError(f"column '{col}' is not in the data")
    cols = [unit, time, treatment, outcome, *([cluster] if cluster else []), *covariates]
    sub = pd.DataFrame({c: frame[c] for c in dict.fromkeys(cols)}).dropna()
    if not pd.api.types.is_numeric_dtype(sub[outcome]):
        raise AgentError(f"outcome '{outcome}' is not numeric ({sub[outcome].dtype})")
    d = sub[treatment]
    if not (pd.api.types.is_numeric_dtype(d) or pd.api.types.is_bool_dtype(d)):
        from whyflow.causal.discovery.adjustment import encode_treatment

        d = pd.Series(encode_treatment(d)[0], index=sub.index)
    data = pd.DataFrame(
        {
            _Y: sub[outcome].astype(float).to_numpy(),
            _D: d.astype(float).to_numpy(),
            _U: pd.factorize(sub[unit], sort=True)[0],
            _T: pd.factorize(sub[time], sort=True)[0],
            **({_C: pd.factorize(sub[cluster], sort=True)[0]} if cluster else {}),
            **{c: sub[c].astype(float).to_numpy() for c in covariates},
        }
    )
    data = data[np.isfinite(data[_Y]) & np.isfinite(data[_D])].reset_index(drop=True)
    if len(data) < 20:
        raise AgentError(f"only {len(data)} complete rows of ({unit}, {time}, {treatment}, {outcome}); too few")
    return data


def _identified(data: pd.DataFrame, unit: str, time: str, treatment: str) -> None:
    """Raise with the reason when unit or period effects absorb the treatment."""
    if data[_D].nunique() < 2:
        raise AgentError(f"treatment '{treatment}' takes a single value in the panel: there is no comparison")
    if data.groupby(_U)[_T].nunique().max() < 2:
        raise AgentError(
            f"each unit of '{unit}' is seen in one period of '{time}' only: unit effects would absorb every row; "
            "for repeated cross-sections give the group the units belong to (site, state) and the period: --group "
            "GROUP --period PERIOD"
        )
    if not (data.groupby(_U)[_D].nunique() > 1).any():
        raise AgentError(
            f"treatment '{treatment}' never changes within a unit of '{unit}': the unit fixed effects absorb it, so "
            "difference-in-differences cannot separate its effect from fixed unit differences (give a treated x "
            "post indicator, or a unit column within which the treatment switches)"
        )
    if not (data.groupby(_T)[_D].nunique() > 1).any():
        raise AgentError(
            f"treatment '{treatment}' is the same for every unit within each period of '{time}': the period effects "
            "absorb it, so there is no untreated comparison group"
        )


def _adoption(data: pd.DataFrame) -> tuple[pd.Series, bool]:
    """First treated period of each ever-treated unit, and whether treatment, once on, stays on."""
    treated = data[data[_D] != 0]
    starts = treated.groupby(_U)[_T].min()
    later = data.merge(starts.rename("start"), left_on=_U, right_index=True)
    absorbing = bool((later.loc[later[_T] >= later["start"], _D] != 0).all())
    return starts, absorbing


def _staggered(
    data: pd.DataFrame,
    by: str,
    names: Sequence[str],
    twfe: tuple[float, float, tuple[float, float], float],
    details: dict[str, Any],
    assumptions: list[str],
) -> tuple[float, float, tuple[float, float], float] | None:
    """Staggered absorbing adoption: Gardner's two-stage ATT replaces TWFE as the answer (TWFE kept beside it in
    ``details['twfe']``) and the event-time coefficients go in ``details['event_study']``; ``None`` (TWFE stays,
    ``details['staggered_skipped']`` says why) when the two-stage estimator cannot run."""
    from whyflow.causal.estimation.event_study import event_time, staggered_att

    est, se, ci, p = twfe
    details["twfe"] = {"estimate": round(est, 6), "std_error": round(se, 6), "ci": [round(ci[0], 6), round(ci[1], 6)]}
    try:
        robust = staggered_att(data, by, names)
    except Exception as exc:  # noqa: BLE001 - TWFE stays the answer, and the review reads why
        details["staggered_skipped"] = f"the two-stage estimator could not run: {' '.join(str(exc).split())[:200]}"
        return None
    details["did2s_check"] = robust
    try:
        details["event_study"] = event_time(data, by, names)
    except Exception as exc:  # noqa: BLE001 - the headline stands; the pre-trend test says it did not run
        details["event_study"] = {"skipped": f"event-time coefficients failed: {' '.join(str(exc).split())[:200]}"}
    details["library"] = "pyfixest did2s (Gardner's two-stage DiD); TWFE by pyfixest feols beside it"
    details["staggered_estimator"] = (
        "Gardner's two-stage DiD (the imputation estimator): unit and period effects fitted on untreated rows "
        "only (never-treated units and not-yet-treated rows), the ATT averaged over treated unit-periods, "
        "robust to effects that differ by cohort or over time"
    )
    details["se_method"] = f"GMM two-stage, clustered ({int(data[by].nunique())} clusters)"
    details["ci_method"] = f"t distribution with {int(data[by].nunique()) - 1} degrees of freedom (clusters - 1)"
    left = {k: robust[k] for k in ("rows_left_out", "units_never_untreated", "periods_all_treated") if robust[k]}
    if left:
        details["staggered_left_out"] = (
            f"{robust['rows_left_out']} rows have no untreated row in their unit or period to build the "
            f"counterfactual from ({robust['periods_all_treated']} periods in which every unit is treated, "
            f"{robust['units_never_untreated']} units treated throughout) and are left out of the two-stage ATT"
        )
    assumptions[-1] = (
        "staggered adoption: parallel trends for every cohort against the not-yet-treated and never-treated"
    )
    lo, hi = (float(v) for v in robust["ci"])
    return float(robust["estimate"]), float(robust["std_error"]), (lo, hi), float(robust["p_value"])


def _one_treated_unit(
    data: pd.DataFrame,
    est: float,
    se: float,
    ci: tuple[float, float],
    p: float,
    details: dict[str, Any],
    assumptions: list[str],
) -> tuple[float, float, tuple[float, float], float]:
    """With one treated unit the clustered interval is not credible: placebo-in-space permutation
    inference replaces it where enough units allow a finite 95% interval (the clustered numbers are kept in
    ``details``); otherwise it stays, and ``details['permutation']`` says why it cannot be trusted."""
    from whyflow.causal.estimation.did_permutation import placebo_in_space

    try:
        perm = placebo_in_space(data)
    except Exception as exc:  # noqa: BLE001 - the clustered interval stays, and the review refuses it
        perm = {"ci": None, "reason": f"permutation inference failed: {str(exc)[:200]}"}
    details["permutation"] = perm
    details["clustered_se"], details["clustered_ci"] = round(se, 6), [round(ci[0], 6), round(ci[1], 6)]
    if perm["ci"] is None:
        assumptions.append(
            "only one treated unit: SEs clustered by unit are not credible with a single treated cluster, and "
            "permutation inference gives no finite interval here"
        )
        return est, se, ci, p
    lo, hi = (float(v) for v in perm["ci"])
    n = perm["n_units_compared"]
    details["ci_method"] = (
        f"placebo-in-space permutation over {n} units (the treated one and {n - 1} untreated units each given its "
        "treatment path), 95% interval by test inversion; the standard error is the interval's half-width / 1.96"
    )
    details["se_method"] = "implied by the permutation interval (clustered SE kept as clustered_se)"
    assumptions.append(
        "one treated unit: units are exchangeable (the treated unit's deviation from the common trend is like an "
        "untreated unit's), which the permutation interval rests on"
    )
    return est, (hi - lo) / (2 * 1.959964), (lo, hi), float(perm["p_value"])


def _row_level(data: pd.DataFrame, cross_section: bool) -> bool:
    """Whether the errors are row-level robust: a repeated cross-section (stated, or a typical unit and
    period holding at least :data:`MANY_ROWS` rows, not a panel's odd repeated row) in fewer than
    :data:`FEW_GROUPS` groups."""
    typical = float(data.groupby([_U, _T]).size().median())
    return (cross_section or typical >= MANY_ROWS) and int(data[_U].nunique()) < FEW_GROUPS


def _rows_note(details: dict[str, Any], n_groups: int, n_rows: int, assumptions: list[str]) -> None:
    """Say that, and why, the errors are row-level robust rather than clustered by group."""
    details["se_method"] = "heteroskedasticity-robust at the row level (HC1), not clustered by group"
    details["ci_method"] = f"t distribution with the rows' residual degrees of freedom ({n_rows:,} rows)"
    details["row_level_errors"] = (
        f"a repeated cross-section in {n_groups} groups: errors clustered on {n_groups} groups are not credible "
        f"(fewer than {FEW_GROUPS}), so the interval treats the individuals as independent draws within each "
        "group and period"
    )
    assumptions.append(
        "individuals are independent draws within each group and period, with no group-by-period shocks beyond "
        "the treatment (what identifies the effect with this few groups)"
    )


def did_twfe(
    frame: pd.DataFrame,
    unit: str,
    time: str,
    treatment: str,
    outcome: str,
    cluster: str | None = None,
    covariates: pd.DataFrame | None = None,
    cross_section: bool = False,
) -> Estimate:
    """Two-way fixed effects DiD: y_it = a_i + g_t + tau D_it, SEs clustered by unit (CRV1).

    Several rows per unit and period are allowed. The interval and p-value use the t
    distribution with (clusters - 1) degrees of freedom, as pyfixest reports them. A stated
    ``cluster`` column (``--cluster``) is where the errors are clustered instead of the unit.
    ``covariates`` (stated controls, encoded, aligned with ``frame``'s rows) enter the regression beside
    the treatment; those the unit or period effects absorb are dropped by pyfixest and named. Unless a
    cluster is stated, a repeated cross-section (``cross_section``: the unit is a group of individuals)
    in fewer than :data:`FEW_GROUPS` groups gets heteroskedasticity-robust row-level errors (HC1) instead.
    """
    import pyfixest as pf

    names: list[str] = []
    if covariates is not None and covariates.shape[1]:
        names = [f"cov{i}_" for i in range(covariates.shape[1])]
        frame = pd.concat(
            [frame.reset_index(drop=True), covariates.set_axis(names, axis=1).reset_index(drop=True)], axis=1
        )
    data = did_panel(frame, unit, time, treatment, outcome, cluster if cluster not in (None, unit) else None, names)
    by = _C if _C in data.columns else _U
    _identified(data, unit, time, treatment)
    rows = cluster is None and _row_level(data, cross_section)  # a stated cluster is the analyst's contract
    rhs = " + ".join([_D, *names])
    vcov: Any = {"CRV1": by} if cluster is not None else ("hetero" if rows else {"CRV1": _U})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = pf.feols(f"{_Y} ~ {rhs} | {_U} + {_T}", data=data, vcov=vcov)
    if _D not in fit.coef().index:
        raise AgentError(f"treatment '{treatment}' is collinear with the unit and period effects: not identified")
    est, se = float(fit.coef()[_D]), float(fit.se()[_D])
    ci_frame = fit.confint()
    ci = (float(ci_frame.loc[_D].iloc[0]), float(ci_frame.loc[_D].iloc[1]))
    p = float(fit.pvalue()[_D])
    starts, absorbing = _adoption(data)
    n_units = int(data[_U].nunique())
    n_treated = int(starts.size)
    staggered = bool(starts.nunique() > 1)
    rows_per_cell = int(data.groupby([_U, _T]).size().max())
    never = n_units - n_treated
    assumptions = [
        "parallel trends between treated and control units",
        "no anticipation",
        "no spillovers between units",
    ]
    details: dict[str, Any] = {
        "library": "pyfixest feols (unit and period fixed effects)",
        "se_method": "clustered by unit",
        "n_obs": int(fit._N),
        "n_units": n_units,
        "n_periods": int(data[_T].nunique()),
        "n_treated_units": n_treated,
        "n_never_treated_units": never,
        "staggered_adoption": staggered,
        "absorbing_treatment": absorbing,
        "rows_per_unit_period": rows_per_cell,
        "repeated_cross_section": rows_per_cell > 1,
        "single_treated_unit": n_treated == 1,
        "ci_method": f"t distribution with {n_units - 1} degrees of freedom (clusters - 1)",
    }
    if names:
        assert covariates is not None
        label = dict(zip(names, map(str, covariates.columns), strict=True))
        details["covariates_used"] = [label[c] for c in names if c in fit.coef().index]
        details["covariates_absorbed"] = [label[c] for c in names if c not in fit.coef().index]
    if cluster is not None:
        n_clusters = int(data[by].nunique())
        details["se_method"] = f"clustered by {cluster} ({n_clusters} clusters)"
        details["ci_method"] = f"t distribution with {n_clusters - 1} degrees of freedom (clusters - 1)"
        details["clustered_by"] = cluster
    if cross_section:
        details["repeated_cross_section_stated"] = True
    if rows:
        _rows_note(details, n_units, int(fit._N), assumptions)
    elif n_treated == 1:
        est, se, ci, p = _one_treated_unit(data, est, se, ci, p, details, assumptions)
    method = "Difference-in-differences (TWFE)"
    if staggered:
        details["twfe_note"] = (
            "adoption is staggered: TWFE also compares later with earlier adopters and can be biased when effects "
            "differ by cohort or change over time (Goodman-Bacon 2021)"
        )
        assumptions.append("staggered adoption: homogeneous effects across cohorts and over time (for TWFE)")
        if not absorbing:
            details["staggered_skipped"] = (
                "the treatment switches off again in some units: the two-stage estimator needs adoption that stays "
                "on, so TWFE is the answer"
            )
        elif rows:
            details["staggered_skipped"] = (
                f"only {n_units} groups: the two-stage estimator's clustered errors are not credible, so TWFE with "
                "row-level errors is the answer"
            )
        else:
            robust = _staggered(data, by, names, (est, se, ci, p), details, assumptions)
            if robust is not None:
                est, se, ci, p = robust
                method = "Difference-in-differences (two-stage, staggered adoption)"
    return Estimate(method, "ATT", est, se, ci, p, assumptions, details)
