"""Rules that keep the critique from approving an answer it should not trust (pure functions).

* Agreement is judged among *credible* adjusted estimators only: not the naive contrast, not an
  estimate that shares the headline's nuisance models (the DR-learner shares AIPW's), not one the
  estimator marked not credible (``details.credible`` is False: a linear regression whose
  outcome model loses clearly to a flexible one on held-out data; the plug-in S-, T- and
  X-learners), and only estimates resting on the same design (IV with IV; a DiD or RDD headline
  is not compared with backdoor estimators, which its design expects to be confounded).
  They disagree when most of them differ from the headline by more than 1.96 combined standard
  errors (the headline's interval, widened by their own uncertainty, excludes them), when a gap
  to the headline exceeds 3 combined standard errors, when their intervals are disjoint from
  the headline's, or when the headline excludes zero while most of them include it (a false
  discovery that rests on one estimator).
* A degenerate interval (width ~0) means the outcome is an exact function of what was adjusted
  for (a part or copy of the outcome in the set): never approved.
* A failed data expectation on an adjusted-for column that no repair addressed blocks approval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from whyflow.causal.diagnostics import DataRepairEntry, ExpectationFailure, RepairAction

__all__ = ["Agreement", "agreement", "credible_others", "degenerate_interval", "unrepaired_in_set", "is_naive_estimate"]

Z95 = 1.959963984540054


def _design(e: Any) -> str:
    """The design an estimate rests on ("" for the backdoor estimators)."""
    return str(e.details.family) if e.details.is_design else ""


def is_naive_estimate(e: Any) -> bool:
    """An unadjusted contrast (its family is ``naive``)."""
    return bool(e.details.is_naive)


def credible_others(estimates: list[Any], head: Any) -> tuple[list[Any], list[str]]:
    """The credible estimates to compare with the headline, and why others are left out."""
    out, left = [], []
    for e in estimates:
        if e is head or is_naive_estimate(e) or not math.isfinite(e.estimate) or not math.isfinite(e.std_error):
            continue
        if _design(e) != _design(head):  # a design estimate is compared only with the same design
            continue
        if e.details.shares_nuisance_with and e.details.shares_nuisance_with == head.details.method_key:
            left.append(f"{e.method} (shares the headline's nuisance models)")
            continue
        if not e.details.credible:
            left.append(f"{e.method} ({e.details.credible_reason or 'marked not credible by the estimator'})")
            continue
        out.append(e)
    return out, left


@dataclass
class Agreement:
    """The agreement score (1-5), whether the estimators disagree, and the words for it."""

    score: int
    disagree: bool
    issues: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)


def agreement(estimates: list[Any], head: Any, disagree_z: float = Z95) -> Agreement:
    """Score how well the credible estimators agree with the headline (a gap above ``disagree_z`` combined SEs disagrees)."""
    others, left = credible_others(estimates, head)
    reasons = [f"Not counted for agreement: {'; '.join(left)}."] if left else []
    if not others:
        return Agreement(3, False, [], [*reasons, "Only one credible adjusted estimator: agreement cannot be checked."])
    se_h = max(head.std_error, 0.0)
    gaps = {
        e.method: abs(e.estimate - head.estimate) / (math.hypot(max(e.std_error, 0.0), se_h) or 1e-12) for e in others
    }
    worst = max(gaps.values())
    outside = [m for m, z in gaps.items() if z > disagree_z]
    disjoint = [e.method for e in others if e.ci_upper < head.ci_lower or e.ci_lower > head.ci_upper]
    score = 5 - (worst > 1) - (worst > 2) - (worst > 3) - (worst > 4)
    issues: list[str] = []
    if disjoint:
        score = min(score, 2)
        issues.append(f"Confidence intervals of {', '.join(disjoint)} do not overlap the headline ({head.method}).")
    if len(outside) * 2 > len(others):
        score = min(score, 2)
        issues.append(
            f"{len(outside)} of {len(others)} credible estimates ({', '.join(outside)}) differ from the headline "
            f"{head.method} [{head.ci_lower:.4g}, {head.ci_upper:.4g}] by more than {disagree_z:.2f} combined standard errors."
        )
    null_in = [e.method for e in others if e.ci_lower <= 0 <= e.ci_upper]
    if not head.ci_lower <= 0 <= head.ci_upper and len(null_in) * 2 > len(others):
        score = min(score, 2)
        issues.append(
            f"The headline ({head.method}) excludes no effect, but {len(null_in)} of {len(others)} credible estimators "
            f"({', '.join(null_in)}) include it: the finding rests on one estimator."
        )
    if worst > 2 and not issues:
        issues.append(
            f"Adjusted estimators disagree with the headline: the largest gap is {worst:.1f} standard errors."
        )
    return Agreement(max(1, min(5, score)), score <= 2, issues, reasons)


def degenerate_interval(head: Any, outcome_sd: float | None) -> str:
    """Why the headline's interval is degenerate ("" when it is not)."""
    width = head.ci_upper - head.ci_lower
    scale = max(abs(outcome_sd or 0.0), abs(head.estimate), 1e-300)
    if (
        not math.isfinite(head.std_error)
        or not math.isfinite(width)
        or head.std_error <= 1e-9 * scale
        or width <= 1e-8 * scale
    ):
        return (
            f"the headline's 95% interval is degenerate (width {width:.2g}): the outcome is an exact function of the "
            "treatment and the adjusted covariates, which happens when a part or copy of the outcome (a component of "
            "a change score, a post-outcome measurement) is adjusted for"
        )
    return ""


def unrepaired_in_set(repairs: list[DataRepairEntry], adjustment: set[str]) -> dict[str, str]:
    """Adjusted-for columns with a failed data expectation that no repair addressed, and which expectation."""
    repaired = {r.column for r in repairs if isinstance(r, RepairAction)}
    passed_later: set[str] = set()
    out: dict[str, str] = {}
    for r in repairs:
        col = r.column
        if not isinstance(r, ExpectationFailure) or col not in adjustment:
            continue
        if r.kept:  # reported on purpose (outliers are not a data error): nothing to repair
            continue
        if r.success is False and not r.repaired and col not in repaired:
            out[str(col)] = str(r.expectation)
        elif r.success is True:
            passed_later.add(str(col))
    return {c: x for c, x in out.items() if c not in passed_later}
