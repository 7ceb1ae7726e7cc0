"""Does an imputed confounder move the answer? The effect on all rows against the complete cases.

Why: data repair fills a confounder's gaps with its median and adds a ``<col>_missing``
indicator. An imputed confounder adjusts only partly for what it measures, so the review keeps
such an answer unapproved ("residual confounding: income imputed for 25% of rows"). That doubt is
settled by the data when the rows where the confounder was measured give the same answer: the
complete-case regression adjusts for the real values, and is unbiased whenever missingness does
not depend on the outcome given the covariates. Where the two agree within a standard error the
imputation does not matter; where they disagree, the doubt stays and the answer is refused.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["MIN_SHARE", "SUFFIX", "complete_case_check"]

SUFFIX = "_missing"
MIN_SHARE = 0.05
"""Imputed share above which the check is run (data repair adds the indicator above this share)."""


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
