"""Does an imputed confounder move the answer? The effect on all rows against the complete cases.

Why: data repair fills a confounder's gaps with its median and adds a ``<col>_missing``
indicator. An imputed confounder adjusts only partly for what it measures, so the review keeps
such an answer unapproved ("residual confounding: income imputed for 25% of rows"). That doubt is
settled by the data when the rows where the confounder was measured give the same answer: the
complete-case regression adjusts for the real values, and is unbiased whenever missingness does
not depend on the outcome given the covariates. Where the two agree within a standard error the
imputation does not matter; where they disagree, the doubt stays and the answer is refused.

The backdoor estimators themselves adjust on the complete cases (:func:`complete_case_frame`): the
median fill and its indicator are the missing-indicator method, biased whenever the confounder
matters (Greenland & Finkle 1995), while the rows where it was measured are not, unless where it is
missing depends on the outcome. That is checked too: a logistic regression of the indicator on the
outcome, the treatment and the other covariates; an outcome that predicts the gaps (p below
:data:`OUTCOME_P`) leaves the answer unapproved where the complete cases and all rows disagree (where
they agree, the answer is the same either way).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["MIN_SHARE", "OUTCOME_P", "SUFFIX", "complete_case_check", "complete_case_frame"]

SUFFIX = "_missing"
MIN_SHARE = 0.05
"""Imputed share above which the check is run (data repair adds the indicator above this share)."""
OUTCOME_P = 0.01
"""p-value of the outcome in the model of where a confounder is missing below which the complete cases are doubted."""


def _ols(sub: pd.DataFrame, t: str, y: str, cols: list[str]) -> tuple[float, float]:
    import statsmodels.api as sm

    from whyflow.causal.discovery.adjustment_rules import design

    X = np.column_stack([np.ones(len(sub)), sub[t].to_numpy(float), design(sub, cols)])
    fit = sm.OLS(sub[y].to_numpy(float), X).fit(cov_type="HC1")
    return float(fit.params[1]), float(fit.bse[1])


def complete_case_check(
    frame: pd.DataFrame, t: str, y: str, adjust: list[str], max_rows: int = 20000
) -> dict[str, dict[str, Any]]:
    """For each adjusted column with a ``<col>_missing`` indicator in ``adjust``: the OLS effect on all rows
    (imputed values and the indicator, ``with``) and on the rows where it was measured (``without``), with
    HC1 standard errors, the complete rows and the imputed share. Columns that cannot be checked are absent.
    """
    out: dict[str, dict[str, Any]] = {}
    if t not in frame.columns or y not in frame.columns or not pd.api.types.is_numeric_dtype(frame[t]):
        return out
    for ind in adjust:
        col = ind[: -len(SUFFIX)]
        if not ind.endswith(SUFFIX) or col not in adjust or ind not in frame.columns:
            continue
        sub = frame[[t, y, *adjust]].dropna()
        if len(sub) > max_rows:
            sub = sub.sample(n=max_rows, random_state=0)
        flag = pd.to_numeric(sub[ind], errors="coerce").fillna(1).to_numpy() != 0
        share = float(flag.mean())
        complete = sub.loc[~flag]
        if share <= MIN_SHARE or len(complete) < 30 or complete[t].nunique() < 2:
            continue
        try:
            est, se = _ols(sub, t, y, list(adjust))
            cc, cc_se = _ols(complete, t, y, [c for c in adjust if c != ind])
        except (ValueError, np.linalg.LinAlgError):
            continue
        out[col] = {
            "with": est,
            "se_with": se,
            "without": cc,
            "se_without": cc_se,
            "n_complete": len(complete),
            "share_imputed": round(share, 4),
        }
    return out


def _outcome_p(flag: np.ndarray, sub: pd.DataFrame, t: str, y: str, others: list[str]) -> float | None:
    """p-value of the outcome in a logit of ``flag`` (1 = imputed) on the outcome, treatment and ``others``."""
    import statsmodels.api as sm

    from whyflow.causal.discovery.adjustment_rules import design

    if flag.all() or not flag.any():
        return None
    X = np.column_stack([np.ones(len(sub)), sub[y].to_numpy(float), sub[t].to_numpy(float), design(sub, others)])
    try:
        fit = sm.Logit(flag.astype(float), X).fit(disp=0, maxiter=100)
    except Exception:  # noqa: BLE001 - separation, a singular design: the check cannot run, which it reports as None
        return None
    p = float(fit.pvalues[1])
    return p if np.isfinite(p) else None


def complete_case_frame(
    frame: pd.DataFrame, t: str, y: str, covariates: list[str]
) -> tuple[pd.DataFrame, list[str], dict[str, dict[str, Any]]]:
    """The estimators' complete cases for each imputed confounder of ``covariates``.

    A confounder ``c`` with its ``c_missing`` indicator among ``covariates``, imputed for more than
    :data:`MIN_SHARE` of the rows, gets its filled values set back to missing (in a copy; ``frame`` is not
    changed), so the estimators' complete cases are the rows where it was measured, and its indicator
    (constant there) leaves the covariates. Returns the frame, the covariates and, per such column, the
    imputed share, the rows kept and the outcome's p-value in the model of where it is missing.
    """
    found: dict[str, np.ndarray] = {}
    for ind in covariates:
        col = ind[: -len(SUFFIX)]
        if not ind.endswith(SUFFIX) or col not in covariates or ind not in frame.columns or col not in frame.columns:
            continue
        flag = pd.to_numeric(frame[ind], errors="coerce").fillna(1).to_numpy() != 0
        if flag.mean() > MIN_SHARE and (~flag).sum() >= 30:
            found[col] = flag
    if not found:
        return frame, covariates, {}
    kept = [c for c in covariates if c not in {f"{col}{SUFFIX}" for col in found}]
    masked = frame.assign(**{col: frame[col].mask(flag) for col, flag in found.items()})
    used = frame[[t, y, *covariates]].notna().all(axis=1).to_numpy()
    info: dict[str, dict[str, Any]] = {}
    for col, flag in found.items():
        sub = frame.loc[used]
        others = [c for c in kept if c != col]
        info[col] = {
            "share_imputed": round(float(flag[used].mean()), 4),
            "n_complete": int((~flag & used).sum()),
            "outcome_p": _outcome_p(flag[used], sub, t, y, others) if pd.api.types.is_numeric_dtype(frame[t]) else None,
        }
    return masked, kept, info
