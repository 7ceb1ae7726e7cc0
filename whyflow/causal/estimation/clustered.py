"""A stated cluster column (``--cluster``): which estimators cluster their errors on it, and how.

Rows of one cluster (pupils of a school, visits of a patient, counties of a state) share shocks,
so errors computed as if every row were independent are too small. The estimators that have a
maintained cluster-robust variance use it on the stated column: regression adjustment
(statsmodels OLS, ``cov_type="cluster"``, CR1 with the small-sample factor), 2SLS (linearmodels
``cov_type="clustered"``), difference in differences (pyfixest CRV1) and the discontinuity
(rdrobust's ``cluster=``). The weighting, matching and learner estimators have none here: each
of their estimates says so (``details["cluster_not_applied"]``), and with a stated cluster the
headline is an estimate whose errors are clustered.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from whyflow.causal.estimation.backdoor import UNCONFOUNDED, Estimate, normal_ci
from whyflow.core.errors import AgentError

__all__ = ["CLUSTERED_KEYS", "MIN_CLUSTERS", "cluster_codes", "not_clustered", "ols_clustered"]

CLUSTERED_KEYS = ("ols", "iv", "did", "rdd")
"""The estimators that cluster their errors on a stated ``--cluster`` column."""
MIN_CLUSTERS = 5
"""Fewest clusters for a cluster-robust variance worth reporting (with fewer it is not estimable)."""


def cluster_codes(frame: pd.DataFrame, rows: np.ndarray | None, column: str) -> np.ndarray:
    """Integer cluster codes of the analysed ``rows`` (the data's row labels; all rows when ``None``).

    A missing cluster value is its own cluster per row (nothing says which rows it shares shocks with).
    """
    values = frame[column] if rows is None else frame[column].loc[rows]
    codes, _ = pd.factorize(values, sort=True)
    lonely = codes < 0
    if lonely.any():
        codes = codes.copy()
        codes[lonely] = codes.max() + 1 + np.arange(int(lonely.sum()))
    n = int(np.unique(codes).size)
    if n < MIN_CLUSTERS:
        raise AgentError(
            f"--cluster '{column}' has {n} cluster(s) among the analysed rows: too few for cluster-robust errors "
            f"(at least {MIN_CLUSTERS})"
        )
    return codes


def ols_clustered(X: pd.DataFrame, t: np.ndarray, y: np.ndarray, groups: np.ndarray, column: str) -> Estimate:
    """Regression adjustment y ~ 1 + t + X by statsmodels OLS, errors clustered on ``groups`` (CR1)."""
    import statsmodels.api as sm

    design = np.column_stack([np.ones(len(y)), np.asarray(t, float), X.to_numpy(float)])
    fit = sm.OLS(np.asarray(y, float), design).fit(cov_type="cluster", cov_kwds={"groups": groups})
    est, se = float(fit.params[1]), float(fit.bse[1])
    ci, p = normal_ci(est, se)
    n_clusters = int(np.unique(groups).size)
    details: dict[str, Any] = {
        "library": "statsmodels OLS (cov_type='cluster')",
        "se_method": f"clustered by {column} ({n_clusters} clusters, CR1)",
        "clustered_by": column,
        "n_clusters": n_clusters,
        "r_squared": round(float(fit.rsquared), 4),
    }
    assumptions = [UNCONFOUNDED, "outcome linear in the covariates", "constant effect (no interactions)"]
    assumptions.append(f"errors independent across clusters of {column}")
    return Estimate("Regression adjustment (OLS)", "ATE", est, se, ci, p, assumptions, details)


def not_clustered(label: str, column: str) -> str:
    """What an estimate without cluster-robust errors says about a stated cluster."""
    return (
        f"{label} has no cluster-robust variance here: its standard error treats rows as independent, "
        f"not clustered by {column} as stated"
    )
