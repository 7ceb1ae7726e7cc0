"""The critique's policy: every threshold its rules apply, in one frozen record (its recipe options)."""

from __future__ import annotations

from dataclasses import dataclass

from whyflow.causal.estimation.propensity import OVERLAP_POOR_SHARE, SMD_OK
from whyflow.causal.review.verdict import Z95

__all__ = ["BALANCE_SMD", "OVERLAP_POOR_SHARE", "Policy"]

BALANCE_SMD = SMD_OK
"""Largest acceptable absolute standardized mean difference after weighting/matching."""


@dataclass(frozen=True)
class Policy:
    """The critique's thresholds (the options of ``critique`` in a recipe; defaults shown).

    ``overlap_poor_share``: share of units outside common support above which overlap is poor
    and an untrimmed estimate is never approved; ``balance_smd``: largest acceptable |SMD| after
    weighting; ``disagree_z``: combined standard errors beyond which a credible estimator
    disagrees with the headline; ``weak_evalue``: E-value of the confidence limit below which
    unmeasured confounding is called weak; ``fragile_gamma``: Rosenbaum Gamma below which a
    matched effect is fragile; ``max_rows_lost``: share of input rows data repair may drop
    before data quality loses a point.
    """

    overlap_poor_share: float = OVERLAP_POOR_SHARE
    balance_smd: float = SMD_OK
    disagree_z: float = Z95
    weak_evalue: float = 1.5
    fragile_gamma: float = 1.2
    max_rows_lost: float = 0.2
