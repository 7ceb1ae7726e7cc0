"""The report's review sections: each assumption's status, the critique's rounds, and what the
language model wrote.

The notebook shows the assumptions with the state's evidence for each, every critique round with
its decision and scores, and model-written text (the critique's advisory points, domain_knowledge's
role suggestions, model-written recommendations) as escaped plain text, marked, with what it
changed. :func:`whyflow.causal.report.context.build_context` puts them into the template context.
"""

from __future__ import annotations

import re
from typing import Any

from whyflow.causal.diagnostics import ConfounderDiscovery, PSDiagnostics
from whyflow.causal.knowledge import DebateEntry, DomainKnowledge, ModelReview
from whyflow.causal.prompts import MODEL_MARK
from whyflow.causal.queries import post_treatment_set
from whyflow.causal.state import CritiqueDecision, CritiqueFeedback, TreatmentEffectResult
from whyflow.causal.view import AnalysisView

__all__ = ["assumption_rows", "critique_rounds", "recommendations", "domain_llm_context", "model_text"]


def assumption_rows(
    view: AnalysisView, headline: TreatmentEffectResult | None, agreement: dict[str, Any] | None
) -> list[dict[str, str]]:
    """Each assumption with a status (holds, doubtful, unknown, reported) and the state's evidence."""
    from whyflow.causal.report.notebook import fmt_num, fmt_pct

    rows: list[dict[str, str]] = []
    cd = view.confounder_discovery or ConfounderDiscovery()
    ps = view.ps_diagnostics or PSDiagnostics()
    ident = cd.identification
    if ident is not None:
        rows.append(
            {
                "name": "Identification",
                "status": "holds" if ident.identified else "doubtful",
                "evidence": f"{ident.method}: {ident.estimand}".strip(": "),
            }
        )
    post = post_treatment_set(cd, view.domain_knowledge)
    if headline is not None:
        bad = sorted(post & set(headline.details.adjustment_set))
        rows.append(
            {
                "name": "No post-treatment variable adjusted for",
                "status": "doubtful" if bad else "holds",
                "evidence": f"adjusted for {', '.join(bad)}"
                if bad
                else f"none of {len(post)} known post-treatment variables is in the headline's adjustment set",
            }
        )
    sens = view.sensitivity_results
    rows.append(
        {
            "name": "No unmeasured confounding",
            "status": "unknown",
            "evidence": "cannot be tested from data; "
            + (
                "; ".join(f"{s.method}: {s.interpretation}" for s in sens[:3])
                if sens
                else "no sensitivity analysis was run"
            ),
        }
    )
    if ps.overlap_ok is not None:
        share = ps.outside_support.overall if ps.outside_support is not None else None
        rows.append(
            {
                "name": "Overlap (positivity)",
                "status": "holds" if ps.overlap_ok else "doubtful",
                "evidence": f"AUC {fmt_num(ps.auc)}"
                + (f"; {fmt_pct(share)} of rows outside common support" if share is not None else ""),
            }
        )
    if ps.balance_ok is not None:
        rows.append(
            {
                "name": "Covariate balance after weighting",
                "status": "holds" if ps.balance_ok else "doubtful",
                "evidence": f"largest |SMD| {fmt_num(ps.max_smd_before)} before, {fmt_num(ps.max_smd_after)} after weighting",
            }
        )
    if headline is not None and headline.assumptions_tested:
        rows.append(
            {
                "name": "Checks run by the estimator",
                "status": "reported",
                "evidence": "; ".join(headline.assumptions_tested),
            }
        )
    if agreement and agreement.get("n", 0) >= 2:
        agree = agreement["same_sign"] == agreement["n"] and agreement["covering"] == agreement["n"]
        rows.append(
            {"name": "Estimators agree", "status": "holds" if agree else "doubtful", "evidence": agreement["text"]}
        )
    eda = view.eda_result
    if eda is not None:
        issues = eda.data_quality_issues
        rows.append(
            {
                "name": "Data quality",
                "status": "doubtful" if issues else "holds",
                "evidence": "; ".join(issues[:3]) or "no data-quality issues flagged",
            }
        )
    history = view.critique_history
    if history:
        last = history[-1]
        why = last.verdict or "; ".join(last.issues[:2])
        rows.append(
            {
                "name": "Critique approval",
                "status": "holds" if last.decision is CritiqueDecision.APPROVE else "doubtful",
                "evidence": f"final decision {_decision_label(last)}" + (f": {why}" if why else ""),
            }
        )
    return rows


def _decision_label(c: CritiqueFeedback) -> str:
    """APPROVE, ITERATE or REJECT; a loop that stopped on its limit unapproved says so."""
    return (
        "NOT APPROVED (limit)" if c.limit_reached and c.decision is not CritiqueDecision.APPROVE else c.decision.value
    )


def critique_rounds(critique: list[CritiqueFeedback], debate: list[DebateEntry]) -> list[dict[str, Any]]:
    """Each critique round: its decision, scores, issues, improvements, the changes it applied, the model's review."""
    rounds = []
    for i, c in enumerate(critique, start=1):
        changes = [ch for d in debate if d.round == i for ch in d.changes_applied]
        # A round the model was asked about has llm_review set: None when its answer was rejected.
        asked = [d for d in debate if d.round == i and "llm_review" in d.model_fields_set]
        rounds.append(
            {
                "round": i,
                "decision": _decision_label(c),
                "scores": c.scores,
                "issues": c.issues,
                "improvements": c.improvements,
                "reasoning": c.reasoning,
                "changes_applied": changes,
                "model": _model_review(asked[-1].llm_review, c.decision.value) if asked else None,
            }
        )
    return rounds


# ---- what the language model wrote (text only, marked, with what it changed) ------------------------
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|~$])")


def model_text(value: Any, limit: int = 600) -> str:
    """Model-written text as plain text inside Markdown: no HTML, links, emphasis, maths or block syntax."""
    text = " ".join(str(value).split())[:limit]
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MD_SPECIAL.sub(r"\\\1", text)
    text = re.sub(r"(?i)(?<=[a-z])(:)(?=//)|(?<=www)(\.)", lambda m: f"&#{ord(m.group(0))};", text)  # no autolinks
    text = re.sub(r"^(\d+)\.", r"\1\\.", text)  # no numbered item, list or heading underline at the start
    return re.sub(r"^([-=])", r"\\\1", text)


def recommendations(given: list[str]) -> list[str]:
    """The recommendations; a model-written one keeps its mark and is rendered as text."""
    return [
        f"{MODEL_MARK} {model_text(r.removeprefix(MODEL_MARK), 2000)}" if r.startswith(MODEL_MARK) else r for r in given
    ]


def _model_review(review: ModelReview | None, decision: str) -> dict[str, Any]:
    """The critique's model points for the notebook, escaped, with what they changed (nothing)."""
    if review is None:
        why = "nothing: the model's answer was rejected by the checks, so none of it is shown"
        return {"points": [], "changed": why}
    opinion = "would approve it" if review.would_approve else "would not approve it"
    opinion += " (agreeing with the rules)" if review.agrees_with_rules else " (disagreeing with the rules)"
    return {
        "model": model_text(review.model or "the language model", 120),
        "points": [model_text(p) for p in review.points if p.strip()],
        "opinion": f"The model says it {opinion}",
        "changed": f"nothing: the points are advisory and the rule-based decision ({decision}) stands; no estimate was touched",
    }


def domain_llm_context(known: DomainKnowledge | None) -> dict[str, Any] | None:
    """domain_knowledge's model suggestions for the notebook, escaped, with what they changed."""
    sug = known.llm_suggestions if known is not None else None
    if sug is None:
        return None
    rows = [
        {
            "column": model_text(col, 120),
            "role": model_text(role, 40),
            "reason": model_text(sug.reasons.get(col, ""), 200),
        }
        for col, role in sug.roles.items()
    ]
    order = [", ".join(model_text(c, 120) for c in tier) for tier in sug.temporal_order if tier]
    if sug.applied:
        what = [f"gave {len(rows)} column(s) without a declared role the suggested role"] if rows else []
        what += ["took the time order from the model (none was declared)"] if order else []
        changed = ("; ".join(what) or "nothing: it suggested no role") + (
            ". Declared roles, the treatment and the outcome were never overridden; roles feed the graph and the "
            "adjustment set, but every estimate is computed from the data, never by the model"
        )
    else:
        changed = (
            "nothing: the suggestions were recorded, not applied (the domain_knowledge option `llm: apply` "
            "would fill in the undeclared roles)"
        )
    return {
        "model": model_text(sug.model or "the language model", 120),
        "rows": rows,
        "order": order,
        "applied": sug.applied,
        "changed": changed,
    }
