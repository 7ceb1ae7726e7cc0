"""The critique's rules: a pure review of one round of analysis (APPROVE, ITERATE or REJECT).

:func:`review` scores six dimensions from :class:`ReviewInputs` and decides; the policy is
described in :mod:`whyflow.causal.review.critique`, whose agent gathers the inputs from the state and records
the verdict. Kept apart so the rules are testable and readable without the agent around them.
"""

from __future__ import annotations

import re
from typing import Any

from whyflow.causal.diagnostics import ExpectationFailure, RepairAction
from whyflow.causal.queries import (
    adjustment_set_of,
    evalue_of_limit,
    headline_evalue,
    headline_of,
    latest_round,
    post_treatment_set,
)
from whyflow.causal.review.complete_case import OUTCOME_P
from whyflow.causal.review.doubts import (
    complete_case_settled,
    design_findings,
    left_out_findings,
    role_doubts,
    settled,
    stability_doubts,
)
from whyflow.causal.review.improvements import codes_in
from whyflow.causal.review.inputs import Findings, Review, ReviewInputs, is_naive, primary_estimates
from whyflow.causal.review.policy import BALANCE_SMD, OVERLAP_POOR_SHARE, Policy
from whyflow.causal.review.verdict import agreement, degenerate_interval, unrepaired_in_set
from whyflow.causal.state import CritiqueDecision, TreatmentEffectResult

__all__ = [
    "BALANCE_SMD",
    "OVERLAP_POOR_SHARE",
    "Policy",
    "Findings",
    "ReviewInputs",
    "Review",
    "review",
    "latest_round",
    "primary_estimates",
    "is_naive",
]

_UNIDENTIFIABLE = re.compile(r"not identifiable|unidentifiable|cannot be identified|no valid adjustment", re.I)


def _clip(score: float) -> int:
    return int(max(1, min(5, round(score))))


def _headline(estimates: list[TreatmentEffectResult]) -> TreatmentEffectResult | None:
    return headline_of(estimates)


# ---- dimensions --------------------------------------------------------------------------
def _identification(inp: ReviewInputs, acc: Findings) -> int:
    """Is the effect identified with these data, and is the adjustment set well argued?"""
    cd, head, score = inp.confounders, _headline(inp.estimates), 5.0
    if head is not None and head.details.family == "iv":
        instruments = list(cd.instruments if cd is not None else []) + ([inp.instrument] if inp.instrument else [])
        if not instruments:
            acc.impossible.append(
                f"the headline is an IV estimate ({head.method}) but no instrument was named or found"
            )
            return 1
    if cd is None:
        acc.issues.append(
            "No confounder discovery: the adjustment set was not derived from a causal graph or domain knowledge."
        )
        return _clip(score - 2)
    ident = cd.identification
    ident_text = f"{ident.method}: {ident.estimand}" if ident is not None else ": "
    unidentified = ident is not None and ident.identified is False
    if unidentified and _UNIDENTIFIABLE.search(ident_text):
        acc.impossible.append(
            f"confounder discovery found no valid adjustment for the effect of {inp.treatment} on {inp.outcome} "
            f"({ident_text})"
        )
        return 1
    if unidentified:
        score -= 2
        acc.issues.append(
            f"Identification is assumed, not derived from a causal graph ({ident_text.strip(': ')}): the estimate "
            f"holds only if nothing outside {sorted(cd.adjustment_set) or 'the empty set'} confounds "
            f"{inp.treatment} and {inp.outcome}."
        )
    adjustment = set(cd.adjustment_set)
    post = post_treatment_set(cd, None)
    candidates = set(cd.data_associated) - {inp.treatment, inp.outcome}
    if not candidates and inp.profile is not None:
        candidates = set(inp.profile.potential_confounders) - {inp.treatment, inp.outcome}
    if not adjustment and candidates and candidates <= post:
        acc.impossible.append(
            f"every candidate confounder ({', '.join(sorted(candidates))}) is measured after {inp.treatment} "
            "(mediator, descendant or collider): adjusting for them biases the estimate and nothing measured "
            "before the treatment is left to adjust for"
        )
        return 1
    accounted = adjustment | post | set(cd.excluded) | set(cd.instruments)
    left_out = sorted(set(cd.data_associated) - accounted - {inp.treatment, inp.outcome})
    if left_out:
        stated = cd.recipe_adjustment_set is not None
        score -= 1 if stated else 1.5
        issue, fix, doubt = left_out_findings(left_out, inp.treatment, inp.outcome, stated=stated)
        acc.issues.append(issue)
        if fix:
            acc.improvements["widen_adjustment_set"] = fix
        if doubt:
            _doubt(acc, head, doubt)
    imputed = _imputed_shares(inp, adjustment)
    complete = _complete_cases(head)
    if complete:
        acc.reasons.append(
            "Imputed confounders adjusted for where they were measured: the estimate uses the "
            + "; ".join(f"{v.get('n_complete', 0):,} rows where {c} was measured" for c, v in complete.items())
            + " (complete cases)."
        )
        # Only where the choice matters: complete cases and imputed rows that agree answer alike either way.
        moves = set(complete) - complete_case_settled(cd)
        outcome_led = {
            c: p for c, v in complete.items() if c in moves and (p := v.get("outcome_p")) is not None and p < OUTCOME_P
        }
        if outcome_led:
            score -= 1
            said = ", ".join(f"{c} (p = {p:.2g})" for c, p in outcome_led.items())
            acc.issues.append(
                f"Where {said} is missing depends on the outcome given the treatment and the other covariates: "
                "the complete cases may be a selected sample, and the all-rows answer, which differs by more than a "
                "standard error, adjusts only partly for it."
            )
            _doubt(acc, head, f"missingness related to the outcome: {said}")
        imputed = {c: s for c, s in imputed.items() if c not in complete}
    agree = complete_case_settled(cd) & set(imputed)
    if agree:
        acc.reasons.append(
            f"Imputed confounders that do not move the answer: on the rows where {', '.join(sorted(agree))} "
            "was measured the estimate is within a standard error of the all-rows one."
        )
        imputed = {c: s for c, s in imputed.items() if c not in agree}
    if imputed:
        score -= 2
        acc.issues.append(
            "Residual confounding is likely: "
            + "; ".join(f"{c} was missing and imputed for {s:.0%} of rows" for c, s in imputed.items())
            + ". An imputed confounder adjusts only partly for what it measures, so the estimate stays biased "
            "towards the unadjusted comparison; distrust it unless the values are missing at random and few."
        )
        _doubt(
            acc,
            head,
            "residual confounding: " + ", ".join(f"{c} imputed for {s:.0%} of rows" for c, s in imputed.items()),
        )
    doubtful = dict(cd.doubtful)
    done = settled(cd)
    if done:
        acc.reasons.append(
            f"Uncertain roles that do not matter: with or without {', '.join(sorted(done))} the regression estimate "
            "moves by less than its standard error."
        )
        doubtful = {c: r for c, r in doubtful.items() if c not in done}
    if doubtful:
        score -= 1
        acc.issues.append(
            f"The adjustment set rests on uncertain evidence for {', '.join(sorted(doubtful))}: "
            + "; ".join(f"{c}: {r}" for c, r in sorted(doubtful.items()))
            + ". Re-estimate with and without them, or state their timing in the metadata."
        )
        for text in role_doubts(doubtful, cd, inp.ps):
            _doubt(acc, head, text)
    if cd.excluded:
        acc.reasons.append(f"Excluded with reasons: {', '.join(sorted(cd.excluded))}.")
    return _clip(score)


def _doubt(acc: Findings, head: TreatmentEffectResult | None, text: str) -> None:
    """An open doubt about the backdoor adjustment; a design headline (IV, DiD, RDD) does not rest on it."""
    if head is None or not head.details.is_design:
        acc.doubts.append(text)


def _constant_treatment(inp: ReviewInputs) -> bool:
    """Whether the treatment takes a single value in the analysed sample."""
    p = inp.profile
    if p is not None:
        stats = p.numeric_stats.get(inp.treatment)
        if stats and (stats.get("std") == 0 or stats.get("min") == stats.get("max")):
            return True
        levels = p.categorical_stats.get(inp.treatment)
        if levels is not None and sum(1 for v in levels.values() if v > 0) < 2:
            return True
    ess = inp.ps.ess if inp.ps is not None else None
    return ess is not None and (ess.treated == 0 or ess.control == 0)


def _overlap(inp: ReviewInputs, acc: Findings, applied: set[str]) -> int:
    """Common support of the propensity score; poor overlap needs trimming before approval."""
    ps = inp.ps
    head = _headline(inp.estimates)
    if ps is None:
        acc.issues.append("No propensity-score diagnostics: overlap was not checked.")
        return 3
    if ps.skipped:
        acc.reasons.append(f"Propensity diagnostics were skipped: {ps.skipped}.")
        return 3
    if not ps.covariates:
        acc.reasons.append("No covariates are adjusted for: overlap holds trivially.")
        return 5
    outside = float(ps.outside_support.overall if ps.outside_support is not None else 0.0)
    support = ps.common_support or [0.0, 1.0]
    auc = float(ps.auc or 0.5)
    separated = support[0] >= support[1] or auc >= 0.999 or outside >= 0.95
    if separated and head is not None and head.details.is_design:
        acc.issues.append(
            f"The covariates separate the {inp.treatment} groups (AUC {auc:.3f}): the adjustment estimators cannot be "
            f"trusted, but the headline {head.method} rests on its design, not on overlap."
        )
        return 3
    if head is not None and head.details.is_design:  # an instrument, panel or cutoff does not rest on overlap
        acc.reasons.append(f"The headline {head.method} rests on its design: propensity overlap is not required.")
        return 5
    if separated:
        acc.impossible.append(
            f"the propensity model separates {inp.treatment} groups almost perfectly (AUC {auc:.3f}, "
            f"{outside:.0%} outside common support): {inp.treatment} is (nearly) a deterministic function of "
            "the covariates, so no treated unit has comparable controls"
        )
        return 1
    share = inp.policy.overlap_poor_share
    score = 5 - (outside > 0.02) - (outside > 0.05) - (outside > share) - (outside > 0.2)
    extreme = ps.extreme_share
    if extreme is None:  # diagnostics without the share of extreme scores: their own verdict stands
        poor = ps.overlap_ok is False or outside > share
    else:
        poor = outside > share or float(extreme) > share or support[0] >= support[1]
    trimmed = bool(ps.trimmed) or "trim_to_common_support" in applied
    if poor:
        score = min(score, 2)
        acc.issues.append(
            f"Poor overlap: {outside:.1%} of units lie outside the common support "
            f"[{support[0]:.3f}, {support[1]:.3f}] of the propensity score (AUC {auc:.2f}; poor above {share:.0%})."
        )
        if not trimmed:
            acc.must_trim = True
            sugg = ps.trim_suggestion
            lo, hi = (sugg.lower, sugg.upper) if sugg is not None else (support[0], support[1])
            dropped = f", dropping {sugg.n_dropped} units" if sugg is not None else ""
            acc.improvements["trim_to_common_support"] = (
                f"trim_to_common_support: restrict the sample to propensity scores in [{lo:.3f}, {hi:.3f}]"
                f"{dropped}, then re-estimate (the estimand becomes the effect in the overlap population)."
            )
        else:
            acc.reasons.append(
                "Overlap is poor but the sample is already trimmed; the estimand is the overlap population."
            )
    return _clip(score)


def _balance(inp: ReviewInputs, acc: Findings, applied: set[str]) -> int:
    """Covariate balance after weighting/matching (max |SMD|)."""
    ps = inp.ps
    head = _headline(inp.estimates)
    if ps is None or ps.max_smd_after is None or (head is not None and head.details.is_design):
        return 3
    smd = abs(float(ps.max_smd_after))
    limit = inp.policy.balance_smd
    score = 5 - (smd > limit / 2) - (smd > limit) - (smd > 1.5 * limit) - (smd > 2.5 * limit)
    if smd > limit or ps.balance_ok is False:
        after = {c: v.smd_after for c, v in (ps.balance or {}).items()} or {"?": smd}
        worst = max(after.items(), key=lambda kv: abs(kv[1]))
        acc.issues.append(f"Imbalance after weighting: max |SMD| {smd:.2f} (worst: {worst[0]}), above {limit}.")
        if ps.model in (None, "logistic") and "switch_propensity_model" not in applied:
            acc.improvements["switch_propensity_model"] = (
                f"switch_propensity_model: replace the logistic propensity model by gradient boosting (or add "
                f"interactions/splines for {worst[0]}) to bring max |SMD| below {limit}."
            )
    return _clip(score)


def _agreement(inp: ReviewInputs, acc: Findings) -> int:
    """Do the credible adjusted estimators agree with the headline? (rules in whyflow.causal.review.verdict)"""
    head = _headline(inp.estimates)
    if head is None:
        return 3
    verdict = agreement(inp.estimates, head, inp.policy.disagree_z)
    acc.issues.extend(verdict.issues)
    acc.reasons.extend(verdict.reasons)
    acc.disagree = verdict.disagree
    return verdict.score


def _robustness(inp: ReviewInputs, acc: Findings) -> int:
    """Refuters passed, E-value size, Rosenbaum Gamma, simulated unobserved confounding."""
    if not inp.sensitivity:
        acc.issues.append("No sensitivity analysis: robustness to unmeasured confounding is unknown.")
        return 3
    score = 5.0
    failed = [r.method for r in inp.sensitivity if r.details.kind == "refuter" and r.details.passed is False]
    if failed:
        score -= len(failed)
        acc.issues.append(f"Refuters failed: {', '.join(failed)}.")
    ev = headline_evalue(inp.sensitivity)
    if ev is not None:
        e_ci = evalue_of_limit(ev)
        weak = inp.policy.weak_evalue
        score -= 2 if e_ci < 1 + (weak - 1) / 2 else (1 if e_ci < weak else 0)
        if ev.details.ci_crosses_null:
            acc.issues.append("The headline's confidence interval includes no effect (E-value of the limit 1).")
        elif e_ci < weak:
            acc.issues.append(
                f"Small E-value for the confidence limit ({e_ci:.2f}, below {weak:g}): weak unmeasured confounding "
                "could explain the effect away."
            )
    rb = next((r for r in inp.sensitivity if r.method == "rosenbaum_bounds"), None)
    if rb is not None and rb.robustness_value < inp.policy.fragile_gamma:
        score -= 1
        acc.issues.append(
            f"Rosenbaum Gamma {rb.robustness_value:.2f} (below {inp.policy.fragile_gamma:g}): the matched effect is "
            "fragile to hidden bias."
        )
    uc = next((r for r in inp.sensitivity if r.method == "unobserved_common_cause"), None)
    if uc is not None and uc.robustness_value <= 0:
        score -= 1
        acc.issues.append("A simulated unobserved confounder of modest strength explains the estimate away.")
    return _clip(score)


def _data_quality(inp: ReviewInputs, acc: Findings) -> int:
    """EDA's quality score and what data repair had to do."""
    score = 5.0
    if inp.eda is not None and inp.eda.data_quality_score:
        q = float(inp.eda.data_quality_score)
        q = q / 100 if q > 1 else q
        score = 1 + 4 * q
        if q < 0.7:
            acc.issues.append(f"Low data quality score ({q:.0%}): {'; '.join(inp.eda.data_quality_issues[:3])}.")
    # Rows lost = input rows minus the rows analysed (repair entries count issues, not rows).
    lost = 0.0
    if inp.n_input_rows and inp.profile is not None:
        lost = max(0.0, 1 - inp.profile.n_samples / inp.n_input_rows)
    if lost > inp.policy.max_rows_lost:
        score -= 1
        acc.issues.append(
            f"Data repair dropped {lost:.0%} of the rows (more than {inp.policy.max_rows_lost:.0%}): the analysed "
            "sample may not represent the input."
        )
    # Each failed expectation says whether the re-check after repair passed; kept outliers are not errors.
    # (States written before data repair recorded ``repaired`` fall back to a repair on the column.)
    repaired_columns = {r.column for r in inp.repairs if isinstance(r, RepairAction)}
    open_failures = [
        r
        for r in inp.repairs
        if isinstance(r, ExpectationFailure)
        and r.success is False
        and not (r.repaired if r.repaired is not None else r.column in repaired_columns)
        and not r.kept
    ]
    if open_failures:
        score -= 0.5
        named = ", ".join(sorted({str(r.column) for r in open_failures}))
        acc.issues.append(f"{len(open_failures)} failed data expectation(s) were not repaired ({named}).")
    return _clip(score)


def _complete_cases(head: TreatmentEffectResult | None) -> dict[str, dict[str, Any]]:
    """The imputed confounders the headline adjusted for on their complete cases (its ``complete_cases`` extra)."""
    found = head.details.extras.get("complete_cases") if head is not None else None
    return {str(c): dict(v) for c, v in found.items() if isinstance(v, dict)} if isinstance(found, dict) else {}


def _imputed_shares(inp: ReviewInputs, adjustment: set[str], threshold: float = 0.1) -> dict[str, float]:
    """Adjusted-for columns that data repair imputed for more than ``threshold`` of the rows."""
    rows = inp.n_input_rows or (inp.profile.n_samples if inp.profile is not None else 0)
    out: dict[str, float] = {}
    for r in inp.repairs:
        col = r.column
        if isinstance(r, RepairAction) and col in adjustment and r.action.startswith("imputed") and rows:
            share = float(r.n_before) / rows
            if share > threshold:
                out[str(col)] = share
    return out


# ---- the rule engine ---------------------------------------------------------------------
def review(inp: ReviewInputs) -> Review:
    """Score, list issues and improvements, and decide; a pure function of ``inp``."""
    acc = Findings()
    head = _headline(inp.estimates)
    this_round = sorted(
        codes_in([c for e in inp.estimates for c in e.details.changes_applied])
        | codes_in(inp.ps.changes if inp.ps is not None else None)
    )
    applied = set(this_round) | codes_in(inp.earlier_applied)
    if _constant_treatment(inp):
        acc.impossible.append(
            f"{inp.treatment} takes a single value in the analysed sample: there is no comparison group"
        )
    scores = {
        "identification": _identification(inp, acc),
        "overlap": _overlap(inp, acc, applied),
        "balance": _balance(inp, acc, applied),
        "agreement": _agreement(inp, acc),
        "robustness": _robustness(inp, acc),
        "data_quality": _data_quality(inp, acc),
    }
    _blockers(inp, acc, head, applied)
    _design_contract(inp, acc, head)
    _stability(acc, head)
    design_head = head is not None and head.details.is_design
    if (
        not design_head
        and not any(e.details.family == "doubly_robust" for e in inp.estimates)
        and "add_doubly_robust" not in applied
    ):
        acc.improvements["add_doubly_robust"] = (
            f"add_doubly_robust: add an AIPW / doubly robust estimate of {inp.treatment} -> {inp.outcome}; it stays "
            "consistent if either the outcome or the propensity model is right."
        )
    for code in sorted(set(acc.improvements) & applied):  # never recommend what was already applied
        del acc.improvements[code]
    repeated = codes_in(inp.previous_improvements) & set(acc.improvements) - applied
    if repeated:
        acc.issues.append(f"Recommended last round but not applied: {', '.join(sorted(repeated))}.")
    improvements = list(acc.improvements.values())
    budget = inp.round < inp.max_iterations
    limit = False
    if acc.impossible:
        decision = CritiqueDecision.REJECT
        acc.reasons.insert(
            0, "REJECT: the effect is not identifiable with these data: " + "; ".join(acc.impossible) + "."
        )
        improvements = []
    elif acc.blockers:
        decision = CritiqueDecision.REJECT
        acc.reasons.insert(0, "REJECT: the answer is not trustworthy: " + "; ".join(acc.blockers) + ".")
        improvements = []
    elif improvements and budget:
        decision = CritiqueDecision.ITERATE
        acc.reasons.insert(0, f"ITERATE (round {inp.round} of {inp.max_iterations}): untried improvements remain.")
    elif acc.must_trim:
        decision, limit = CritiqueDecision.ITERATE, True
        acc.reasons.insert(
            0,
            f"NOT APPROVED: overlap is poor and the estimate is untrimmed, but the iteration budget "
            f"({inp.max_iterations} rounds) is spent; decision ITERATE at the limit, so the loop stops unapproved.",
        )
    elif acc.disagree:
        decision = CritiqueDecision.REJECT
        acc.reasons.insert(
            0,
            f"REJECT (inconclusive) after round {inp.round}: the credible estimators still disagree and no untried "
            "change or round is left, so no single number can be trusted.",
        )
        improvements = []
    elif improvements or acc.doubts:
        # Running out of rounds is not evidence: what is still open keeps the answer unapproved.
        open_ = "; ".join([*acc.doubts, *(f"untried: {i.split(':')[0]}" for i in improvements)])
        if budget:  # nothing another round could change: stop now, unapproved
            decision = CritiqueDecision.REJECT
            acc.reasons.insert(0, f"NOT APPROVED in round {inp.round}: doubts no further round can settle: {open_}.")
        else:
            decision, limit = CritiqueDecision.ITERATE, True
            acc.reasons.insert(
                0, f"NOT APPROVED (limit) after round {inp.round} of {inp.max_iterations}: doubts remain: {open_}."
            )
    else:
        decision = CritiqueDecision.APPROVE
        acc.reasons.insert(0, "APPROVE: identification holds, the credible estimators agree and no doubt is open.")
    if head is not None:
        acc.reasons.append(f"Headline: {head.method} = {head.estimate:.4g} [{head.ci_lower:.4g}, {head.ci_upper:.4g}].")
    if this_round:
        acc.reasons.append(f"Changes applied this round: {', '.join(this_round)}.")
    verdict = acc.reasons[0]
    return Review(
        decision,
        scores,
        acc.issues,
        improvements,
        acc.reasons,
        this_round,
        limit,
        [*acc.impossible, *acc.blockers],
        verdict,
    )


def _stability(acc: Findings, head: TreatmentEffectResult | None) -> None:
    """A backdoor headline that moves on common support or with flexible nuisances is not approved."""
    for text in stability_doubts(head):
        acc.issues.append(f"Fragile: {text}.")
        acc.doubts.append(text)


def _design_contract(inp: ReviewInputs, acc: Findings, head: TreatmentEffectResult | None) -> None:
    """A stated design headlines and its own checks hold (:mod:`whyflow.causal.review.doubts`)."""
    if head is None:
        return
    found = design_findings(head, inp.declared)
    acc.blockers.extend(found.blockers)
    acc.doubts.extend(found.doubts)
    acc.issues.extend(found.issues)


def _blockers(inp: ReviewInputs, acc: Findings, head: TreatmentEffectResult | None, applied: set[str]) -> None:
    """Degenerate intervals, unrepaired data on adjusted columns, and what to do about disagreement."""
    if head is not None:
        stats = (inp.profile.numeric_stats.get(inp.outcome) if inp.profile is not None else None) or {}
        degenerate = degenerate_interval(head, stats.get("std"))
        if degenerate:
            acc.blockers.append(degenerate)
    adjustment = set(inp.confounders.adjustment_set if inp.confounders is not None else []) | set(
        adjustment_set_of(head, inp.confounders)
    )
    bad = unrepaired_in_set(inp.repairs, adjustment)
    if bad:
        acc.blockers.append(
            "failed data expectation(s) on adjusted-for columns were not repaired ("
            + ", ".join(f"{c}: {x}" for c, x in sorted(bad.items()))
            + "); fix the data and re-run"
        )
    if acc.disagree and "refit_nuisance" not in applied:
        acc.improvements["refit_nuisance"] = (
            "refit_nuisance: the credible estimators disagree; re-choose the nuisance models by cross-validated loss "
            "(linear, quadratic, gradient boosting) with 10 cross-fitting folds and compare again."
        )
