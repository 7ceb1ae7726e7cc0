"""Questions agents ask of the typed collections, each answered in exactly one place.

The headline of a pair and its latest round, the refuter tally, the headline's E-value, the
post-treatment set and the adjustment set of a headline: every agent (the critique, the
orchestrator, sensitivity analysis, the notebook) calls these instead of re-deriving them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from whyflow.causal.diagnostics import ConfounderDiscovery
from whyflow.causal.knowledge import DomainKnowledge
from whyflow.causal.state import AnalysisState, SensitivityResult, TreatmentEffectResult

__all__ = [
    "POST_TREATMENT_ROLES",
    "latest_round",
    "headline_of",
    "headline_estimate",
    "effects_for_pair",
    "pair_estimates",
    "refuter_tally",
    "headline_evalue",
    "evalue_of_limit",
    "post_treatment_set",
    "adjustment_set_of",
]

_POST_WORDS = re.compile(r"post|after|mediat|descendant|collider|caused by the treatment", re.IGNORECASE)
POST_TREATMENT_ROLES = ("mediators", "colliders", "descendants", "derived_from_treatment")
"""The roles of ``confounder_discovery`` that place a variable after the treatment."""


def latest_round(effects: Iterable[TreatmentEffectResult]) -> list[TreatmentEffectResult]:
    """The estimates of the latest critique round (every estimate of round 0 when unlabelled)."""
    effects = list(effects)
    latest = max((e.details.round for e in effects), default=0)
    return [e for e in effects if e.details.round == latest]


def headline_of(estimates: Iterable[TreatmentEffectResult]) -> TreatmentEffectResult | None:
    """The estimate flagged as headline (the first flagged), else the first; ``None`` if empty."""
    estimates = list(estimates)
    return next((e for e in estimates if e.details.headline), estimates[0] if estimates else None)


def effects_for_pair(
    effects: Iterable[TreatmentEffectResult], treatment: str, outcome: str
) -> list[TreatmentEffectResult]:
    """Every estimate of one treatment-outcome pair, all rounds, in the order they were made."""
    return [e for e in effects if e.treatment_variable == treatment and e.outcome_variable == outcome]


def pair_estimates(
    effects: Iterable[TreatmentEffectResult], treatment: str, outcome: str
) -> tuple[TreatmentEffectResult | None, list[TreatmentEffectResult]]:
    """The headline and the latest round of one pair's estimates."""
    mine = latest_round(effects_for_pair(effects, treatment, outcome))
    return headline_of(mine), mine


def headline_estimate(state: AnalysisState) -> TreatmentEffectResult | None:
    """The analysis's answer: the headline of the primary pair's latest round (``None`` without one).

    Every reader of a finished analysis (the run summary, a nested run's answer, the model's
    summary, the benchmarks) takes the answer from here, so an earlier round's headline or
    another pair's is never reported as the answer.
    """
    treatment, outcome = state.get_primary_pair()
    if not (treatment and outcome):
        return None
    return pair_estimates(state.treatment_effects, treatment, outcome)[0]


def refuter_tally(sensitivity: Iterable[SensitivityResult]) -> tuple[int, int]:
    """How many refuters passed, out of how many gave a verdict."""
    verdicts = [r.details.passed for r in sensitivity if r.details.kind == "refuter" and r.details.passed is not None]
    return sum(bool(v) for v in verdicts), len(verdicts)


def headline_evalue(sensitivity: Iterable[SensitivityResult]) -> SensitivityResult | None:
    """The E-value of the headline estimate (else the first E-value), if any."""
    values = [r for r in sensitivity if r.details.kind == "e_value"]
    return next((r for r in values if r.details.headline), values[0] if values else None)


def evalue_of_limit(evalue: SensitivityResult) -> float:
    """The E-value of the confidence limit closest to the null (1 when the interval crosses it)."""
    limit = evalue.details.evalue_ci
    if limit is None:  # SensitivityDetails requires it on every e_value result
        raise ValueError(f"sensitivity result '{evalue.method}' is not an E-value")
    return limit


def post_treatment_set(
    confounder_discovery: ConfounderDiscovery | None, domain_knowledge: DomainKnowledge | None
) -> set[str]:
    """Every variable placed after the treatment.

    Confounder discovery's post-treatment roles, the columns it excluded for a post-treatment
    reason, and domain knowledge's ``post_treatment`` list.
    """
    cd, dk = confounder_discovery or ConfounderDiscovery(), domain_knowledge or DomainKnowledge()
    post = {str(c) for role in POST_TREATMENT_ROLES for c in getattr(cd, role)}
    post |= {str(c) for c, why in cd.excluded.items() if _POST_WORDS.search(str(why))}
    return post | {str(c) for c in dk.post_treatment}


def adjustment_set_of(
    head: TreatmentEffectResult | None, confounder_discovery: ConfounderDiscovery | None = None
) -> list[str]:
    """What the headline adjusted for: its own record first, else confounder discovery's set."""
    if head is not None and (head.details.adjustment_set or head.details.method_key != "unknown"):
        return list(head.details.adjustment_set)
    return [str(c) for c in (confounder_discovery.adjustment_set if confounder_discovery is not None else [])]
