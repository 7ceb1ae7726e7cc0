"""One treatment-outcome pair set up for estimation: its data, adjustment, design and propensity.

Kept apart from the estimation steps so the method registry and the headline menu can name the
type without importing the code that builds it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from whyflow.causal.discovery.adjustment import Adjustment, Prepared
from whyflow.causal.estimation.nuisance import FOLDS, Nuisance
from whyflow.core.errors import AgentError

__all__ = ["NuisanceUnavailable", "PairSetup", "covariates_of", "dowhy_of"]


class NuisanceUnavailable(AgentError):
    """An estimator needs the pair's cross-fitted propensity and outcome models, and they could not be fitted."""


@dataclass
class PairSetup:
    """Everything the estimators need for one pair, and what was decided while building it."""

    treatment: str
    outcome: str
    frame: pd.DataFrame
    adjustment: Adjustment
    prep: Prepared
    estimand: str
    design: dict[str, Any]
    seed: int
    bootstrap: int
    ps_model: str = "logistic"
    ps: np.ndarray | None = None
    overlap: dict[str, Any] | None = None
    trim: dict[str, Any] | None = None
    changes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    nuisance: Nuisance | None = None
    nuisance_failed: str | None = None
    """Why the cross-fitted nuisance models of a binary treatment could not be fitted (``None`` when they were):
    the estimators that read them fail with this reason, the others still run."""
    folds: int = FOLDS
    precision: pd.DataFrame | None = None
    cache_dir: Any = None
    _dowhy: Any = None
    _cov_frame: pd.DataFrame | None = None
    _cov_of: Prepared | None = None
    _design: np.ndarray | None = None
    _design_of: Prepared | None = None

    @property
    def binary(self) -> bool:
        """Whether the treatment is binary (backdoor estimators apply): it has propensity scores, or the
        fit that makes them failed (:attr:`nuisance_failed`)."""
        return self.ps is not None or self.nuisance_failed is not None

    @property
    def no_covariates(self) -> bool:
        """Whether the adjustment set is empty (after encoding)."""
        return not set(self.prep.X.columns) - set(self.design.get("_design_cols", []))

    @property
    def covariates(self) -> pd.DataFrame:
        """The adjustment covariates (design columns such as the instrument left out)."""
        return covariates_of(self)

    @property
    def names(self) -> tuple[str, str]:
        """The treatment and outcome names."""
        return self.treatment, self.outcome

    def dowhy(self) -> Any:
        """The DoWhy backdoor model of the pair (built once, shared by OLS, matching, stratification)."""
        return dowhy_of(self)

    @property
    def scores(self) -> np.ndarray:
        """The propensity scores (only for a binary treatment whose nuisance models could be fitted)."""
        if self.ps is None:
            if self.nuisance_failed is not None:
                raise NuisanceUnavailable(
                    f"the propensity and outcome models could not be fitted: {self.nuisance_failed}"
                )
            raise AgentError("propensity scores exist only for a binary treatment")
        return self.ps

    @property
    def cluster_column(self) -> str | None:
        """The stated ``--cluster`` column (``None`` when none was stated)."""
        col = self.design.get("_cluster")
        return str(col) if col else None

    def clusters(self) -> tuple[str, np.ndarray] | None:
        """The stated cluster column and its code for each analysed row (``None`` when none was stated)."""
        from whyflow.causal.estimation.clustered import cluster_codes

        col = self.cluster_column
        return None if col is None else (col, cluster_codes(self.frame, self.prep.rows, col))

    def ols_design(self) -> np.ndarray | None:
        """The design [1, t, X] made with the covariates, while they are the ones it was made with (else None)."""
        return self._design if self._design_of is self.prep else None


def covariates_of(setup: PairSetup) -> pd.DataFrame:
    """The adjustment covariates (design columns such as the instrument left out), made once per prepared data."""
    drop = setup.design.get("_design_cols", [])
    if not drop:
        return setup.prep.X
    if setup._cov_of is not setup.prep:
        setup._cov_of, setup._cov_frame = setup.prep, setup.prep.X.drop(columns=drop)
    return setup._cov_frame


def dowhy_of(setup: PairSetup) -> Any:
    from whyflow.causal.estimation.backdoor import DowhyBackdoor

    if setup._dowhy is None:
        scores = setup.scores
        setup._dowhy = DowhyBackdoor(
            covariates_of(setup), setup.prep.t, setup.prep.y, scores, design=setup.ols_design()
        )
    return setup._dowhy
