"""What keeps an answer unapproved besides the scores: a stated design not kept, and open doubts.

Pure functions of the headline estimate and of the confounder discovery's record, used by
:func:`whyflow.causal.review.rules.review`. A *blocker* refuses the answer whatever the budget (a stated
design that could not be estimated, a weak instrument, one treated unit). A *doubt* keeps it
unapproved until something settles it: rows that repeat units, controls that absorb the
instrument, a column whose timing is in question and that moves the answer, a backdoor answer that
moves on common support or with flexible nuisance models.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from whyflow.causal.diagnostics import CompleteCase, ConfounderDiscovery, PSDiagnostics, WithWithout
from whyflow.causal.state import TreatmentEffectResult

__all__ = [
    "ABSORBED",
    "AGAINST_THE_GRAPH",
    "OVERID_P",
    "STAGGERED_GAP",
    "BALANCED_SMD",
    "HINGES_SE",
    "left_out_findings",
    "STATED_AGAINST",
    "DesignFindings",
    "complete_case_settled",
    "design_findings",
    "role_doubts",
    "settled",
    "stability_doubts",
]

ABSORBED = 0.5
"""A 2SLS whose controls leave less than this share of the instrument's first-stage R² is not approved."""
_AFTER_EVIDENCE = re.compile(r"suggests it is measured after", re.I)
"""An uncertain role with evidence that the column comes after the treatment (its name or wave says so,
as :mod:`whyflow.causal.dataprep.column_roles` words it): it blocks approval unless it does not move the answer."""
_DECIDED = re.compile(r"collider signature|kept as the baseline", re.I)
"""Uncertain roles the data decided (a collider's signature, a change score's own baseline): listed only."""
AGAINST_THE_GRAPH = "kept against the graph's orientation"
"""How confounder discovery words a column the learned graph puts after the treatment on weakly supported
directed edges, kept because a weak orientation is no evidence: the answer must not hinge on it."""
STATED_AGAINST = "stated as a control (--controls), and the recipe would leave it out"
"""How confounder discovery words a stated control it would not adjust for (the doubt below reads it)."""
HINGES_SE = 2.0
"""A role resting on an unverified assumption (an unoriented edge, a weak orientation, a failure to reject)
blocks approval when the answer with and without the column differs by more than this many standard errors
and either the treatment looks randomised but for that column (:func:`stands_out`): in a trial only what the
treatment moved is out of balance; or the learned graph itself puts the column after the treatment and it is
adjusted for only because that orientation is weak (:data:`AGAINST_THE_GRAPH`). Either way the answer hinges
on timing the data cannot tell (the metadata can).
Where several covariates are out of balance, confounding is the ordinary reading and the column stays."""
BALANCED_SMD = 0.2
"""Largest |SMD| of the other covariates for the treatment to look randomised but for one column."""
STAGGERED_GAP = 2.0
"""A staggered-adoption TWFE answer further than this many combined standard errors (the square root of the
sum of both variances, conservative as the two estimates are positively correlated) from the two-stage check
is not approved."""
PRETREND_P = 0.05
"""Staggered adoption whose pre-adoption event-time coefficients are jointly non-zero at this level is not
approved."""
OVERID_P = 0.05
"""Several instruments whose over-identification test rejects at this level are not approved."""
_DESIGNS = {"iv": "instrumental variables", "rdd": "regression discontinuity", "did": "difference in differences"}


@dataclass
class DesignFindings:
    """What the headline's design says against approving it."""

    blockers: list[str] = field(default_factory=list)
    doubts: list[str] = field(default_factory=list)
    issues: list[str] = field(default_factory=list)


def design_findings(head: TreatmentEffectResult, declared: tuple[str, ...]) -> DesignFindings:
    """A stated design is the question (its estimator must headline); its own checks must hold."""
    out = DesignFindings()
    stated = [k for k in declared if k in _DESIGNS]
    if stated and head.details.family not in stated:
        why = head.details.skipped_methods.get(stated[0]) or "its estimator did not run"
        out.blockers.append(
            f"the design you stated ({_DESIGNS[stated[0]]}) could not be estimated ({why.rstrip('.')}); "
            f"{head.method} answers a different question and is not the answer to yours"
        )
        return out
    x = {**head.details.extras}
    panel = x.get("repeated_units")
    if isinstance(panel, dict) and not head.details.is_design:
        u, t, k, per = panel.get("unit"), panel.get("time"), panel.get("n_units"), panel.get("rows_per_unit", 0)
        found = (
            f"; '{t}' is read as the time from the data: {panel.get('n_periods')} values, one row per unit and value"
            if panel.get("time_found_in_data")
            else ""
        )
        out.issues.append(
            f"The rows are a panel: {k} units of '{u}' observed over '{t}' (about {per:.0f} rows each{found}), but "
            "the interval treats every row as independent."
        )
        out.doubts.append(
            f"repeated units: {k} values of '{u}' each seen about {per:.0f} times over '{t}', so the interval is "
            f"too narrow; declare the panel (--unit {u} --time {t}) for unit and period effects with errors "
            "clustered by unit"
        )
    if head.details.family == "did" and isinstance(x.get("twfe"), dict) and isinstance(x.get("did2s_check"), dict):
        _two_stage(head, x, out)
    elif head.details.family == "did" and isinstance(x.get("did2s_check"), dict):
        _staggered(head, x["did2s_check"], out)
    elif head.details.family == "did" and x.get("staggered_skipped"):
        out.issues.append(f"Staggered adoption, answered by two-way fixed effects: {x['staggered_skipped']}.")
    if head.details.family == "iv":
        _instrument(x, out)
    if head.details.family == "rdd" and x.get("design") == "fuzzy":
        _fuzzy_jump(x, out)
    elif head.details.family == "rdd" and x.get("stated_fuzzy"):
        out.issues.append(f"Sharp, not fuzzy: {x['stated_fuzzy']}.")
    if head.details.family == "did" and x.get("row_level_errors"):
        # A handful of groups: the row-level interval rests on no group-by-period shocks, which is also what
        # identifies the effect with this few groups; a single treated group is then no separate flaw.
        out.issues.append(f"Row-level robust errors: {x['row_level_errors']}.")
    elif head.details.family == "did" and (x.get("single_treated_unit") or x.get("n_treated_units") == 1):
        _one_treated_unit(x, out)
    return out


def _one_treated_unit(x: dict[str, Any], out: DesignFindings) -> None:
    """One treated unit: approvable only on a finite placebo-in-space permutation interval."""
    perm = x.get("permutation")
    if isinstance(perm, dict) and perm.get("ci") is not None:
        out.issues.append(
            f"A single treated unit: the interval is from placebo-in-space permutation over "
            f"{perm.get('n_units_compared')} units (test inversion), not from standard errors clustered by unit; "
            "it assumes the units are exchangeable."
        )
        return
    why = f" ({perm['reason']})" if isinstance(perm, dict) and perm.get("reason") else ""
    out.blockers.append(
        "a single treated unit: standard errors clustered by unit cannot measure the uncertainty of one "
        f"treated cluster, so the interval is not credible, and permutation inference over units gives no "
        f"finite 95% interval{why}"
    )


def _staggered(head: TreatmentEffectResult, check: dict[str, Any], out: DesignFindings) -> None:
    """Staggered adoption: TWFE beside Gardner's two-stage estimate, which compares with untreated rows only."""
    est, se = check.get("estimate"), check.get("std_error")
    if not isinstance(est, (int, float)) or not isinstance(se, (int, float)) or se <= 0:
        return
    gap = abs(head.estimate - est) / float(np.hypot(head.std_error, se))
    if gap > STAGGERED_GAP:
        out.doubts.append(
            f"staggered adoption: two-way fixed effects gives {head.estimate:.4g} (SE {head.std_error:.2g}) and "
            f"Gardner's two-stage estimator, which compares treated rows with untreated ones only, {est:.4g} "
            f"(SE {se:.2g}), {gap:.1f} combined standard errors apart: TWFE's comparisons of later with earlier "
            "adopters bias it when effects differ by cohort or grow over time"
        )
        return
    out.issues.append(
        f"Staggered adoption: Gardner's two-stage estimate {est:.4g} (SE {se:.2g}) agrees with the two-way fixed "
        f"effects answer within {STAGGERED_GAP:g} combined standard errors."
    )


def _two_stage(head: TreatmentEffectResult, x: dict[str, Any], out: DesignFindings) -> None:
    """Staggered adoption answered by the two-stage estimator: TWFE beside it; a pre-trend is an open doubt."""
    twfe = x["twfe"]
    out.issues.append(
        f"Staggered adoption: the answer is Gardner's two-stage estimate {head.estimate:.4g} (SE "
        f"{head.std_error:.2g}), robust to effects that differ by cohort; two-way fixed effects gives "
        f"{twfe.get('estimate', float('nan')):.4g} (SE {twfe.get('std_error', float('nan')):.2g})."
    )
    if x.get("staggered_left_out"):
        out.issues.append(f"Left out of the two-stage ATT: {x['staggered_left_out']}.")
    found = x.get("event_study")
    study: dict[str, Any] = found if isinstance(found, dict) else {}
    p = study.get("pretrend_p")
    if isinstance(p, (int, float)) and p < PRETREND_P:
        out.doubts.append(
            f"pre-trends: the {study.get('pretrend_df')} event-time coefficients before adoption are jointly "
            f"non-zero (Wald p = {p:.3g}): adopters were already drifting from the comparison units before "
            "treatment, so parallel trends are in doubt"
        )
    elif isinstance(p, (int, float)):
        out.issues.append(
            f"Pre-trends: the event-time coefficients before adoption are jointly indistinguishable from zero "
            f"(Wald p = {p:.3g}, {study.get('pretrend_df')} leads); a failure to reject, not proof of parallel trends."
        )
    else:
        why = study.get("pretrend_skipped") or study.get("skipped") or "not computed"
        out.issues.append(f"Pre-trends not tested: {why}.")


def _fuzzy_jump(x: dict[str, Any], out: DesignFindings) -> None:
    """A fuzzy discontinuity divides by the jump in take-up: a weak jump is a weak instrument."""
    f_stat, jump = x.get("first_stage_f"), x.get("first_stage_jump")
    if not isinstance(f_stat, (int, float)) or f_stat < 10:
        shown = f"{f_stat:.3g}" if isinstance(f_stat, (int, float)) else "not measured"
        out.blockers.append(
            f"weak first stage of the fuzzy discontinuity: take-up jumps by {jump} at the cutoff with F {shown} "
            "(below 10), so the ratio of the two jumps is unstable and its interval does not cover at its stated rate"
        )
        return
    out.issues.append(
        f"Fuzzy discontinuity: take-up jumps by {jump} at the cutoff (first-stage F {f_stat:.3g}); the effect is "
        "the outcome's jump over take-up's, for those the cutoff moves (compliers)."
    )


def _instrument(x: dict[str, Any], out: DesignFindings) -> None:
    """Controls that absorb the instrument's first stage, and a weak instrument."""
    kept, alone = x.get("first_stage_partial_r2"), x.get("first_stage_r2_alone")
    if isinstance(kept, (int, float)) and isinstance(alone, (int, float)) and alone > 0 and kept < ABSORBED * alone:
        closest = x.get("instrument_explained_by") or []
        mostly = f" (most related to it: {', '.join(closest)})" if closest else ""
        out.doubts.append(
            f"the controls{mostly} absorb {1 - kept / alone:.0%} of the instrument's pull on the treatment "
            f"(first-stage R² {alone:.3f} alone, partial R² {kept:.3f} given them): they include what assigns the "
            "instrument or what the treatment itself moves, and the estimate rests on which of them enter; list "
            "those measured after the treatment under post_treatment in the metadata and re-run"
        )
    f_stat = x.get("first_stage_f")
    if isinstance(f_stat, (int, float)) and f_stat < 10:
        out.blockers.append(
            f"weak instrument: the first-stage F is {f_stat:.3g} (below 10), so 2SLS is biased towards OLS and "
            "its interval does not cover at its stated rate"
        )
    overid = x.get("overidentification_p")
    if isinstance(overid, (int, float)) and overid >= OVERID_P:
        out.issues.append(
            f"Several instruments ({x.get('instrument')}): joint first-stage F {f_stat}, and the over-identification "
            f"test does not reject that they identify the same effect (Wooldridge's robust score test p = "
            f"{overid:.3g}); it cannot tell whether all of them are invalid in the same way."
        )
    if isinstance(overid, (int, float)) and overid < OVERID_P:
        out.blockers.append(
            f"the instruments disagree: the over-identification test rejects that they identify the same effect "
            f"(Wooldridge's robust score test p = {overid:.3g}), so at least one is invalid or they move different "
            "compliers; give each alone to see which"
        )


def left_out_findings(
    left_out: list[str], treatment: str, outcome: str, *, stated: bool
) -> tuple[str, str | None, str | None]:
    """The issue, improvement and doubt for columns associated with both treatment and outcome, not adjusted for.

    With stated controls (``--controls``) leaving them out is the analyst's identifying assumption, as a
    declared design's is: an issue beside the answer, no improvement (a stated set is the analyst's to widen)
    and no doubt (evidence against a stated control is one, in :func:`role_doubts`).
    """
    names, one = ", ".join(left_out), len(left_out) == 1
    head = f"{names} {'is' if one else 'are'} associated with both {treatment} and {outcome} but "
    if stated:
        return head + "not among the stated controls: the estimate assumes no confounding through it.", None, None
    fix = (
        f"widen_adjustment_set: add {names} to the adjustment set (or record why "
        f"{'it is' if one else 'they are'} not a confounder)."
    )
    return head + "neither adjusted for nor excluded with a reason.", fix, f"possible confounders left out: {names}"


def role_doubts(doubtful: dict[str, str], cd: ConfounderDiscovery, ps: PSDiagnostics | None) -> list[str]:
    """The open doubts among uncertain roles (already without the settled ones)."""
    named_after = sorted(c for c, r in doubtful.items() if _AFTER_EVIDENCE.search(str(r)))
    moves = _gaps(cd.doubtful_sensitivity)
    stated_set = set(cd.adjustment_set) if cd.recipe_adjustment_set is not None else set()
    against = sorted(  # a column the analyst stated (--controls) is their assumption, said as an issue
        c
        for c, r in doubtful.items()
        if c not in named_after
        and c not in stated_set
        and str(r).startswith(AGAINST_THE_GRAPH)
        and moves.get(c, 0.0) > HINGES_SE
    )
    hinges = sorted(
        c
        for c, r in doubtful.items()
        if c not in named_after
        and c not in against
        and not _DECIDED.search(str(r))
        and not str(r).startswith(STATED_AGAINST)
        and moves.get(c, 0.0) > HINGES_SE
        and stands_out(c, ps)
    )
    out = []
    if against:
        out.append(
            f"uncertain adjustment: the learned graph puts {', '.join(against)} after the treatment, on edges too "
            f"weakly supported to leave {'it' if len(against) == 1 else 'them'} out, and the answer moves by more "
            f"than {HINGES_SE:g} standard errors with or without {'it' if len(against) == 1 else 'each'}: "
            + "; ".join(
                f"{c} {cd.doubtful_sensitivity[c].with_:.4g} with, {cd.doubtful_sensitivity[c].without:.4g} without"
                for c in against
            )
            + f". State when {'it is' if len(against) == 1 else 'they are'} measured in the metadata (pre_treatment "
            "or post_treatment) or with --controls"
        )
    stated = sorted(c for c, r in doubtful.items() if str(r).startswith(STATED_AGAINST))
    if stated:
        out.append(
            f"stated controls the recipe would leave out: {', '.join(stated)} ("
            + "; ".join(str(doubtful[c]).removeprefix(STATED_AGAINST).lstrip(": ") for c in stated)
            + "): adjusted for as stated; if one is caused by the treatment the estimate is biased"
        )
        named_after = [c for c in named_after if c not in stated]
    if named_after:
        out.append(f"uncertain adjustment: {', '.join(named_after)} may be measured after the treatment")
    if hinges:
        out.append(
            f"uncertain adjustment: the answer moves by more than {HINGES_SE:g} standard errors with or without "
            f"{', '.join(hinges)}, whose timing relative to the treatment the data cannot tell; state it in the "
            "metadata (pre_treatment or post_treatment)"
        )
    return out


def _gaps(checks: Mapping[str, WithWithout | CompleteCase]) -> dict[str, float]:
    """Each variable's with/without difference, in the larger of the two standard errors."""
    out: dict[str, float] = {}
    for c, r in checks.items():
        gap = abs(float(r.with_) - float(r.without))
        se = max(float(r.se_with), float(r.se_without))
        out[str(c)] = gap / se if se > 0 else float("inf")
    return out


def stands_out(column: str, ps: PSDiagnostics | None) -> bool:
    """Whether ``column`` alone is out of balance: every other covariate within :data:`BALANCED_SMD` and
    the column's own imbalance at least twice the largest of theirs (its one-hot levels count as it)."""
    balance = (ps.balance if ps is not None else None) or {}

    def own(name: str) -> bool:
        return name == column or name.startswith(f"{column}_")

    mine = [abs(float(v.smd_before)) for k, v in balance.items() if own(k)]
    others = [abs(float(v.smd_before)) for k, v in balance.items() if not own(k)]
    top = max(others, default=0.0)
    return bool(mine) and top < BALANCED_SMD and max(mine) >= 2 * top


def settled(cd: ConfounderDiscovery) -> set[str]:
    """Doubtful variables whose with/without estimates differ by less than a standard error."""
    return {c for c, z in _gaps(cd.doubtful_sensitivity).items() if z <= 1}


def complete_case_settled(cd: ConfounderDiscovery) -> set[str]:
    """Imputed confounders whose complete-case estimate (``cd.complete_case``, rows where the column was
    measured) agrees with the all-rows estimate within a standard error: the imputation does not move the answer."""
    return {c for c, z in _gaps(cd.complete_case).items() if z <= 1}


_MOVES_WHERE = {
    "common_support": "on the common-support sample (propensity in [0.1, 0.9])",
    "flexible": "with flexible nuisance models (a boosted propensity, outcome models re-chosen by loss)",
}


def stability_doubts(head: TreatmentEffectResult | None) -> list[str]:
    """Where a backdoor headline's re-estimates move it (:mod:`whyflow.causal.estimation.stability`).

    A move beyond the headline's standard error and the re-estimate's own noise is an open doubt.
    """
    if head is None or head.details.is_design or head.details.stability is None:
        return []
    return [
        f"the answer moves {_MOVES_WHERE[name]}: {check.estimate:.4g} (SE {check.std_error:.2g}) against the "
        f"headline {head.estimate:.4g} (SE {head.std_error:.2g}), more than its standard error"
        for name, check in head.details.stability.checks().items()
        if check.moved and check.estimate is not None and check.std_error is not None
    ]
