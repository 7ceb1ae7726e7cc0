"""Causal discovery: learn a graph over the numeric columns (PC, FCI, GES, LiNGAM from causal-learn).

Why: confounder discovery and the DAG expert need a candidate graph; learning it from the data
(with what the question and domain knowledge already rule out) beats guessing. Edge confidence
is the share of bootstrap resamples in which the edge appears with the same orientation.

Cost: PC runs through :mod:`whyflow.causal.discovery.pc_search` (causal-learn's decisions, batched tests).
On wide data a relevance screen keeps the treatment's and outcome's Markov blankets (capped),
the conditioning depth is capped, and ``max_seconds`` bounds the whole agent: the search stops
between complete levels and the bootstrap stops early, each cut stated in the reasoning, the
outputs (``limits``) and the DAG's interpretation. Screened-out columns are not in the graph,
which confounder discovery reads as "no graph evidence", never as "not a confounder".
"""

from __future__ import annotations

import contextlib
import io
import time
import warnings
from collections import Counter
from typing import Literal

import numpy as np
from pydantic import Field

from whyflow.causal.discovery.discovery_matrix import named_in_knowledge, prepare_matrix, screen_columns
from whyflow.causal.discovery.graphs import Knowledge, break_cycles, edge_key
from whyflow.causal.discovery.pc_search import Skeleton, orient, pc_skeleton
from whyflow.causal.state import AnalysisState, CausalDAG, CausalEdge
from whyflow.causal.view import AnalysisView
from whyflow.core.agent import Agent, AgentContext, AgentParams, AgentResult
from whyflow.core.errors import AgentError
from whyflow.core.status import JobStatus
from whyflow.core.view import required
from whyflow.runtime.data import read_table

__all__ = [
    "CausalDiscoveryAgent",
    "CausalDiscoveryParams",
    "prepare_matrix",
    "learn_edges",
    "learn_pc",
    "screen_columns",
]

RawEdge = tuple[str, str, str, str]
"""(source, target, edge_type, raw causal-learn mark such as "-->", "o->", "---")."""

METHOD_NAMES = {"pc": "PC", "fci": "FCI", "ges": "GES", "lingam": "LiNGAM"}
_MARKS = {-1: "-", 1: ">", 2: "o"}


def _decode(matrix: np.ndarray, names: list[str]) -> list[RawEdge]:
    """causal-learn endpoint matrix (``m[i, j]`` = mark at i on edge i–j) to typed edges."""
    edges: list[RawEdge] = []
    p = len(names)
    for i in range(p):
        for j in range(i + 1, p):
            mi, mj = int(matrix[i, j]), int(matrix[j, i])
            if mi == 0 and mj == 0:
                continue
            left = {-1: "-", 1: "<", 2: "o"}.get(mi, "?")
            mark = f"{left}-{_MARKS.get(mj, '?')}"
            if mj == 1 and mi in (-1, 2):
                edges.append((names[i], names[j], "directed", mark))
            elif mi == 1 and mj in (-1, 2):
                edges.append((names[j], names[i], "directed", ("o" if mj == 2 else "-") + "->"))
            elif mi == 1 and mj == 1:
                edges.append((names[i], names[j], "bidirected", "<->"))
            else:
                edges.append((names[i], names[j], "undirected", mark))
    return edges


def learn_pc(
    x: np.ndarray,
    names: list[str],
    alpha: float,
    knowledge: Knowledge,
    max_depth: int | None = None,
    deadline: float | None = None,
) -> tuple[list[RawEdge], Skeleton]:
    """PC (Fisher z) with causal-learn's decisions, a depth cap and a deadline; edges and the search record."""
    p = len(names)
    banned = np.array(
        [
            [
                i != j and bool(knowledge.forbid_reason(a, b)) and bool(knowledge.forbid_reason(b, a))
                for j, b in enumerate(names)
            ]
            for i, a in enumerate(names)
        ],
        dtype=bool,
    ).reshape(p, p)
    with np.errstate(divide="ignore", invalid="ignore"):
        corr = np.corrcoef(x, rowvar=False)
    sinks = np.array([knowledge.is_sink(name) for name in names], dtype=bool)
    skel = pc_skeleton(corr, len(x), alpha, banned, max_depth, deadline, sinks)
    return _decode(orient(skel, names, knowledge.causallearn(names)), names), skel


def learn_edges(
    method: str,
    x: np.ndarray,
    names: list[str],
    alpha: float,
    knowledge: Knowledge,
    seed: int,
    max_depth: int | None = None,
) -> list[RawEdge]:
    """Run one method on ``x`` and return its edges (background knowledge applied)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=RuntimeWarning)
        warnings.filterwarnings("ignore", message="The number of features is much larger")
        if method == "pc":
            return learn_pc(x, names, alpha, knowledge, max_depth)[0]
        if method == "fci":
            from causallearn.search.ConstraintBased.FCI import fci

            bk = knowledge.causallearn(names)
            depth = -1 if max_depth is None else max_depth
            with contextlib.redirect_stdout(io.StringIO()):  # FCI prints its edges
                g, _ = fci(
                    x, "fisherz", alpha, depth=depth, background_knowledge=bk, show_progress=False, node_names=names
                )
            return _decode(g.graph, names)
        if method == "ges":
            from causallearn.search.ScoreBased.GES import ges

            return _decode(ges(x, node_names=names)["G"].graph, names)
        from causallearn.search.FCMBased.lingam import DirectLiNGAM

        model = DirectLiNGAM(random_state=seed, prior_knowledge=knowledge.lingam_prior(names)).fit(x)
        b = model.adjacency_matrix_
        return [
            (names[j], names[i], "directed", "-->")
            for i in range(len(names))
            for j in range(len(names))
            if abs(b[i, j]) > 1e-8
        ]


def enforce(edges: list[RawEdge], knowledge: Knowledge) -> tuple[list[RawEdge], list[str]]:
    """Flip or drop edges that background knowledge rules out (GES has no built-in knowledge)."""
    out: list[RawEdge] = []
    notes: list[str] = []
    for s, d, kind, mark in edges:
        fwd, back = knowledge.forbid_reason(s, d), knowledge.forbid_reason(d, s)
        if kind == "bidirected" or not (fwd or back):
            out.append((s, d, kind, mark))
        elif fwd and back:
            notes.append(f"dropped {s} {mark} {d}: {fwd}; {back}")
        elif kind == "undirected":
            src, dst = (d, s) if fwd else (s, d)
            out.append((src, dst, "directed", mark))
            notes.append(f"oriented {s} {mark} {d} as {src} -> {dst}: {fwd or back}")
        elif fwd:
            out.append((d, s, "directed", mark))
            notes.append(f"reversed {s} -> {d}: {fwd}")
        else:
            out.append((s, d, kind, mark))
    return out, notes


def _key(e: RawEdge) -> tuple[str, str, str]:
    return edge_key(CausalEdge(source=e[0], target=e[1], edge_type=e[2]))


class CausalDiscoveryParams(AgentParams):
    """Options: method, test level, bootstrap resamples, row/column caps, screen, depth, time budget.

    ``screen_above``: screen to the pair's relevant columns when more columns than this are
    usable; ``max_variables``: at most this many columns enter the search; ``max_depth``:
    largest conditioning set (PC, FCI); ``max_seconds``: budget for the whole agent (the
    search gets 60% of it, the bootstrap the rest).
    """

    method: Literal["pc", "fci", "ges", "lingam"] = Field("pc", description="search algorithm")
    alpha: float = Field(0.05, gt=0, lt=1, description="significance level of the independence tests")
    bootstrap: int = Field(20, ge=0, description="resamples for the edge confidences (0: none)")
    max_rows: int = Field(20000, ge=100, description="complete rows used (a seeded sample above this)")
    max_columns: int | None = Field(
        None, ge=2, description="columns kept, those most correlated with the pair first (None: all)"
    )
    bootstrap_time_budget_s: float = Field(30.0, gt=0, description="seconds the bootstrap may take")
    screen_above: int = Field(30, ge=0, description="screen to the pair's relevant columns above this many columns")
    max_variables: int = Field(40, ge=2, description="columns entering the search at most")
    screen_alpha: float = Field(0.05, gt=0, lt=1, description="significance level of the relevance screen")
    max_depth: int | None = Field(4, ge=0, description="largest conditioning set, PC and FCI (None: no cap)")
    max_seconds: float = Field(30.0, gt=0, description="seconds for the whole agent (search 60%, bootstrap the rest)")


class CausalDiscoveryAgent(Agent[CausalDiscoveryParams]):
    """Learns a causal graph from the data with causal-learn, respecting background knowledge."""

    STATE_MODEL = AnalysisState
    NAME = "causal_discovery"
    DESCRIPTION = "Causal discovery (PC, FCI, GES, LiNGAM) with bootstrap edge confidence"
    REQUIRED_STATE_FIELDS = ("data_profile", "dataframe_path")
    OPTIONAL_STATE_FIELDS = ("domain_knowledge",)
    WRITES_STATE_FIELDS = ("proposed_dag",)
    JOB_STATUS = JobStatus.DISCOVERING_CAUSAL
    PRELOAD_MODULES = (
        "causallearn.graph.GraphClass",
        "causallearn.utils.PCUtils.Meek",
        "causallearn.utils.PCUtils.UCSepset",
        "causallearn.utils.PCUtils.BackgroundKnowledge",
    )
    PROGRESS_WEIGHT = 2.0

    Params = CausalDiscoveryParams

    def run(self, view: AnalysisView, params: CausalDiscoveryParams, ctx: AgentContext) -> AgentResult:
        """Prepare the matrix, screen, learn the graph, bootstrap confidences, return the DAG."""
        if not 0 < params.alpha < 1 or params.bootstrap < 0 or params.max_rows < 100:
            raise AgentError("causal_discovery needs 0 < alpha < 1, bootstrap >= 0 and max_rows >= 100")
        if (
            params.max_seconds <= 0
            or params.max_variables < 2
            or (params.max_depth is not None and params.max_depth < 0)
        ):
            raise AgentError("causal_discovery needs max_seconds > 0, max_variables >= 2 and max_depth >= 0")
        started = time.perf_counter()
        found = view.maybe_pair()
        t, y, pair_note = (found.treatment, found.outcome, found.note) if found else (None, None, "")
        frame = read_table(required(view.dataframe_path, "dataframe_path"))
        first = [c for c in (t, y) if c]
        for c in first:
            if c not in frame.columns:
                raise AgentError(f"{'treatment' if c == t else 'outcome'} column '{c}' is not in the data")
        x, names, notes, n_complete = prepare_matrix(frame, first, params.max_rows, params.max_columns, ctx.seed)
        del frame
        if len(names) < 2 or len(x) < 20:
            raise AgentError(
                f"causal discovery needs at least 2 usable columns and 20 complete rows; got {len(names)} and {len(x)}"
            )
        limits: list[str] = []
        left_out: list[str] = []
        if len(names) > params.screen_above:
            protect = named_in_knowledge(view.domain_knowledge)
            n_first = sum(1 for c in first if c in names)
            x, names, screen_notes, left_out = screen_columns(
                x, names, n_first, params.screen_alpha, params.max_variables, protect
            )
            notes += screen_notes
            if left_out:
                limits.append(f"screened {len(left_out)} column(s) out of the graph search")
        knowledge = Knowledge.from_domain(view.domain_knowledge, t, y, names)
        ctx.progress(f"{METHOD_NAMES[params.method]} on {len(x):,} rows x {len(names)} columns")
        raw, depth, search_note = self._search(x, names, params, knowledge, ctx, started)
        if search_note:
            limits.append(search_note)
        raw, enforce_notes = enforce(raw, knowledge)
        counts, done, boot_note = self._bootstrap(x, names, params, knowledge, ctx, depth, started)
        if boot_note:
            limits.append(boot_note)
        edges = [self._edge(e, counts, done, params.bootstrap > 0) for e in raw]
        edges, cycle_notes = break_cycles(names, edges, knowledge.required)
        method = METHOD_NAMES[params.method]
        cut = f" Limits: {'; '.join(limits)}." if limits else ""
        dag = CausalDAG(
            nodes=names,
            edges=edges,
            discovery_method=method,
            treatment_variable=t,
            outcome_variable=y,
            interpretation=f"{method} on {len(x):,} rows and {len(names)} variables; "
            f"{sum(e.edge_type == 'directed' for e in edges)} directed, "
            f"{sum(e.edge_type != 'directed' for e in edges)} undirected/bidirected edges.{cut}",
        )
        elapsed = time.perf_counter() - started
        sampled = f" (sampled from {n_complete:,})" if n_complete > len(x) else ""
        summary = f"{method}: {len(edges)} edges over {len(names)} variables from {len(x):,} rows{sampled}, {done} bootstrap resamples"
        if limits:
            summary += f"; cut: {'; '.join(limits)}"
        reasoning = self._reasoning(
            params, knowledge, raw, notes, enforce_notes, cycle_notes, boot_note, pair_note, t, y
        )
        if search_note:
            reasoning += f"\nSearch: {search_note}."
        outputs = {
            "method": method,
            "n_rows_used": int(len(x)),
            "n_rows_complete": int(n_complete),
            "variables": names,
            "screened_out": left_out,
            "n_edges": len(edges),
            "bootstrap_done": done,
            "depth_reached": depth,
            "limits": limits,
            "raw_marks": {f"{s}|{d}": m for s, d, _, m in raw},
            "seconds": round(elapsed, 2),
        }
        return AgentResult(
            updates={"proposed_dag": dag},
            summary=summary,
            reasoning=reasoning,
            outputs=outputs,
            tools_called=[f"causallearn.{params.method}"],
        )

    @staticmethod
    def _search(
        x: np.ndarray,
        names: list[str],
        params: CausalDiscoveryParams,
        knowledge: Knowledge,
        ctx: AgentContext,
        started: float,
    ) -> tuple[list[RawEdge], int | None, str]:
        """The main fit: edges, the depth to use for resamples, and what was cut (or "")."""
        if params.method != "pc":
            return (
                learn_edges(params.method, x, names, params.alpha, knowledge, ctx.seed, params.max_depth),
                params.max_depth,
                "",
            )
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=RuntimeWarning)
            raw, skel = learn_pc(
                x, names, params.alpha, knowledge, params.max_depth, started + 0.6 * params.max_seconds
            )
        if skel.stopped == "time budget":
            return (
                raw,
                skel.depth_done,
                (
                    f"time budget max_seconds={params.max_seconds:g}: the search stopped after conditioning sets of "
                    f"size {skel.depth_done} (more edges kept than a full search would keep; {skel.n_tests:,} tests)"
                ),
            )
        if skel.stopped == "depth cap":
            return (
                raw,
                skel.depth_done,
                (
                    f"conditioning sets capped at max_depth={params.max_depth} "
                    f"(edges that only larger sets would remove are kept; {skel.n_tests:,} tests)"
                ),
            )
        return raw, params.max_depth, ""

    @staticmethod
    def _edge(e: RawEdge, counts: Counter[tuple[str, str, str]], done: int, asked: bool) -> CausalEdge:
        if done:
            confidence = counts[_key(e)] / done
        elif asked:  # resamples were asked for but none finished: unknown, never "certain"
            confidence = 0.5
        else:  # no resamples: definite marks 1.0, circle marks (FCI) only half-sure
            confidence = 0.5 if "o" in e[3] else 1.0
        return CausalEdge(source=e[0], target=e[1], edge_type=e[2], confidence=round(float(confidence), 4))

    @staticmethod
    def _bootstrap(
        x: np.ndarray,
        names: list[str],
        params: CausalDiscoveryParams,
        knowledge: Knowledge,
        ctx: AgentContext,
        depth: int | None,
        started: float,
    ) -> tuple[Counter[tuple[str, str, str]], int, str]:
        """Re-learn on resamples (with replacement) and count each oriented edge.

        The resamples are drawn up front, so each fit depends only on its own rows (any order,
        any worker gives the same counts).
        They stop at the bootstrap budget or the agent's ``max_seconds``, whichever comes first.
        """
        counts: Counter[tuple[str, str, str]] = Counter()
        start = time.perf_counter()
        stop = min(start + params.bootstrap_time_budget_s, started + params.max_seconds)
        done = 0
        rng = np.random.default_rng(ctx.seed + 1)
        draws = [rng.integers(0, len(x), size=len(x)) for _ in range(params.bootstrap)]  # fixed before any fit
        for b, idx in enumerate(draws):
            if time.perf_counter() > stop:
                break
            try:
                edges, _ = enforce(
                    learn_edges(params.method, x[idx], names, params.alpha, knowledge, ctx.seed + b, depth), knowledge
                )
            except (ValueError, np.linalg.LinAlgError) as exc:
                ctx.logger.warning("bootstrap resample %d failed: %s", b, exc)
                continue
            counts.update({_key(e) for e in edges})
            done += 1
        note = ""
        if done < params.bootstrap:
            note = (
                f"bootstrap stopped after {done} of {params.bootstrap} resamples (time budget: "
                f"{min(params.bootstrap_time_budget_s, params.max_seconds):.0f} s, or failed fits); "
                "confidences rest on fewer resamples"
            )
        return counts, done, note

    @staticmethod
    def _reasoning(
        params: CausalDiscoveryParams,
        knowledge: Knowledge,
        raw: list[RawEdge],
        notes: list[str],
        enforce_notes: list[str],
        cycle_notes: list[str],
        boot_note: str,
        pair_note: str,
        t: str | None,
        y: str | None,
    ) -> str:
        lines = [f"Method {METHOD_NAMES[params.method]} (alpha={params.alpha}) on numeric columns."]
        if pair_note:
            lines.append(pair_note + ".")
        lines.append(f"Treatment {t!r}, outcome {y!r}.")
        if not knowledge.is_empty():
            lines.append(
                "Background knowledge: nothing measured after the treatment causes it; the outcome causes nothing"
                f"; tiers for {len(knowledge.tiers)} columns; {len(knowledge.forbidden)} forbidden and "
                f"{len(knowledge.required)} required edges from domain knowledge."
            )
        if params.method == "ges":
            lines.append("GES takes no background knowledge, so the rules were applied to its output.")
        lines += [f"Data: {n}." for n in notes]
        lines += [f"Knowledge: {n}." for n in enforce_notes]
        lines += [f"Cycle: {n}." for n in cycle_notes]
        circles = [f"{s} {m} {d}" for s, d, _, m in raw if "o" in m]
        if circles:
            lines.append(
                "FCI circle marks (the end is undetermined) mapped: o-> to directed, o-o to undirected: "
                + ", ".join(circles)
                + "."
            )
        if boot_note:
            lines.append(boot_note + ".")
        lines.append(
            "Confidence = share of bootstrap resamples containing the edge with the same orientation"
            + (
                "."
                if "stopped after 0 of" not in boot_note
                else "; no resample finished, so every edge gets 0.5 (unknown)."
            )
            if params.bootstrap
            else "No bootstrap: confidences are not estimated (1.0 for definite marks, 0.5 for circle marks)."
        )
        return "\n".join(lines)
