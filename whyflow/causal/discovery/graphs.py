"""Shared causal-graph helpers: background knowledge, edge keys, acyclicity and path logic.

Used by causal discovery (to build causal-learn's ``BackgroundKnowledge``), the DAG expert (to
orient, remove and add edges) and confounder discovery (descendants, mediators, colliders, the
graph handed to DoWhy, DoWhy's backdoor identification and the backdoor validity check). Graph algorithms come from networkx; this module only says which
question to ask it.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from whyflow.causal.knowledge import DomainKnowledge
from whyflow.causal.state import CausalDAG, CausalEdge

if TYPE_CHECKING:
    import networkx as nx
    import pandas as pd

__all__ = [
    "Knowledge",
    "edge_key",
    "directed_graph",
    "break_cycles",
    "mediators",
    "colliders",
    "skeleton",
    "oriented",
    "precision_recall",
    "adjustment_valid",
    "dowhy_graph",
    "identify_backdoor",
]


@dataclass(frozen=True)
class Knowledge:
    """What domain knowledge and the question say about which causal directions are impossible.

    Rules (each with a plain-words reason): explicit forbidden edges; nothing in a later
    ``temporal_order`` tier causes something in an earlier tier; nothing measured after the
    treatment causes the treatment; the outcome causes nothing, except variables that the
    temporal order places strictly after the outcome.
    """

    treatment: str | None = None
    outcome: str | None = None
    tiers: dict[str, int] = field(default_factory=dict)
    post_treatment: frozenset[str] = frozenset()
    forbidden: frozenset[tuple[str, str]] = frozenset()
    required: frozenset[tuple[str, str]] = frozenset()

    def is_sink(self, name: str) -> bool:
        """Whether knowledge says ``name`` causes nothing: the outcome, unless a tier comes after it."""
        if name != self.outcome:
            return False
        tier = self.tiers.get(name)
        return tier is None or not any(t > tier for t in self.tiers.values())

    @classmethod
    def from_domain(
        cls, domain: DomainKnowledge | None, treatment: str | None, outcome: str | None, nodes: Iterable[str] = ()
    ) -> Knowledge:
        """Read the state's :class:`DomainKnowledge`, limited to ``nodes`` if given."""
        domain = domain or DomainKnowledge()
        keep = set(nodes)

        def ok(name: object) -> bool:
            return isinstance(name, str) and (not keep or name in keep)

        tiers: dict[str, int] = {}
        for i, tier in enumerate(domain.temporal_order):
            for col in tier or []:
                if ok(col):
                    tiers.setdefault(col, i)
        post = {c for c in domain.post_treatment if ok(c) and c != treatment}
        post |= {c for c, r in domain.roles.items() if r == "mediator" and ok(c)}
        if treatment in tiers:
            post |= {c for c, t in tiers.items() if t > tiers[treatment] and c != outcome}

        def pairs(edges: list[list[str]]) -> frozenset[tuple[str, str]]:
            out = set()
            for pair in edges:
                if isinstance(pair, (list, tuple)) and len(pair) == 2 and ok(pair[0]) and ok(pair[1]):
                    out.add((str(pair[0]), str(pair[1])))
            return frozenset(out)

        return cls(
            treatment, outcome, tiers, frozenset(post), pairs(domain.forbidden_edges), pairs(domain.required_edges)
        )

    def forbid_reason(self, src: str, dst: str) -> str | None:
        """Why ``src -> dst`` is impossible, or ``None`` when nothing known rules it out."""
        if (src, dst) in self.required:
            return None
        if (src, dst) in self.forbidden:
            return f"domain knowledge forbids {src} -> {dst}"
        if (dst, src) in self.required:
            return f"domain knowledge requires {dst} -> {src}"
        if src in self.tiers and dst in self.tiers and self.tiers[src] > self.tiers[dst]:
            return f"{src} is measured after {dst} (temporal order)"
        if dst == self.treatment and src in self.post_treatment:
            return f"{src} is measured after the treatment {dst}, so it cannot cause it"
        if src == self.outcome and dst != self.outcome:
            t_out, t_dst = self.tiers.get(src), self.tiers.get(dst)
            if t_out is None or t_dst is None or t_dst <= t_out:
                return f"the outcome {src} is taken to cause nothing in the analysis"
        return None

    def is_empty(self) -> bool:
        """True when there is no knowledge at all (no pair, tiers or edge lists)."""
        return not (
            self.treatment or self.outcome or self.tiers or self.post_treatment or self.forbidden or self.required
        )

    def causallearn(self, names: Sequence[str]) -> Any:
        """The same rules as a causal-learn ``BackgroundKnowledge`` over ``names`` (or ``None``)."""
        from causallearn.graph.GraphNode import GraphNode
        from causallearn.utils.PCUtils.BackgroundKnowledge import BackgroundKnowledge

        bk = BackgroundKnowledge()
        nodes = {n: GraphNode(n) for n in names}
        count = 0
        for a in names:
            for b in names:
                if a != b and self.forbid_reason(a, b):
                    bk.add_forbidden_by_node(nodes[a], nodes[b])
                    count += 1
        for a, b in self.required:
            if a in nodes and b in nodes:
                bk.add_required_by_node(nodes[a], nodes[b])
                count += 1
        return bk if count else None

    def lingam_prior(self, names: Sequence[str]) -> Any:
        """A DirectLiNGAM prior-knowledge matrix (``pk[to, from] = 0``: no path from ``from``)."""
        import numpy as np

        pk = -np.ones((len(names), len(names)))
        for i, a in enumerate(names):
            for j, b in enumerate(names):
                if i != j and self.forbid_reason(a, b) and not self.forbid_reason(b, a):
                    pk[j, i] = 0
        return pk if (pk == 0).any() else None


def edge_key(edge: CausalEdge) -> tuple[str, str, str]:
    """An identity for an edge with its orientation: directed keeps order, others are sorted."""
    if edge.edge_type == "directed":
        return ("directed", edge.source, edge.target)
    a, b = sorted((edge.source, edge.target))
    return (edge.edge_type, a, b)


def directed_graph(nodes: Iterable[str], edges: Iterable[CausalEdge]) -> nx.DiGraph:
    """The directed part of a graph as a networkx DiGraph (edge attribute ``confidence``)."""
    import networkx as nx

    g = nx.DiGraph()
    g.add_nodes_from(nodes)
    for e in edges:
        if e.edge_type == "directed":
            g.add_edge(e.source, e.target, confidence=e.confidence)
    return g


def break_cycles(
    nodes: Sequence[str], edges: list[CausalEdge], protected: frozenset[tuple[str, str]] = frozenset()
) -> tuple[list[CausalEdge], list[str]]:
    """Remove the lowest-confidence directed edge of each cycle until the graph is acyclic.

    ``protected`` edges (required by domain knowledge) are removed only if a cycle has nothing
    else. Returns the kept edges and one sentence per removal.
    """
    import networkx as nx

    kept = list(edges)
    notes: list[str] = []
    while True:
        g = directed_graph(nodes, kept)
        try:
            cycle = nx.find_cycle(g)
        except nx.NetworkXNoCycle:
            return kept, notes
        in_cycle = [(u, v) for u, v, *_ in cycle]
        victim = min(in_cycle, key=lambda uv: (uv in protected, g.edges[uv]["confidence"], uv))
        path = " -> ".join([u for u, _ in in_cycle] + [in_cycle[0][0]])
        kept = [e for e in kept if not (e.edge_type == "directed" and (e.source, e.target) == victim)]
        notes.append(
            f"removed {victim[0]} -> {victim[1]} (confidence {g.edges[victim]['confidence']:.2f}, the lowest) "
            f"to break the cycle {path}"
        )


def mediators(nodes: Iterable[str], edges: Iterable[CausalEdge], treatment: str, outcome: str) -> set[str]:
    """Nodes on a directed path treatment -> ... -> outcome."""
    import networkx as nx

    g = directed_graph(nodes, edges)
    if treatment not in g or outcome not in g:
        return set()
    return (set(nx.descendants(g, treatment)) & set(nx.ancestors(g, outcome))) - {treatment, outcome}


def colliders(nodes: Iterable[str], edges: Iterable[CausalEdge], treatment: str, outcome: str) -> set[str]:
    """Common effects of treatment and outcome (descendants of both)."""
    import networkx as nx

    g = directed_graph(nodes, edges)
    if treatment not in g or outcome not in g:
        return set()
    return (set(nx.descendants(g, treatment)) & set(nx.descendants(g, outcome))) - {treatment, outcome}


def skeleton(edges: Iterable[tuple[str, str]] | Iterable[CausalEdge]) -> set[frozenset[str]]:
    """Unordered adjacencies of a list of (source, target) pairs or CausalEdges."""
    out: set[frozenset[str]] = set()
    for e in edges:
        a, b = (e.source, e.target) if isinstance(e, CausalEdge) else e
        out.add(frozenset((a, b)))
    return out


def oriented(edges: Iterable[CausalEdge]) -> set[tuple[str, str]]:
    """The directed edges of a learned graph as (source, target) pairs."""
    return {(e.source, e.target) for e in edges if e.edge_type == "directed"}


def precision_recall(found: set[Any], truth: set[Any]) -> tuple[float, float]:
    """Precision and recall of ``found`` against ``truth`` (1.0 for empty denominators)."""
    tp = len(found & truth)
    precision = tp / len(found) if found else 1.0
    recall = tp / len(truth) if truth else 1.0
    return precision, recall


def adjustment_valid(g: nx.DiGraph, t: str, y: str, s: set[str]) -> bool:
    """Backdoor criterion (networkx d-separation): no descendant of t in s, and s blocks every
    backdoor path in the graph without t's outgoing edges."""
    import networkx as nx

    if s & nx.descendants(g, t):
        return False
    bd = g.copy()
    bd.remove_edges_from(list(g.out_edges(t)))
    return bool(nx.is_d_separator(bd, {t}, {y}, set(s)))


def dowhy_graph(dag: CausalDAG, t: str, y: str, knowledge: Knowledge) -> tuple[nx.DiGraph, list[str], list[str]]:
    """A DAG for DoWhy: directed edges kept, bidirected edges as a hidden common cause U_a_b,
    undirected edges oriented conservatively (see the notes returned).

    Undirected neighbours of the treatment are taken to precede it (possible confounders) unless
    knowledge puts them after it; undirected neighbours of the treatment's descendants are taken
    to be descendants (never adjusted for); any other undirected edge follows a topological order.
    """
    import networkx as nx

    g = nx.DiGraph()
    g.add_nodes_from(dag.nodes)
    notes: list[str] = []
    latent: list[str] = []
    undirected: list[tuple[str, str]] = []
    for e in dag.edges:
        if e.edge_type == "directed":
            g.add_edge(e.source, e.target)
        elif e.edge_type == "bidirected":
            u = f"U_{e.source}_{e.target}"
            g.add_edges_from([(u, e.source), (u, e.target)])
            latent.append(u)
            notes.append(f"{e.source} <-> {e.target}: modelled as a hidden common cause {u}")
        else:
            undirected.append((e.source, e.target))

    def add(a: str, b: str, why: str) -> None:
        if nx.has_path(g, b, a):
            a, b = b, a
            why = "the other way would create a cycle"
        g.add_edge(a, b)
        notes.append(f"{a} -- {b} taken as {a} -> {b}: {why}")

    rest = []
    for a, b in undirected:
        if t in (a, b):
            x = b if a == t else a
            if x in knowledge.post_treatment or knowledge.forbid_reason(x, t):
                add(t, x, "knowledge puts it after the treatment")
            else:
                add(x, t, "assumed to precede the treatment (possible confounder; verify)")
        else:
            rest.append((a, b))
    changed = True
    while changed:
        changed = False
        desc = nx.descendants(g, t) if t in g else set()
        for a, b in list(rest):
            if (a in desc) != (b in desc):
                src, dst = (a, b) if a in desc else (b, a)
                add(src, dst, f"neighbour of {src}, a descendant of the treatment: possibly caused by it")
                rest.remove((a, b))
                changed = True
    order = {n: i for i, n in enumerate(nx.lexicographical_topological_sort(g))}
    for a, b in rest:
        src, dst = (a, b) if order[a] <= order[b] else (b, a)
        add(src, dst, "follows the graph's topological order (does not touch the treatment)")
    return g, latent, notes


def identify_backdoor(
    frame: pd.DataFrame, g: nx.DiGraph, t: str, y: str, latent: list[str]
) -> tuple[list[str] | None, str, list[str]]:
    """DoWhy maximal-adjustment backdoor identification: (set or None, estimand, graph instruments)."""
    import networkx as nx
    from dowhy import CausalModel

    observed = [n for n in g.nodes if n in frame.columns]
    eligible = set(observed) - nx.descendants(g, t) - {t, y}
    if latent and not adjustment_valid(g, t, y, eligible) and len(eligible) > 12:
        return None, "maximal set blocked by hidden common causes; subset search skipped (too many variables)", []
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*assumed unobserved.*")
        warnings.filterwarnings("ignore", category=FutureWarning)
        model = CausalModel(data=frame[observed].head(500), treatment=t, outcome=y, graph=g)
        estimand = model.identify_effect(method_name="maximal-adjustment", proceed_when_unidentifiable=True)
    backdoor = estimand.estimands.get("backdoor")
    ivs = [str(v) for v in (estimand.instrumental_variables or [])]
    if not backdoor:
        return None, "no backdoor adjustment set blocks every backdoor path", ivs
    return [str(v) for v in estimand.get_backdoor_variables()], str(backdoor["estimand"]), ivs
