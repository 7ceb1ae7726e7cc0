"""What each agent asks the model, and how the answer is checked before anything uses it.

One function per LLM mode. Each builds a short prompt (anything from the user's files fenced
with :func:`~whyflow.runtime.llm.data_block`), asks through the step's client with a check, and
returns a validated answer or None (the agent then keeps its deterministic result). None of
them can touch an estimate: the model labels, orders, chooses among allowed options, and
writes prose whose numbers must all be in the facts it was given.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from whyflow.causal.knowledge import DomainKnowledge, ModelReview, RoleSuggestionsRecord
from whyflow.causal.queries import headline_of
from whyflow.runtime.llm import data_block
from whyflow.runtime.llm.validate import (
    ROLES,
    Role,
    check_edges,
    check_numbers,
    number_matches,
    numbers_in,
    numbers_of,
    unknown_columns,
)

__all__ = [
    "annotated",
    "suggest_roles",
    "propose_orientations",
    "critique_review",
    "write_summary",
    "choose_step",
    "MODEL_MARK",
]

MODEL_MARK = "[written by the language model; numbers checked against the analysis]"
"""How model-written prose is marked wherever it appears (recommendations, debate, notebook)."""

_MAX_COLUMNS = 40


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


def annotated(llm: Any, result: Any, changed: list[str] | None = None) -> Any:
    """``result`` with the step's model use recorded (unchanged when the model is off)."""
    if llm is not None and hasattr(llm, "annotate"):
        llm.annotate(result, changed)
    return result


# ---- domain knowledge --------------------------------------------------------------------------
class RoleSuggestion(_Answer):
    column: str
    role: Role
    reason: str = ""


class RoleSuggestions(_Answer):
    """Roles for columns nobody has described, and a time order if none is declared."""

    suggestions: list[RoleSuggestion] = Field(default_factory=list, max_length=_MAX_COLUMNS)
    temporal_order: list[list[str]] = Field(default_factory=list)


def suggest_roles(
    llm: Any,
    columns: list[str],
    descriptions: dict[str, str],
    known_roles: dict[str, str],
    treatment: str | None,
    outcome: str | None,
    want_order: bool,
) -> RoleSuggestions | None:
    """Suggested roles for columns without one (and a temporal order), validated; or None."""
    open_cols = [c for c in columns if c not in known_roles and c not in (treatment, outcome)][:_MAX_COLUMNS]
    if not open_cols:
        return None
    listing = "\n".join(f"- {c}: {str(descriptions.get(c, ''))[:120]}" for c in open_cols)
    ask = (
        f"A causal study of the effect of '{treatment}' on '{outcome}'. For each column below, suggest its "
        f"causal role, one of: {', '.join(sorted(ROLES))}, with a reason of at most 8 words. "
        "Only name columns from the list."
        + (" Also give temporal_order: lists of columns from earliest measured to latest." if want_order else "")
        + "\n"
        + data_block("columns", listing)
    )
    fixed = {**known_roles, **{c: r for c, r in (("treatment", treatment), ("outcome", outcome)) if r}}

    def check(ans: RoleSuggestions) -> list[str]:
        problems = unknown_columns([s.column for s in ans.suggestions], open_cols)
        problems += [f"'{s.column}' is the {fixed[s.column]}" for s in ans.suggestions if s.column in fixed]
        if want_order and ans.temporal_order:
            flat = [c for tier in ans.temporal_order for c in tier]
            problems += unknown_columns(flat, columns)
            if len(flat) != len(set(flat)):
                problems.append("a column appears twice in temporal_order")
            tier = {c: i for i, t in enumerate(ans.temporal_order) for c in t}
            if treatment in tier and outcome in tier and tier[treatment] >= tier[outcome]:
                problems.append(f"temporal_order puts '{outcome}' no later than '{treatment}'")
        return problems

    budget = 60 + 30 * len(open_cols) + (15 * len(columns) if want_order else 0)
    msgs = [{"role": "user", "content": ask}]
    return llm.structured(msgs, RoleSuggestions, purpose="roles", check=check, max_tokens=min(800, budget))


# ---- DAG expert --------------------------------------------------------------------------------
class Orientation(_Answer):
    source: str
    target: str
    reason: str = ""


class Orientations(_Answer):
    """Directions for edges the data left unoriented."""

    orientations: list[Orientation] = Field(default_factory=list)


def propose_orientations(
    llm: Any,
    nodes: list[str],
    undirected: list[tuple[str, str]],
    directed: list[tuple[str, str]],
    forbid: Callable[[str, str], str | None],
    descriptions: dict[str, str],
) -> Orientations | None:
    """Orientations of undirected edges: each one of those edges, none forbidden, the whole acyclic."""
    if not undirected:
        return None
    pairs = {frozenset(p) for p in undirected}
    desc = "\n".join(f"- {n}: {str(descriptions.get(n, ''))[:100]}" for n in nodes[:_MAX_COLUMNS])
    ask = (
        "These pairs of variables are causally linked but the direction is unknown: "
        + "; ".join(f"{a} -- {b}" for a, b in undirected)
        + ". For each, say which causes which (source -> target), using what the variables mean.\n"
        + data_block("variables", desc)
    )

    def check(ans: Orientations) -> list[str]:
        edges = [(o.source, o.target) for o in ans.orientations]
        problems = [
            f"{a} -- {b} is not one of the undirected edges" for a, b in edges if frozenset((a, b)) not in pairs
        ]
        return problems + check_edges(edges, nodes, fixed=directed, forbid=forbid)

    msgs = [{"role": "user", "content": ask}]
    return llm.structured(msgs, Orientations, purpose="orient_edges", check=check, max_tokens=40 + 40 * len(undirected))


# ---- critique ----------------------------------------------------------------------------------
class ReviewPoints(_Answer):
    """A reviewer's points on the analysis and whether it would approve it."""

    points: list[str] = Field(default_factory=list, max_length=6)
    would_approve: bool = False


def _numbers_check(allowed: set[float]) -> Callable[[str], list[str]]:
    def check(text: str) -> list[str]:
        _, dropped = check_numbers(text, allowed)
        return [f"numbers not in the analysis: {s!r}" for s in dropped]

    return check


def critique_review(llm: Any, facts: dict[str, Any], decision: str) -> ModelReview | None:
    """Advisory review points (numbers checked) for the debate; never the decision."""
    allowed = numbers_of(facts)
    ask = (
        "You review a causal analysis. Facts (the only numbers you may use):\n"
        + json.dumps(facts, default=str)[:3000]
        + "\nList up to 4 short points a careful reviewer would raise, and whether you would approve it."
    )

    def check(ans: ReviewPoints) -> list[str]:
        return [p for s in ans.points for p in _numbers_check(allowed)(s)]

    ans = llm.structured(
        [{"role": "user", "content": ask}], ReviewPoints, purpose="critique", check=check, max_tokens=250
    )
    if ans is None:
        return None
    agrees = ans.would_approve == (decision == "APPROVE")
    llm.note_change(f"added {len(ans.points)} advisory review point(s) to the debate; decision unchanged ({decision})")
    return ModelReview(
        reviewer="language model",
        model=llm.model,
        points=[p.strip() for p in ans.points if p.strip()],
        would_approve=ans.would_approve,
        agrees_with_rules=agrees,
        effect="advisory: the rule-based decision stands" + ("" if agrees else f" ({decision})"),
        mark=MODEL_MARK,
    )


# ---- orchestrator ------------------------------------------------------------------------------
def write_summary(
    llm: Any, facts: dict[str, Any], context: str = "", anchor: float | None = None
) -> tuple[str, list[str]] | None:
    """A short plain-language summary; sentences with numbers not in ``facts`` are dropped.

    With ``anchor`` (the headline estimate) the summary must state it: prose that never says
    what was found is rambling, not a summary. A sentence cut off by the token cap is dropped.
    """
    allowed = numbers_of(facts)
    ask = (
        "Write a plain-language summary (3 to 5 sentences) of this causal analysis for a non-specialist. "
        "Use only these facts and copy numbers exactly as given:\n"
        + json.dumps(facts, default=str)[:3000]
        + (("\nBackground on the data:\n" + data_block("dataset", context[:800])) if context else "")
    )
    text = llm.text([{"role": "user", "content": ask}], purpose="summary", max_tokens=160)
    if text is None:
        return None
    text = " ".join(text.split())
    if text and text[-1] not in ".!?)\"'":
        cut = max(text.rfind(". "), text.rfind("! "), text.rfind("? "))
        text = text[: cut + 1] if cut > 0 else ""
    kept, dropped = check_numbers(text, allowed)
    if anchor is not None and kept and not any(number_matches(v, d, p, [anchor]) for v, d, p in numbers_in(kept)):
        llm.reject("summary", "the summary does not state the headline estimate", text)
        return None
    if dropped:
        llm.reject("summary", f"{len(dropped)} sentence(s) dropped: numbers not in the analysis", dropped)
    if len(kept) < 20:
        llm.reject("summary", "nothing usable left after the number check", text)
        return None
    return kept, dropped


# ---- ReAct estimator ---------------------------------------------------------------------------
class StepArgs(_Answer):
    """Run this tool; say why in one sentence."""

    thought: str = ""


class EstimateArgs(_Answer):
    """Estimate the effect with one of the allowed methods; say why in one sentence."""

    method: str
    thought: str = ""


def choose_step(
    llm: Any, tools: Iterable[str], valid: Iterable[str], methods: list[str], history: list[dict[str, Any]]
) -> tuple[str, str, str | None] | None:
    """The next (thought, tool, method) among the valid options; None to use the policy."""
    valid = list(valid)
    specs: dict[str, type[BaseModel]] = {t: (EstimateArgs if t == "estimate" else StepArgs) for t in tools}
    ask = (
        "You are estimating a causal effect step by step. Choose the next tool"
        f" among: {', '.join(valid)}."
        + (f" For estimate, method is one of {methods}." if "estimate" in valid else "")
        + f" Steps so far: {json.dumps(history[-8:])}"
    )

    def check(call: Any) -> list[str]:
        if call.name not in valid:
            return [f"'{call.name}' is not allowed now; choose one of {', '.join(valid)}"]
        if call.name == "estimate" and getattr(call.arguments, "method", None) not in methods:
            return [f"method must be one of {methods}"]
        return []

    call = llm.tool_call([{"role": "user", "content": ask}], specs, purpose="next_tool", check=check, max_tokens=80)
    if call is None or isinstance(call, str):
        if isinstance(call, str):
            llm.reject("next_tool", "the model answered in prose, not with a tool call", call)
        return None
    method = getattr(call.arguments, "method", None)
    thought = getattr(call.arguments, "thought", "") or f"model chose {call.name}"
    return f"(model) {thought}", call.name, method


def domain_knowledge_mode(
    llm: Any,
    mode: str,
    knowledge: DomainKnowledge,
    columns: list[str],
    treatment: str | None,
    outcome: str | None,
    notes: list[str],
) -> list[str]:
    """Ask for roles (and an order); record them, and in ``apply`` mode fill in the gaps.

    Never overrides what the metadata, the user or the data decided: only columns without a
    role are labelled, and a temporal order is used only when none is declared. Returns one
    line per change made (none in ``suggest`` mode).
    """
    roles = knowledge.roles
    want_order = not knowledge.temporal_order
    ans = suggest_roles(llm, columns, knowledge.column_descriptions, roles, treatment, outcome, want_order)
    if ans is None:
        return []
    suggested = {s.column: s.role for s in ans.suggestions}
    knowledge.llm_suggestions = RoleSuggestionsRecord(
        model=llm.model,
        roles=suggested,
        reasons={s.column: s.reason for s in ans.suggestions if s.reason},
        temporal_order=ans.temporal_order if want_order else [],
        applied=mode == "apply",
        mark="suggested by the language model",
    )
    if mode != "apply":
        if suggested:
            notes.append(
                f"the language model suggested roles for {len(suggested)} column(s); not applied "
                "(domain_knowledge option llm: apply uses them)"
            )
        return []
    changed = []
    for col, role in suggested.items():
        roles[col] = role
        if role in ("post_treatment", "mediator") and col not in knowledge.post_treatment:
            knowledge.post_treatment.append(col)
        if role == "pre_treatment" and col not in knowledge.pre_treatment:
            knowledge.pre_treatment.append(col)
        changed.append(f"'{col}' given the role '{role}' (language model)")
    if want_order and ans.temporal_order:
        knowledge.temporal_order = [list(t) for t in ans.temporal_order if t]
        changed.append(f"temporal order of {len(knowledge.temporal_order)} tiers (language model)")
    notes += changed
    return changed


def dag_expert_mode(
    llm: Any,
    mode: str,
    nodes: list[str],
    edges: list[Any],
    forbid: Callable[[str, str], str | None],
    descriptions: dict[str, str],
) -> tuple[list[Any], list[str], list[str]]:
    """Ask for directions of the undirected edges; (edges, changes, notes for the reasoning).

    In ``apply`` mode the validated orientations replace the undirected edges (acyclic with
    every directed edge, none against declared knowledge); in ``suggest`` mode they are only
    reported. Directed and bidirected edges are never touched.
    """
    undirected = [(e.source, e.target) for e in edges if e.edge_type == "undirected"]
    directed = [(e.source, e.target) for e in edges if e.edge_type == "directed"]
    ans = propose_orientations(llm, nodes, undirected, directed, forbid, descriptions)
    if ans is None or not ans.orientations:
        return edges, [], []
    chosen = {frozenset((o.source, o.target)): o for o in ans.orientations}
    said = "; ".join(
        f"{o.source} -> {o.target}" + (f" ({o.reason[:80]})" if o.reason else "") for o in ans.orientations
    )
    if mode != "apply":
        return edges, [], [f"The language model suggests orienting {said}; not applied (dag_expert option llm: apply)."]
    out, changed = [], []
    for e in edges:
        o = chosen.get(frozenset((e.source, e.target))) if e.edge_type == "undirected" else None
        if o is None:
            out.append(e)
            continue
        out.append(e.model_copy(update={"source": o.source, "target": o.target, "edge_type": "directed"}))
        changed.append(f"oriented {e.source} -- {e.target} as {o.source} -> {o.target} (language model, validated)")
    return out, changed, []


def analysis_facts(
    treatment: str,
    outcome: str,
    estimates: Iterable[Any],
    *,
    decision: str | None = None,
    scores: dict[str, Any] | None = None,
    issues: Iterable[str] = (),
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The facts a model may talk about (and the only numbers it may write), from the state."""
    rows = []
    for e in estimates:
        rows.append(
            {
                "method": e.method,
                "estimate": round(float(e.estimate), 4),
                "ci_95": [round(float(e.ci_lower), 4), round(float(e.ci_upper), 4)],
                "headline": bool(e.details.headline),
            }
        )
    facts: dict[str, Any] = {"treatment": treatment, "outcome": outcome, "estimates": rows[:8]}
    if decision:
        facts["review_decision"] = decision
    if scores:
        facts["review_scores_out_of_5"] = scores
    issue_list = [str(i)[:240] for i in issues][:4]
    if issue_list:
        facts["issues"] = issue_list
    facts.update(extra or {})
    return facts


def critique_llm_review(
    llm: Any, treatment: str, outcome: str, estimates: Iterable[Any], rv: Any
) -> ModelReview | None:
    """The critique's hook: the debate entry's ``llm_review`` (advisory points, or None when rejected)."""
    decision = rv.decision.value
    facts = analysis_facts(treatment, outcome, estimates, decision=decision, scores=rv.scores, issues=rv.issues)
    return critique_review(llm, facts, decision)


def orchestrator_summary(
    llm: Any,
    treatment: str,
    outcome: str,
    estimates: Iterable[Any],
    critique: Any,
    recommendations: list[str],
    domain: DomainKnowledge | None,
) -> list[str]:
    """The orchestrator's hook: ``[marked summary]`` or ``[]``; numbers not in the state are dropped."""
    estimates = list(estimates)
    facts = analysis_facts(
        treatment,
        outcome,
        estimates,
        decision=critique.decision.value if critique is not None else "not reviewed",
        scores=dict(critique.scores) if critique is not None else None,
        extra={"recommendations": [r[:300] for r in recommendations[:3]]},
    )
    domain = domain or DomainKnowledge()
    described = "; ".join(f"{c}: {d}" for c, d in list(domain.column_descriptions.items())[:12])
    context = " ".join(x for x in (domain.description, described) if x)
    head = headline_of(estimates)
    out = write_summary(llm, facts, context, anchor=float(head.estimate) if head is not None else None)
    if not out:
        return []
    dropped = f" ({len(out[1])} sentence(s) dropped: numbers not in the analysis)" if out[1] else ""
    llm.note_change(f"added a model-written summary to the recommendations{dropped}")
    return [f"{MODEL_MARK} {out[0]}"]
