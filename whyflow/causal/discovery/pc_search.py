"""PC at scale: a relevance screen, a vectorised PC-stable skeleton with a depth cap and a
deadline, and causal-learn's own orientation rules.

Why: causal-learn's PC runs one Python-level Fisher-z test at a time and, in its stable
variant, tests every conditioning set of a level even after one separates the pair; on 58
correlated covariates one fit takes seconds to minutes and the bootstrap multiplies it. Here
all conditioning sets of a pair at a level are tested in one batched matrix inversion, with
the same test, the same decisions and the same separating sets as causal-learn (its stable
PC records the union of every separating set found at the level; so does this), so the
learned graph is the one causal-learn would return. Orientation (background knowledge,
unshielded colliders with priority 2, Meek rules) is causal-learn's code on our skeleton.

Graceful degradation is explicit: a depth cap and a deadline stop the search only between
complete levels, so the result is always PC-stable run to a stated depth (a superset of the
full search's adjacencies, never an edge removed without a test).
"""

from __future__ import annotations

import time
import types
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np

__all__ = ["Skeleton", "Screen", "pc_skeleton", "orient", "relevance_screen", "fisher_p"]

_CHUNK = 4096
"""Conditioning sets tested per batched inversion (bounds memory; the deadline is checked between)."""


@dataclass
class Skeleton:
    """Adjacencies after PC-stable levels 0..``depth_done``, their separating sets, and why it stopped."""

    adjacent: np.ndarray
    sepsets: dict[tuple[int, int], list[tuple[int, ...]]]
    depth_done: int
    stopped: str = ""
    """"" (no pair had enough neighbours for another level), "depth cap" or "time budget"."""
    n_tests: int = 0


@dataclass
class Screen:
    """Which columns a relevance screen kept (indices into the input), and the reasons."""

    keep: list[int]
    dropped: list[int] = field(default_factory=list)
    capped: list[int] = field(default_factory=list)
    method: str = ""


def fisher_p(corr: np.ndarray, n: int, idx: np.ndarray) -> np.ndarray:
    """Fisher-z p-values of ``idx[:, 0] ⟂ idx[:, 1] | idx[:, 2:]`` (rows of ``idx``), as causal-learn's ``fisherz``."""
    from scipy.special import ndtr

    k = idx.shape[1] - 2
    sub = corr[idx[:, :, None], idx[:, None, :]]
    try:
        inv = np.linalg.inv(sub)
    except np.linalg.LinAlgError as exc:
        raise ValueError("Data correlation matrix is singular. Cannot run fisherz test.") from exc
    r = -inv[:, 0, 1] / np.sqrt(np.abs(inv[:, 0, 0] * inv[:, 1, 1]))
    big = np.abs(r) >= 1
    r = np.where(big, (1.0 - np.finfo(float).eps) * np.sign(r), r)
    z = 0.5 * np.log((1 + r) / (1 - r))
    stat = np.sqrt(n - k - 3) * np.abs(z)
    return np.asarray(2 * (1 - ndtr(stat)))


def pc_skeleton(
    corr: np.ndarray,
    n: int,
    alpha: float,
    banned: np.ndarray | None = None,
    max_depth: int | None = None,
    deadline: float | None = None,
    sinks: np.ndarray | None = None,
) -> Skeleton:
    """PC-stable adjacency search on a correlation matrix (``n`` rows), level by level.

    ``banned[i, j]`` marks pairs that knowledge forbids in both directions (removed, as causal-learn
    does). ``sinks[k]`` marks variables knowledge says cause nothing (the outcome): they never
    enter the conditioning set of a test between two other variables. A sink on a path is always
    a collider, so dropping it from a separating set loses no true separation, while conditioning
    on it can cancel a real dependence (a confounder's direct effect on the treatment offset by
    the explaining-away through the outcome) and remove a true edge — the tiered-PC rule. Stops before level ``max_depth + 1`` or when ``time.perf_counter()`` passes ``deadline``;
    an unfinished level is discarded entirely, so the result is the complete search to ``depth_done``.
    Level 0 ignores the deadline (it is one vectorised step), so ``depth_done >= 0`` whenever ``p > 1``.
    """
    p = len(corr)
    adj = ~np.eye(p, dtype=bool)
    banned = np.zeros((p, p), dtype=bool) if banned is None else banned
    sinks = np.zeros(p, dtype=bool) if sinks is None else np.asarray(sinks, dtype=bool)
    sepsets: dict[tuple[int, int], list[tuple[int, ...]]] = {}
    out = Skeleton(adj, sepsets, depth_done=-1)
    depth = -1
    while p and int(adj.sum(1).max()) - 1 > depth:
        if max_depth is not None and depth + 1 > max_depth:
            out.stopped = "depth cap"
            break
        # Level 0 (marginal tests, one vectorised step) always runs, so there is always a graph.
        level = _level(corr, n, alpha, adj, banned, depth + 1, deadline if depth >= 0 else None, out, sinks)
        if level is None:
            out.stopped = "time budget"
            break
        depth += 1
        removal, level_seps = level
        for key, seps in level_seps.items():
            sepsets.setdefault(key, []).extend(seps)
        for x, y in removal:
            adj[x, y] = adj[y, x] = False
        out.depth_done = depth
    return out


def _level(
    corr: np.ndarray,
    n: int,
    alpha: float,
    adj: np.ndarray,
    banned: np.ndarray,
    depth: int,
    deadline: float | None,
    out: Skeleton,
    sinks: np.ndarray,
) -> tuple[set[tuple[int, int]], dict[tuple[int, int], list[tuple[int, ...]]]] | None:
    """One PC-stable level (causal-learn's loop order and sepset bookkeeping); None past the deadline."""
    removal: set[tuple[int, int]] = set()
    seps: dict[tuple[int, int], list[tuple[int, ...]]] = {}
    neigh = [np.flatnonzero(adj[x]) for x in range(len(adj))]
    if depth == 0:
        pv = _pairwise_p(corr, n)
        out.n_tests += int(adj.sum())
    for x in range(len(adj)):
        if deadline is not None and time.perf_counter() > deadline:
            return None
        for y in neigh[x].tolist():
            if banned[x, y]:
                removal.update({(x, y), (y, x)})
            found: set[int] = set()
            if depth == 0:
                if pv[x, y] > alpha:
                    removal.update({(x, y), (y, x)})
            else:
                others = neigh[x][(neigh[x] != y) & ~sinks[neigh[x]]]
                if len(others) >= depth:
                    found, indep = _test_sets(corr, n, alpha, x, y, others, depth, deadline, out)
                    if indep is None:
                        return None
                    if indep:
                        removal.update({(x, y), (y, x)})
            if (x, y) in removal:
                sep = tuple(sorted(found))
                seps.setdefault((x, y), []).append(sep)
                seps.setdefault((y, x), []).append(sep)
    return removal, seps


def _pairwise_p(corr: np.ndarray, n: int) -> np.ndarray:
    """Level 0 for every pair at once (the same formula as :func:`fisher_p` with an empty set)."""
    from scipy.special import ndtr

    r = np.clip(corr, -(1.0 - np.finfo(float).eps), 1.0 - np.finfo(float).eps)
    with np.errstate(divide="ignore"):
        z = 0.5 * np.log((1 + r) / (1 - r))
    return np.asarray(2 * (1 - ndtr(np.sqrt(n - 3) * np.abs(z))))


def _test_sets(
    corr: np.ndarray,
    n: int,
    alpha: float,
    x: int,
    y: int,
    others: np.ndarray,
    depth: int,
    deadline: float | None,
    out: Skeleton,
) -> tuple[set[int], bool | None]:
    """Test ``x ⟂ y | S`` for every ``S`` of size ``depth`` from ``others``; the union of separating
    sets and whether any separated (None when the deadline passed)."""
    found: set[int] = set()
    indep = False
    combos = combinations(others.tolist(), depth)
    while True:
        chunk = np.array([c for _, c in zip(range(_CHUNK), combos, strict=False)], dtype=int)
        if not len(chunk):
            return found, indep
        if deadline is not None and time.perf_counter() > deadline:
            return found, None
        idx = np.column_stack([np.full(len(chunk), x), np.full(len(chunk), y), chunk.reshape(len(chunk), depth)])
        pv = fisher_p(corr, n, idx)
        out.n_tests += len(chunk)
        hit = pv > alpha
        if hit.any():
            indep = True
            found.update(int(v) for v in np.unique(chunk[hit]))


def orient(skel: Skeleton, names: list[str], background_knowledge: Any = None) -> np.ndarray:
    """causal-learn's endpoint matrix for the skeleton: knowledge, unshielded colliders (priority 2), Meek."""
    from causallearn.graph.GraphClass import CausalGraph
    from causallearn.utils.PCUtils import Meek, UCSepset
    from causallearn.utils.PCUtils.BackgroundKnowledgeOrientUtils import orient_by_background_knowledge

    cg = CausalGraph(len(names), names)
    # The skeleton is undirected, so no directed path changes: set the endpoint matrix directly
    # (removing edges one by one rebuilds causal-learn's path matrix each time, quadratic in edges).
    cg.G.graph = np.where(skel.adjacent, -1, 0).astype(cg.G.graph.dtype)
    for (i, j), seps in skel.sepsets.items():
        cg.sepset[i, j] = list(seps)
    if background_knowledge is not None:
        orient_by_background_knowledge(cg, background_knowledge)
    # uc_sepset never reads causal-learn's directed-path matrix but rebuilds it on every edge it
    # re-adds; skip that while it runs and rebuild once before Meek's rules, which do read it.
    cg.find_unshielded_triples = types.MethodType(_unshielded_triples, cg)  # type: ignore[method-assign]
    cg.G.reconstitute_dpath = _skip_dpath  # type: ignore[method-assign]
    cg.G.get_graph_edges = list  # type: ignore[method-assign]  # only remove_edge's rebuild calls it here
    cg = UCSepset.uc_sepset(cg, 2, background_knowledge=background_knowledge)
    del cg.G.reconstitute_dpath, cg.G.get_graph_edges
    cg.G.reconstitute_dpath(cg.G.get_graph_edges())
    cg = Meek.meek(cg, background_knowledge=background_knowledge)
    return np.asarray(cg.G.graph)


def _unshielded_triples(cg: Any) -> list[tuple[int, int, int]]:
    """causal-learn's ``find_unshielded_triples`` (same triples, same order) in time linear in the
    triples instead of quadratic in the adjacencies; bound to each copy the orientation makes."""
    adj = cg.find_adj()
    by_first: dict[int, list[tuple[int, int]]] = {}
    for b, (j, k) in enumerate(adj):
        by_first.setdefault(int(j), []).append((b, int(k)))
    graph = cg.G.graph
    out = []
    for a, (i, j) in enumerate(adj):
        for b, k in by_first.get(int(j), []):
            if b != a and int(i) != k and graph[i, k] == 0:
                out.append((i, j, adj[b][1]))
    return out


def _skip_dpath(edges: Any) -> None:
    """Stand-in for ``GeneralGraph.reconstitute_dpath`` while unshielded colliders are oriented."""


def relevance_screen(x: np.ndarray, n_first: int, alpha: float, cap: int, protect: set[int] | None = None) -> Screen:
    """Columns relevant to the first ``n_first`` (treatment, outcome): their estimated Markov blankets.

    With more rows than columns, a column is kept when its partial correlation with the treatment
    or the outcome given all other columns (one precision matrix) is significant at ``alpha``
    (Fisher z); for linear-Gaussian data that is the Markov blanket. Otherwise, and when more than
    ``cap`` columns pass, the strongest ones are kept (smallest p-value; marginal correlations
    when rows are too few). ``protect`` columns (e.g. named in domain knowledge) are always kept.
    """
    n, p = x.shape
    first = list(range(min(n_first, p)))
    rest = [j for j in range(p) if j not in first]
    protect = {j for j in (protect or set()) if j in rest}
    corr = np.corrcoef(x, rowvar=False)
    if n > p + 20:
        prec = np.linalg.pinv(corr)
        d = np.sqrt(np.abs(np.diag(prec)))
        partial = -prec / np.outer(d, d)
        dof = n - (p - 2) - 3
        method = f"Markov-blanket screen (partial correlation with {'/'.join('treatment outcome'.split()[: len(first)])} given all other columns, alpha {alpha})"
    else:
        partial, dof = corr, n - 3
        method = f"marginal-correlation screen ({n} rows are too few for partial correlations over {p} columns)"
    r = np.clip(np.abs(partial[first][:, rest]), 0, 1 - 1e-12) if first else np.zeros((1, len(rest)))
    from scipy.special import ndtr

    pv = (2 * (1 - ndtr(np.sqrt(max(dof, 1)) * np.arctanh(r)))).min(axis=0)
    passed = [j for j, q in zip(rest, pv, strict=True) if q < alpha or j in protect]
    rank = {j: q for j, q in zip(rest, pv, strict=True)}
    room = max(0, cap - len(first))
    chosen = sorted(passed, key=lambda j: (j not in protect, rank[j]))[:room]
    capped = [j for j in passed if j not in chosen]
    dropped = [j for j in rest if j not in passed]
    return Screen(keep=first + sorted(chosen), dropped=dropped, capped=capped, method=method)
