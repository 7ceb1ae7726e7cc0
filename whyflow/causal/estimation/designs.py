"""Design-based estimators: instrumental variables (2SLS), difference-in-differences, RDD.

These identify an effect without "no unmeasured confounding": an instrument (LATE, linearmodels
IV2SLS with robust SEs and the first-stage F, collinear controls dropped and named: see
:mod:`whyflow.causal.estimation.designs_iv`), a panel with parallel trends (two-way fixed effects through
pyfixest, SEs clustered by unit, repeated cross-sections allowed: :mod:`whyflow.causal.estimation.designs_did`)
or a cutoff in a running variable (rdrobust's MSE-optimal local linear fit with robust
bias-corrected inference, a hand-written local linear fit as a cross-check:
:mod:`whyflow.causal.estimation.designs_rdd`). This module gathers them for the registry and the tests.
"""

from __future__ import annotations

from whyflow.causal.estimation.designs_did import did_twfe
from whyflow.causal.estimation.designs_iv import iv_2sls
from whyflow.causal.estimation.designs_rdd import rdd_bandwidth, rdd_local_linear, rdd_rdrobust

__all__ = ["iv_2sls", "did_twfe", "rdd_rdrobust", "rdd_local_linear", "rdd_bandwidth"]
