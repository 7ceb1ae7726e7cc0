"""Causal discovery against graphs whose truth is known (seeded linear SEMs)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmarks.synthetic import linear_confounding
from benchmarks.synthetic_graphs import SEVEN_NODE_GRAPH, linear_sem
from tests.helpers import make_state
from whyflow.causal.discovery.graphs import oriented, precision_recall, skeleton
from whyflow.causal.knowledge import DomainKnowledge
from whyflow.flows.running.dispatch import run_single_agent


def _run(frame, tmp_path: Path, params: dict, treatment=None, outcome=None, domain=None):
    state = make_state(frame, tmp_path, treatment, outcome)
    state.domain_knowledge = domain
    result = run_single_agent("causal_discovery", state, tmp_path, params)
    return state.proposed_dag, result


def test_pc_recovers_skeleton_with_high_bootstrap_confidence(tmp_path: Path) -> None:
    frame, truth = linear_sem(SEVEN_NODE_GRAPH, n=5000, seed=0)
    dag, result = _run(frame, tmp_path, {"method": "pc", "bootstrap": 8})
    precision, recall = precision_recall(skeleton(dag.edges), skeleton(truth["edges"]))
    assert precision >= 0.85 and recall >= 0.85, (precision, recall)
    assert dag.discovery_method == "PC"
    assert all(0.0 <= e.confidence <= 1.0 for e in dag.edges)
    true_skel = skeleton(truth["edges"])
    true_conf = [e.confidence for e in dag.edges if frozenset((e.source, e.target)) in true_skel]
    assert np.mean(true_conf) >= 0.7
    # The two v-structures are oriented as in the truth.
    assert {("a", "c"), ("b", "c")} <= oriented(dag.edges)
    assert result.outputs["bootstrap_done"] == 8


def test_lingam_orients_non_gaussian_graph(tmp_path: Path) -> None:
    frame, truth = linear_sem(SEVEN_NODE_GRAPH, n=3000, seed=1, noise="uniform")
    dag, _ = _run(frame, tmp_path, {"method": "lingam", "bootstrap": 0})
    precision, recall = precision_recall(oriented(dag.edges), set(truth["edges"]))
    assert precision >= 0.8 and recall >= 0.8, (precision, recall)
    assert dag.discovery_method == "LiNGAM"


@pytest.mark.parametrize("method", ["fci", "ges"])
def test_fci_and_ges_find_the_skeleton(tmp_path: Path, method: str) -> None:
    frame, truth = linear_sem(SEVEN_NODE_GRAPH, n=3000, seed=2)
    dag, _ = _run(frame, tmp_path, {"method": method, "bootstrap": 2})
    precision, recall = precision_recall(skeleton(dag.edges), skeleton(truth["edges"]))
    assert precision >= 0.8 and recall >= 0.8
    assert {e.edge_type for e in dag.edges} <= {"directed", "undirected", "bidirected"}


@pytest.mark.parametrize("method", ["pc", "ges"])
def test_background_knowledge_respected(tmp_path: Path, method: str) -> None:
    frame, _ = linear_confounding(2000, seed=3, with_mediator=True, with_collider=True)
    domain = {"temporal_order": [["x1", "x2", "x3"], ["treated"], ["mediator"], ["outcome"], ["collider"]]}
    dag, _ = _run(frame, tmp_path, {"method": method, "bootstrap": 2}, "treated", "outcome", domain)
    directed = oriented(dag.edges)
    assert not any(t == "treated" and s in ("mediator", "outcome", "collider") for s, t in directed)
    assert all(t == "collider" for s, t in directed if s == "outcome")
    if method == "pc":  # PC takes the tiers as background knowledge and orients the chain
        assert ("treated", "mediator") in directed and ("mediator", "outcome") in directed
    assert dag.treatment_variable == "treated" and dag.outcome_variable == "outcome"


def test_sampling_encoding_and_skipped_columns(tmp_path: Path) -> None:
    frame, _ = linear_confounding(3000, seed=4)
    rng = np.random.default_rng(0)
    frame["region"] = rng.choice(["n", "s", "e", "w"], size=len(frame))
    frame["sex"] = rng.choice(["f", "m"], size=len(frame))
    frame["row_id"] = np.arange(len(frame))
    frame["t_copy"] = 2 * frame["treated"] + 1  # exact function: would make the correlation matrix singular
    dag, result = _run(frame, tmp_path, {"bootstrap": 2, "max_rows": 1000}, "treated", "outcome")
    assert result.outputs["n_rows_used"] == 1000 and result.outputs["n_rows_complete"] == 3000
    assert "sampled" in result.summary
    assert "sex" in dag.nodes
    assert not {"region", "row_id", "t_copy"} & set(dag.nodes)
    for word in ("region skipped", "row_id skipped", "t_copy skipped", "sampled 1,000 of 3,000"):
        assert word in result.reasoning


@pytest.mark.parametrize("seed", [0, 1])
def test_batched_pc_returns_causal_learns_graph(seed: int) -> None:
    """The vectorised search makes causal-learn's decisions: the same endpoint matrix, knowledge included."""
    from causallearn.search.ConstraintBased.PC import pc

    from benchmarks.synthetic_graphs import random_dag, wide_linear
    from whyflow.causal.discovery.causal_discovery import learn_pc
    from whyflow.causal.discovery.graphs import Knowledge
    from whyflow.causal.discovery.pc_search import orient

    frame, _ = linear_sem(random_dag(12, 3.0, seed), n=1500, seed=seed)
    names, x = list(frame.columns), frame.to_numpy()
    expected = pc(x, 0.05, "fisherz", show_progress=False, node_names=names).G.graph
    _, skel = learn_pc(x, names, 0.05, Knowledge())
    assert (orient(skel, names) == expected).all()
    frame, _ = wide_linear(2000, 16, seed)
    names, x = list(frame.columns), frame.to_numpy(dtype=float)
    # The outcome after a later tier is no sink, so every test is causal-learn's (its one rule of ours).
    tiers = DomainKnowledge(temporal_order=[["x01", "x02"], ["treated"], ["outcome"], ["x03"]])
    knowledge = Knowledge.from_domain(tiers, "treated", "outcome", names)
    assert not knowledge.is_sink("outcome")
    bk = knowledge.causallearn(names)
    expected = pc(x, 0.05, "fisherz", background_knowledge=bk, show_progress=False, node_names=names).G.graph
    _, skel = learn_pc(x, names, 0.05, knowledge)
    assert (orient(skel, names, bk) == expected).all()


def test_the_outcome_never_separates_two_other_variables() -> None:
    """A confounder's effect on the treatment can cancel, given the outcome, the explaining-away the
    outcome adds (weight0 -> treated, both -> gain): conditioning on the outcome removed that true
    edge and made a mediator of the confounder age. The outcome causes nothing, so it is never in a
    separating set of two other variables (tiered PC); the edge stays and age is not a mediator."""
    from benchmarks.truth_kinds import make
    from whyflow.causal.discovery.causal_discovery import learn_pc
    from whyflow.causal.discovery.graphs import Knowledge

    frame = make("change_score", 16).frame[["treated", "gain", "age", "weight0"]]
    names, x = list(frame.columns), frame.to_numpy(dtype=float)
    edges, skel = learn_pc(x, names, 0.05, Knowledge(treatment="treated", outcome="gain"))
    assert skel.adjacent[0, 3], "treated - weight0 (a true edge) was removed"
    assert not any(s == "treated" and t == "age" and kind == "directed" for s, t, kind, _ in edges)
    assert all(names.index("gain") not in sep for seps in skel.sepsets.values() for sep in seps)
    _, naive = learn_pc(x, names, 0.05, Knowledge())  # without the knowledge: the edge is lost (the old failure)
    assert not naive.adjacent[0, 3]


def test_wide_data_is_screened_capped_and_says_what_it_cut(tmp_path: Path) -> None:
    from benchmarks.synthetic_graphs import wide_linear

    frame, truth = wide_linear(1000, 120, seed=3)
    params = {"bootstrap": 2, "max_variables": 25, "max_depth": 2}
    dag, result = _run(frame, tmp_path, params, "treated", "outcome")
    out = result.outputs
    assert len(dag.nodes) <= 25 and {"treated", "outcome"} <= set(dag.nodes)
    assert len(out["screened_out"]) == 120 - len(dag.nodes) and not set(out["screened_out"]) & set(dag.nodes)
    # Direct causes of the treatment are in its Markov blanket: the screen keeps the strong ones.
    assert len(set(truth["confounders"]) & set(dag.nodes)) >= len(truth["confounders"]) // 2
    assert out["depth_reached"] <= 2 and any("max_depth=2" in cut for cut in out["limits"])
    assert "Limits:" in dag.interpretation and "screened" in result.summary
    assert "confounder discovery decides on them from the data" in result.reasoning


def test_time_budget_degrades_to_a_stated_shallow_graph(tmp_path: Path) -> None:
    from benchmarks.synthetic_graphs import wide_linear

    frame, _ = wide_linear(3000, 30, seed=4)
    dag, result = _run(frame, tmp_path, {"bootstrap": 50, "max_seconds": 0.01}, "treated", "outcome")
    out = result.outputs
    assert out["depth_reached"] == 0 and out["bootstrap_done"] == 0
    assert any("time budget" in cut for cut in out["limits"]) and "time budget" in dag.interpretation
    assert dag.edges and all(e.confidence == 0.5 for e in dag.edges)  # unknown, never "certain"
