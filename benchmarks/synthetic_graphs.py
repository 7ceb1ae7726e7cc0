"""Linear structural equation models on known graphs, for discovery tests and benchmarks.

Each generator returns ``(frame, truth)`` with ``truth["edges"]`` the true directed edges, so a
test can score a learned graph's skeleton and orientations exactly. Everything is seeded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

__all__ = ["SEVEN_NODE_GRAPH", "linear_sem", "random_dag", "wide_confounded", "wide_linear"]

Noise = Literal["gaussian", "uniform", "laplace"]

SEVEN_NODE_GRAPH: list[tuple[str, str]] = [
    ("a", "c"),
    ("b", "c"),
    ("c", "d"),
    ("a", "e"),
    ("d", "f"),
    ("e", "f"),
    ("f", "g"),
    ("b", "g"),
]
"""A seven-variable DAG with two v-structures (a -> c <- b, d -> f <- e) and a long path."""


def _noise(rng: np.random.Generator, kind: Noise, n: int) -> np.ndarray:
    if kind == "gaussian":
        return rng.normal(size=n)
    if kind == "uniform":
        return rng.uniform(-np.sqrt(3), np.sqrt(3), size=n)
    return rng.laplace(scale=1 / np.sqrt(2), size=n)


def linear_sem(
    edges: Sequence[tuple[str, str]],
    n: int = 5000,
    seed: int = 0,
    *,
    noise: Noise = "gaussian",
    weight_range: tuple[float, float] = (0.5, 1.0),
    nodes: Sequence[str] | None = None,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Sample a linear SEM on ``edges`` with random signed weights of magnitude in ``weight_range``.

    Each variable is standardised after generation (scale does not change the graph), which
    keeps later variables from dominating by variance alone.
    """
    import networkx as nx

    rng = np.random.default_rng(seed)
    g = nx.DiGraph()
    g.add_nodes_from(nodes or [])
    g.add_edges_from(edges)
    order = list(nx.topological_sort(g))
    weights = {e: float(rng.uniform(*weight_range) * rng.choice([-1.0, 1.0])) for e in g.edges}
    values: dict[str, np.ndarray] = {}
    for v in order:
        x = _noise(rng, noise, n)
        for u in g.predecessors(v):
            x = x + weights[(u, v)] * values[u]
        values[v] = (x - x.mean()) / x.std()
    columns = list(nodes) if nodes else sorted(order)
    frame = pd.DataFrame({c: values[c] for c in columns})
    return frame, {"edges": list(g.edges), "weights": weights, "noise": noise}


def random_dag(p: int, expected_degree: float = 2.0, seed: int = 0, prefix: str = "v") -> list[tuple[str, str]]:
    """A random DAG over ``p`` named nodes (Erdős–Rényi on a random order)."""
    rng = np.random.default_rng(seed)
    names = [f"{prefix}{i:02d}" for i in range(p)]
    order = rng.permutation(p)
    prob = min(1.0, expected_degree / max(p - 1, 1))
    edges = []
    for i in range(p):
        for j in range(i + 1, p):
            if rng.random() < prob:
                edges.append((names[order[i]], names[order[j]]))
    return edges


def wide_confounded(n: int = 10000, p: int = 20, seed: int = 0) -> tuple[pd.DataFrame, dict[str, Any]]:
    """``p`` columns: binary treatment, outcome, 4 confounders, a mediator, a collider, an
    instrument, an outcome-only cause, and noise columns up to ``p`` (for scale benchmarks).
    """
    rng = np.random.default_rng(seed)
    c = rng.normal(size=(n, 4))
    z = rng.normal(size=n)
    w = rng.normal(size=n)
    logit = c @ np.array([0.6, -0.5, 0.4, 0.3]) + 0.8 * z
    t = rng.binomial(1, 1 / (1 + np.exp(-logit)))
    m = 0.7 * t + rng.normal(scale=0.7, size=n)
    y = 1.0 * t + 1.0 * m + c @ np.array([1.0, 0.8, -0.7, 0.5]) + 0.6 * w + rng.normal(size=n)
    coll = 0.7 * t + 0.5 * y + rng.normal(size=n)
    data = {f"c{i}": c[:, i] for i in range(4)}
    data.update({"instrument": z, "outcome_cause": w, "treated": t, "mediator": m, "outcome": y, "collider": coll})
    for k in range(max(0, p - len(data))):
        data[f"noise{k:02d}"] = rng.normal(size=n)
    truth = {
        "treatment": "treated",
        "outcome": "outcome",
        "effect": 1.7,
        "confounders": [f"c{i}" for i in range(4)],
        "mediators": ["mediator"],
        "colliders": ["collider"],
        "instruments": ["instrument"],
    }
    return pd.DataFrame(data), truth


def wide_linear(n: int = 10000, p: int = 20, seed: int = 0, effect: float = 2.0) -> tuple[pd.DataFrame, dict[str, Any]]:
    """``p`` columns: a binary treatment, an outcome and ``p - 2`` covariates that are caused by
    one another (a random DAG, expected degree 3), so they are correlated as in real studies.

    About a quarter of the covariates (at least 2, at most 12) confound the pair, a few more
    cause only the outcome; the true effect is ``effect``. For width and row benchmarks, where
    independent noise columns would make discovery look cheaper than it is.
    """
    k = max(0, p - 2)
    edges = random_dag(k, expected_degree=3.0, seed=seed, prefix="x")
    frame, _ = linear_sem(edges, n=n, seed=seed, nodes=[f"x{i:02d}" for i in range(k)])
    rng = np.random.default_rng(seed + 1)
    names = list(frame.columns)
    order = rng.permutation(k)
    n_conf = min(12, max(2, k // 4)) if k >= 2 else k
    confounders = [names[i] for i in order[:n_conf]]
    outcome_only = [names[i] for i in order[n_conf : n_conf + min(4, max(0, k - n_conf))]]
    x = frame.to_numpy()
    a = rng.uniform(0.2, 0.5, size=n_conf) * rng.choice([-1.0, 1.0], size=n_conf)
    logit = x[:, order[:n_conf]] @ a / np.sqrt(max(n_conf, 1)) * 2.0
    t = rng.binomial(1, 1 / (1 + np.exp(-logit)))
    b = rng.uniform(0.3, 1.0, size=n_conf + len(outcome_only))
    cols = list(order[:n_conf]) + list(order[n_conf : n_conf + len(outcome_only)])
    y = effect * t + x[:, cols] @ b + rng.normal(size=n)
    frame.insert(0, "treated", t)
    frame["outcome"] = y
    truth = {
        "treatment": "treated",
        "outcome": "outcome",
        "effect": effect,
        "confounders": sorted(confounders),
        "outcome_only": sorted(outcome_only),
        "covariate_edges": edges,
    }
    return frame, truth
