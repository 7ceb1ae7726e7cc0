"""Confounder discovery: true confounders in, mediator/collider/derived variables out."""

from __future__ import annotations

from pathlib import Path

from agents.base.state import CausalDAG, CausalEdge
from agents.stats.synthetic import TRUE_GRAPH_LINEAR, linear_confounding
from agents.stats.synthetic_graphs import wide_confounded
from flows.dispatch import run_single_agent
from tests.helpers import make_state


def _data(n: int = 2000, seed: int = 0):
    frame, truth = linear_confounding(n, seed=seed, with_mediator=True, with_collider=True)
    frame["t_scaled"] = 3 * frame["treated"] + 1  # a deterministic function of the treatment
    return frame, truth


def _dag(edges, method="truth") -> CausalDAG:
    nodes = sorted({n for e in edges for n in e})
    return CausalDAG(nodes=nodes, edges=[CausalEdge(source=a, target=b) for a, b in edges], discovery_method=method)


def test_true_graph_gives_confounders_and_excludes_bad_controls(tmp_path: Path) -> None:
    frame, truth = _data()
    state = make_state(frame, tmp_path, "treated", "outcome")
    state.proposed_dag = _dag(TRUE_GRAPH_LINEAR)
    run_single_agent("confounder_discovery", state, tmp_path)
    out = state.confounder_discovery
    assert set(truth["confounders"]) <= set(out["adjustment_set"])
    assert not {"mediator", "collider", "t_scaled"} & set(out["adjustment_set"])
    assert out["mediators"] == ["mediator"] and out["colliders"] == ["collider"]
    assert out["derived_from_treatment"] == ["t_scaled"]
    assert {"mediator", "collider", "t_scaled"} <= set(out["excluded"])
    assert out["identification"]["identified"] is True
    assert "x1" in out["identification"]["estimand"]
    assert set(out["rationale"]) == set(out["adjustment_set"])
    assert {"x1", "x2"} <= set(out["data_associated"])


def test_discovered_graph_with_temporal_knowledge(tmp_path: Path) -> None:
    frame, truth = _data(seed=1)
    state = make_state(frame, tmp_path, "treated", "outcome")
    state.domain_knowledge = {
        "temporal_order": [["x1", "x2", "x3"], ["treated"], ["mediator", "t_scaled"], ["outcome"], ["collider"]]
    }
    run_single_agent("causal_discovery", state, tmp_path, {"bootstrap": 3})
    run_single_agent("dag_expert", state, tmp_path)
    run_single_agent("confounder_discovery", state, tmp_path)
    out = state.confounder_discovery
    assert set(truth["confounders"]) <= set(out["adjustment_set"])
    assert not {"mediator", "collider", "t_scaled"} & set(out["adjustment_set"])


def test_without_graph_falls_back_to_data_and_knowledge(tmp_path: Path) -> None:
    frame, truth = _data(seed=2)
    state = make_state(frame, tmp_path, "treated", "outcome")
    state.domain_knowledge = {"post_treatment": ["mediator", "collider"]}
    result = run_single_agent("confounder_discovery", state, tmp_path)
    out = state.confounder_discovery
    assert set(out["adjustment_set"]) == set(truth["confounders"])
    assert "post-treatment" in out["excluded"]["mediator"] and "t_scaled" in out["derived_from_treatment"]
    assert out["identification"]["identified"] is False
    assert "data-driven" in result.reasoning


def test_instrument_listed_not_adjusted(tmp_path: Path) -> None:
    frame, truth = wide_confounded(n=3000, p=12, seed=0)
    t, y = truth["treatment"], truth["outcome"]
    edges = [(c, t) for c in truth["confounders"]] + [(c, y) for c in truth["confounders"]]
    edges += [
        ("instrument", t),
        ("outcome_cause", y),
        (t, "mediator"),
        ("mediator", y),
        (t, y),
        (t, "collider"),
        (y, "collider"),
    ]
    state = make_state(frame, tmp_path, t, y)
    state.proposed_dag = _dag(edges)
    run_single_agent("confounder_discovery", state, tmp_path)
    out = state.confounder_discovery
    assert set(truth["confounders"]) <= set(out["adjustment_set"])
    assert "instrument" in out["instruments"] and "instrument" not in out["adjustment_set"]
    assert not {"mediator", "collider"} & set(out["adjustment_set"])
    noise = [c for c in frame.columns if c.startswith("noise")]
    assert not set(noise) & set(out["instruments"])


def test_hidden_confounding_is_not_identified(tmp_path: Path) -> None:
    frame, _ = _data(seed=3)
    state = make_state(frame, tmp_path, "treated", "outcome")
    dag = _dag([("x1", "treated"), ("x1", "outcome"), ("treated", "outcome")])
    dag.edges.append(CausalEdge(source="treated", target="outcome", edge_type="bidirected"))
    state.proposed_dag = dag
    run_single_agent("confounder_discovery", state, tmp_path)
    assert state.confounder_discovery["identification"]["identified"] is False


def test_undirected_neighbour_of_treatment_kept_as_possible_confounder(tmp_path: Path) -> None:
    frame, _ = _data(seed=4)
    state = make_state(frame, tmp_path, "treated", "outcome")
    dag = _dag([("x1", "outcome"), ("x2", "treated"), ("x2", "outcome"), ("treated", "outcome")])
    dag.edges.append(CausalEdge(source="treated", target="x1", edge_type="undirected", confidence=0.5))
    state.proposed_dag = dag
    result = run_single_agent("confounder_discovery", state, tmp_path)
    assert "x1" in state.confounder_discovery["adjustment_set"]
    assert "assumed to precede the treatment" in result.reasoning
