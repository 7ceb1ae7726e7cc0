"""DAG expert: orientation by knowledge, forbidden edges, required edges, acyclicity."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd

from tests.helpers import make_state
from whyflow.causal.discovery.graphs import directed_graph
from whyflow.causal.state import CausalDAG, CausalEdge
from whyflow.flows.running.dispatch import run_single_agent


def _state(tmp_path: Path, nodes: list[str], edges: list[CausalEdge], domain=None, method="PC", pair=("t", "y")):
    frame = pd.DataFrame({n: np.random.default_rng(0).normal(size=50) for n in nodes})
    state = make_state(frame, tmp_path, *pair)
    state.proposed_dag = CausalDAG(nodes=nodes, edges=edges, discovery_method=method)
    state.domain_knowledge = domain
    return state


def _e(s: str, t: str, kind: str = "directed", conf: float = 0.9) -> CausalEdge:
    return CausalEdge(source=s, target=t, edge_type=kind, confidence=conf)


def _arrows(dag: CausalDAG) -> set[tuple[str, str, str]]:
    return {(e.source, e.target, e.edge_type) for e in dag.edges}


def test_forbidden_edges_removed_or_reversed_and_temporal_orientation(tmp_path: Path) -> None:
    nodes = ["age", "t", "m", "y", "z"]
    edges = [
        _e("age", "z"),  # forbidden both ways below: removed
        _e("m", "age"),  # against the temporal order: reversed
        _e("t", "m", "undirected"),  # oriented t -> m by the order
        _e("m", "y", "undirected"),  # the outcome causes nothing: m -> y
        _e("age", "t", "undirected"),  # age precedes the treatment
    ]
    domain = {"temporal_order": [["age"], ["t"], ["m"], ["y"]], "forbidden_edges": [["age", "z"], ["z", "age"]]}
    state = _state(tmp_path, nodes, edges, domain)
    result = run_single_agent("dag_expert", state, tmp_path)
    arrows = _arrows(state.proposed_dag)
    assert not any({s, t} == {"age", "z"} for s, t, _ in arrows)
    assert {
        ("age", "m", "directed"),
        ("t", "m", "directed"),
        ("m", "y", "directed"),
        ("age", "t", "directed"),
    } <= arrows
    assert ("t", "y", "directed") in arrows  # the question presumes t -> y
    assert state.proposed_dag.discovery_method == "PC+expert"
    assert "removed age -> z" in result.reasoning and "reversed m -> age" in result.reasoning
    assert "m" in state.proposed_dag.interpretation and "age" in state.proposed_dag.interpretation


def test_outcome_causes_nothing_and_required_edges(tmp_path: Path) -> None:
    nodes = ["t", "y", "w", "q"]
    edges = [_e("y", "w"), _e("y", "t", "undirected", 0.6)]
    domain = {"required_edges": [["q", "y"]]}
    state = _state(tmp_path, nodes, edges, domain)
    run_single_agent("dag_expert", state, tmp_path)
    arrows = _arrows(state.proposed_dag)
    assert ("w", "y", "directed") in arrows and ("t", "y", "directed") in arrows
    assert ("q", "y", "directed") in arrows
    assert not any(s == "y" for s, _, _ in arrows)


def test_cycles_broken_at_lowest_confidence(tmp_path: Path) -> None:
    nodes = ["t", "y", "a", "b", "c"]
    edges = [_e("a", "b", conf=0.9), _e("b", "c", conf=0.3), _e("c", "a", conf=0.8), _e("a", "t")]
    state = _state(tmp_path, nodes, edges)
    result = run_single_agent("dag_expert", state, tmp_path)
    dag = state.proposed_dag
    assert nx.is_directed_acyclic_graph(directed_graph(dag.nodes, dag.edges))
    assert ("b", "c", "directed") not in _arrows(dag) and ("a", "b", "directed") in _arrows(dag)
    assert "removed b -> c" in result.reasoning


def test_always_acyclic_on_random_graphs(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    nodes = ["t", "y", *[f"v{i}" for i in range(6)]]
    for k in range(5):
        edges = []
        for i, a in enumerate(nodes):
            for b in nodes[i + 1 :]:
                if rng.random() < 0.4:
                    s, d = (a, b) if rng.random() < 0.5 else (b, a)
                    kind = rng.choice(["directed", "directed", "undirected"])
                    edges.append(_e(s, d, str(kind), float(rng.uniform(0.1, 1))))
        state = _state(tmp_path / str(k), nodes, edges)
        run_single_agent("dag_expert", state, tmp_path / str(k))
        dag = state.proposed_dag
        assert nx.is_directed_acyclic_graph(directed_graph(dag.nodes, dag.edges))


def test_fci_bidirected_edges_kept(tmp_path: Path) -> None:
    nodes = ["t", "y", "x"]
    edges = [_e("x", "t", "bidirected"), _e("t", "y")]
    state = _state(tmp_path, nodes, edges, method="FCI")
    result = run_single_agent("dag_expert", state, tmp_path)
    assert ("x", "t", "bidirected") in _arrows(state.proposed_dag)
    assert "hidden common cause" in result.reasoning
