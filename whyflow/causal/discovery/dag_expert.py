"""DAG expert: refine a proposed graph with what the question and domain knowledge decide.

Why: discovery leaves edges unoriented (Markov equivalence) or oriented against facts the
analyst knows (time order, the outcome comes last). This agent applies those facts, adds the
edges domain knowledge requires, guarantees acyclicity and explains the result in plain words.
Every change is listed in the reasoning.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from whyflow.causal.discovery.graphs import Knowledge, break_cycles, directed_graph, mediators
from whyflow.causal.prompts import annotated, dag_expert_mode
from whyflow.causal.state import AnalysisState, CausalDAG, CausalEdge
from whyflow.causal.view import AnalysisView
from whyflow.core.agent import Agent, AgentContext, AgentParams, AgentResult
from whyflow.core.errors import AgentError
from whyflow.core.status import JobStatus
from whyflow.core.view import required

__all__ = ["DAGExpertAgent", "DAGExpertParams", "refine_edges"]


def _arrow(e: CausalEdge) -> str:
    sym = {"directed": "->", "undirected": "--", "bidirected": "<->"}.get(e.edge_type, "?")
    return f"{e.source} {sym} {e.target}"


def _refine_one(e: CausalEdge, k: Knowledge, keep_bidirected: bool) -> tuple[CausalEdge | None, str]:
    """Apply knowledge to one edge: keep, orient, reverse or remove it (with the reason)."""
    fwd, back = k.forbid_reason(e.source, e.target), k.forbid_reason(e.target, e.source)
    if not (fwd or back):
        return e, ""
    if e.edge_type == "bidirected" and keep_bidirected:
        return e, ""
    if fwd and back:
        return None, f"removed {_arrow(e)}: {fwd}; and {back}"
    if e.edge_type == "directed":
        if fwd:
            new = e.model_copy(update={"source": e.target, "target": e.source})
            return new, f"reversed {_arrow(e)} to {_arrow(new)}: {fwd}"
        return e, ""
    src, dst = (e.target, e.source) if fwd else (e.source, e.target)
    new = CausalEdge(source=src, target=dst, edge_type="directed", confidence=e.confidence)
    return new, f"oriented {_arrow(e)} as {_arrow(new)}: {fwd or back}"


def refine_edges(
    nodes: list[str], edges: list[CausalEdge], k: Knowledge, *, keep_bidirected: bool, add_pair_edge: bool
) -> tuple[list[str], list[CausalEdge], list[str]]:
    """Orient, reverse and remove edges per ``k``, add required edges, break cycles.

    Returns the nodes, the refined edges and one sentence per change.
    """
    changes: list[str] = []
    out: dict[frozenset[str], CausalEdge] = {}
    for e in edges:
        new, note = _refine_one(e, k, keep_bidirected)
        if note:
            changes.append(note)
        if new is not None:
            out[frozenset((new.source, new.target))] = new
    nodes = list(nodes)
    required = sorted(k.required)
    if add_pair_edge and k.treatment and k.outcome and (k.treatment, k.outcome) not in k.required:
        required.append((k.treatment, k.outcome))
    for a, b in required:
        for n in (a, b):
            if n not in nodes:
                nodes.append(n)
                changes.append(f"added node {n} (named by a required edge)")
        key = frozenset((a, b))
        old = out.get(key)
        if old is not None and old.edge_type == "directed" and (old.source, old.target) == (a, b):
            continue
        by_pair = (a, b) not in k.required
        conf = old.confidence if (by_pair and old is not None) else (0.5 if by_pair else 1.0)
        out[key] = CausalEdge(source=a, target=b, edge_type="directed", confidence=conf)
        why = (
            "the question presumes the treatment may affect the outcome" if by_pair else "domain knowledge requires it"
        )
        changes.append(f"{'replaced ' + _arrow(old) + ' by' if old else 'added'} {a} -> {b}: {why}")
    protected = k.required | ({(k.treatment, k.outcome)} if add_pair_edge and k.treatment and k.outcome else set())
    kept, cycle_notes = break_cycles(nodes, list(out.values()), frozenset(protected))
    return nodes, kept, changes + cycle_notes


def interpret(nodes: list[str], edges: list[CausalEdge], t: str | None, y: str | None, threshold: float) -> str:
    """Plain words: what causes the treatment, what lies on its path to the outcome, what is uncertain."""
    parts: list[str] = []
    if t and y:
        g = directed_graph(nodes, edges)
        causes_t = sorted(g.predecessors(t)) if t in g else []
        causes_y = sorted(set(g.predecessors(y)) - {t}) if y in g else []
        on_path = sorted(mediators(nodes, edges, t, y))
        both = sorted(set(causes_t) & set(causes_y))
        parts.append(f"Direct causes of {t}: {', '.join(causes_t) or 'none found'}.")
        parts.append(f"Other direct causes of {y}: {', '.join(causes_y) or 'none found'}.")
        if both:
            parts.append(f"Common causes of both (confounders): {', '.join(both)}.")
        direct = g.has_edge(t, y) if t in g and y in g else False
        parts.append(
            f"{'A direct edge ' + t + ' -> ' + y + ' is in the graph' if direct else 'No direct edge ' + t + ' -> ' + y}."
        )
        parts.append(f"On the path from {t} to {y} (mediators): {', '.join(on_path) or 'none'}.")
    unsure = [_arrow(e) for e in edges if e.edge_type != "directed"]
    weak = [
        f"{_arrow(e)} ({e.confidence:.2f})" for e in edges if e.edge_type == "directed" and e.confidence < threshold
    ]
    if unsure:
        parts.append(f"Unoriented or possibly confounded edges: {', '.join(unsure)}.")
    if weak:
        parts.append(f"Edges found in fewer than {threshold:.0%} of resamples: {', '.join(weak)}.")
    if not unsure and not weak:
        parts.append("Every edge is oriented and stable.")
    return " ".join(parts)


class DAGExpertParams(AgentParams):
    """Options: whether to add treatment -> outcome, and the 'uncertain edge' threshold."""

    add_treatment_outcome_edge: bool = Field(True, description="add treatment -> outcome when the graph lacks it")
    uncertain_below: float = Field(0.5, ge=0, le=1, description="edge confidence below which an edge is uncertain")
    llm: Literal["off", "suggest", "apply"] = Field(
        "suggest", description="with a model: report (suggest) or apply its orientations of undirected edges"
    )


class DAGExpertAgent(Agent[DAGExpertParams]):
    """Refines the proposed DAG with temporal order, the question and domain edge lists."""

    STATE_MODEL = AnalysisState
    NAME = "dag_expert"
    DESCRIPTION = "Orient, prune and complete the proposed DAG with background knowledge; guarantee acyclicity"
    REQUIRED_STATE_FIELDS = ("data_profile", "proposed_dag")
    OPTIONAL_STATE_FIELDS = ("domain_knowledge",)
    WRITES_STATE_FIELDS = ("proposed_dag",)
    JOB_STATUS = JobStatus.DISCOVERING_CAUSAL
    PROGRESS_WEIGHT = 1.0

    Params = DAGExpertParams

    def run(self, view: AnalysisView, params: DAGExpertParams, ctx: AgentContext) -> AgentResult:
        """Refine the proposed DAG and explain every change."""
        dag: CausalDAG = required(view.proposed_dag, "proposed_dag")
        found = view.maybe_pair()
        t, y = (found.treatment, found.outcome) if found else (None, None)
        if t and y and t == y:
            raise AgentError(f"treatment and outcome are the same column '{t}'")
        k = Knowledge.from_domain(
            view.domain_knowledge, t, y, [*dag.nodes, *required(view.data_profile, "data_profile").feature_names]
        )
        method = dag.discovery_method or "unknown"
        keep_bidirected = method.upper().startswith("FCI")
        nodes, edges, changes = refine_edges(
            list(dag.nodes),
            list(dag.edges),
            k,
            keep_bidirected=keep_bidirected,
            add_pair_edge=params.add_treatment_outcome_edge,
        )
        llm_changed: list[str] = []
        llm_notes: list[str] = []
        if ctx.llm is not None and params.llm != "off":
            described = view.domain_knowledge.column_descriptions if view.domain_knowledge else {}
            edges, llm_changed, llm_notes = dag_expert_mode(
                ctx.llm, params.llm, nodes, edges, k.forbid_reason, described
            )
            changes += llm_changed
        text = interpret(nodes, edges, t, y, params.uncertain_below)
        new = CausalDAG(
            nodes=nodes,
            edges=edges,
            discovery_method=method if method.endswith("+expert") else f"{method}+expert",
            treatment_variable=t,
            outcome_variable=y,
            interpretation=text,
        )
        rules = [
            "nothing measured after the treatment causes it",
            "the outcome causes nothing (except variables the temporal order puts after it)",
        ]
        if k.tiers:
            rules.append(f"temporal order over {len(k.tiers)} columns")
        if k.forbidden or k.required:
            rules.append(f"{len(k.forbidden)} forbidden and {len(k.required)} required edges")
        lines = [f"Treatment {t!r}, outcome {y!r}. Rules applied: {'; '.join(rules)}."]
        if keep_bidirected:
            lines.append(
                "FCI bidirected edges mean a possible hidden common cause, not an unknown direction: kept as they are."
            )
        lines += [f"Change: {c}." for c in changes] or [
            "No change: the proposed graph already agrees with the knowledge."
        ]
        lines.append(f"Interpretation: {text}")
        lines += llm_notes
        summary = f"DAG refined: {len(changes)} change(s), {len(edges)} edges, acyclic"
        outputs = {"n_changes": len(changes), "changes": changes, "n_edges": len(edges), "method": new.discovery_method}
        result = AgentResult(
            updates={"proposed_dag": new}, summary=summary, reasoning="\n".join(lines), outputs=outputs
        )
        return annotated(ctx.llm, result, llm_changed)
