"""Causal discovery: learn a graph over the numeric columns with causal-learn (PC, FCI, GES, LiNGAM).

Why: confounder discovery and the DAG expert need a candidate graph; learning it from the data
(with what the question and domain knowledge already rule out) beats guessing. Edge confidence
is the share of bootstrap resamples in which the edge appears with the same orientation.
"""

from __future__ import annotations

import contextlib
import io
import time
import warnings
from collections import Counter
from typing import Literal

import numpy as np
import pandas as pd

from agents.base.agent import Agent, AgentContext, AgentParams, AgentResult
from agents.base.data import read_table
from agents.base.errors import AgentError
from agents.base.state import CausalDAG, CausalEdge, DataProfile, JobStatus
from agents.base.view import StateView
from agents.stats.graphs import Knowledge, break_cycles, edge_key

__all__ = ["CausalDiscoveryAgent", "prepare_matrix", "learn_edges"]

RawEdge = tuple[str, str, str, str]
"""(source, target, edge_type, raw causal-learn mark such as "-->", "o->", "---")."""

METHOD_NAMES = {"pc": "PC", "fci": "FCI", "ges": "GES", "lingam": "LiNGAM"}
_MARKS = {-1: "-", 1: ">", 2: "o"}


def _pair(view: StateView, profile: DataProfile) -> tuple[str | None, str | None, str]:
    t, y = view.get_primary_pair()
    if t and y:
        return t, y, ""
    t = profile.treatment_candidates[0] if profile.treatment_candidates else None
    y = profile.outcome_candidates[0] if profile.outcome_candidates else None
    note = "no treatment/outcome pair was set; used the profile's first candidates" if (t or y) else ""
    return t, y, note


def _encode_column(s: pd.Series, n: int) -> tuple[np.ndarray | None, str]:
    """A float column for discovery, or ``None`` and the reason it was skipped."""
    if pd.api.types.is_bool_dtype(s):
        return s.astype(float).to_numpy(), ""
    nunique = int(s.nunique(dropna=True))
    if nunique < 2:
        return None, "constant"
    if pd.api.types.is_numeric_dtype(s):
        values = s.to_numpy(dtype=float, na_value=np.nan)
        if nunique == n and np.allclose(np.nan_to_num(values) % 1, 0):
            named = "id" in str(s.name).lower().replace("-", "_").split("_")
            consecutive = float(np.nanmax(values) - np.nanmin(values)) == n - 1
            if named or consecutive:
                return None, "an identifier (one distinct integer per row)"
        return values, ""
    if nunique == 2:
        levels = sorted(s.dropna().astype(str).unique())
        return np.where(s.isna(), np.nan, (s.astype(str) == levels[1]).astype(float)), f"encoded {levels[1]!r} as 1"
    kind = "high-cardinality text or identifier" if nunique > 50 else f"categorical with {nunique} levels"
    return None, f"{kind}: linear independence tests cannot use it"


def _drop_collinear(x: np.ndarray, names: list[str], keep_first: int) -> tuple[list[int], list[str]]:
    """Greedily keep columns not (near-)exactly determined by those already kept (R² > 0.9999)."""
    sd = x.std(0)
    z = (x - x.mean(0)) / np.where(sd > 0, sd, 1.0)
    kept: list[int] = []
    notes: list[str] = []
    for j in range(x.shape[1]):
        if sd[j] == 0 and j >= keep_first:
            notes.append(f"{names[j]} skipped: constant in the rows used")
            continue
        if kept:
            coef, *_ = np.linalg.lstsq(z[:, kept], z[:, j], rcond=None)
            r2 = 1 - np.var(z[:, j] - z[:, kept] @ coef)
            if r2 > 0.9999 and j >= keep_first:
                notes.append(f"{names[j]} skipped: an exact linear function of other columns (R²={r2:.5f})")
                continue
        kept.append(j)
    return kept, notes


def prepare_matrix(
    frame: pd.DataFrame, first: list[str], max_rows: int, max_columns: int | None, seed: int
) -> tuple[np.ndarray, list[str], list[str], int]:
    """Numeric matrix for discovery: encoded, complete rows, sampled, without exact collinearity.

    ``first`` (treatment, outcome) are kept whenever usable. Returns the matrix, its column
    names, notes on every column or row dropped, and the number of complete rows before sampling.
    """
    n = len(frame)
    cols: dict[str, np.ndarray] = {}
    notes: list[str] = []
    ordered = [c for c in first if c in frame.columns] + [c for c in frame.columns if c not in first]
    for c in ordered:
        values, why = _encode_column(frame[c], n)
        if values is None:
            notes.append(f"{c} skipped: {why}")
            continue
        if why:
            notes.append(f"{c} {why}")
        if c not in first and np.isnan(values).mean() > 0.3:
            notes.append(f"{c} skipped: {np.isnan(values).mean():.0%} missing")
            continue
        cols[c] = values
    for c in first:
        if c in frame.columns and c not in cols:
            raise AgentError(f"column '{c}' cannot enter causal discovery ({notes[-1] if notes else 'unusable'})")
    names = list(cols)
    x = np.column_stack([cols[c] for c in names]) if names else np.empty((n, 0))
    complete = ~np.isnan(x).any(axis=1)
    if not complete.all():
        notes.append(f"{int((~complete).sum())} rows with missing values dropped")
    x = x[complete]
    n_complete = len(x)
    if n_complete > max_rows:
        idx = np.sort(np.random.default_rng(seed).choice(n_complete, size=max_rows, replace=False))
        x = x[idx]
        notes.append(f"sampled {max_rows:,} of {n_complete:,} complete rows (seed {seed})")
    n_first = sum(1 for c in first if c in cols)
    if max_columns is not None and len(names) > max_columns:
        corr = np.abs(np.corrcoef(x, rowvar=False)[:n_first]).max(axis=0) if n_first else np.zeros(len(names))
        rest = sorted(range(n_first, len(names)), key=lambda j: -corr[j])[: max(0, max_columns - n_first)]
        keep = list(range(n_first)) + sorted(rest)
        dropped = [names[j] for j in range(len(names)) if j not in keep]
        notes.append(
            f"max_columns={max_columns}: kept the columns most correlated with treatment/outcome; dropped {dropped}"
        )
        x, names = x[:, keep], [names[j] for j in keep]
    kept, coll_notes = _drop_collinear(x, names, n_first)
    notes += coll_notes
    return x[:, kept], [names[j] for j in kept], notes, n_complete


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


def learn_edges(
    method: str, x: np.ndarray, names: list[str], alpha: float, knowledge: Knowledge, seed: int
) -> list[RawEdge]:
    """Run one causal-learn method on ``x`` and return its edges (background knowledge applied)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=RuntimeWarning)
        warnings.filterwarnings("ignore", message="The number of features is much larger")
        if method == "pc":
            from causallearn.search.ConstraintBased.PC import pc

            bk = knowledge.causallearn(names)
            cg = pc(x, alpha, "fisherz", background_knowledge=bk, show_progress=False, node_names=names)
            return _decode(cg.G.graph, names)
        if method == "fci":
            from causallearn.search.ConstraintBased.FCI import fci

            bk = knowledge.causallearn(names)
            with contextlib.redirect_stdout(io.StringIO()):  # FCI prints its edges
                g, _ = fci(x, "fisherz", alpha, background_knowledge=bk, show_progress=False, node_names=names)
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


class CausalDiscoveryAgent(Agent):
    """Learns a causal graph from the data with causal-learn, respecting background knowledge."""

    NAME = "causal_discovery"
    DESCRIPTION = "Causal discovery (PC, FCI, GES, LiNGAM) with bootstrap edge confidence"
    REQUIRED_STATE_FIELDS = ("data_profile", "dataframe_path")
    OPTIONAL_STATE_FIELDS = ("domain_knowledge",)
    WRITES_STATE_FIELDS = ("proposed_dag",)
    JOB_STATUS = JobStatus.DISCOVERING_CAUSAL
    PRELOAD_MODULES = (
        "causallearn.search.ConstraintBased.PC",
        "causallearn.search.ConstraintBased.FCI",
        "causallearn.search.ScoreBased.GES",
        "causallearn.utils.PCUtils.BackgroundKnowledge",
    )
    PROGRESS_WEIGHT = 2.0

    class Params(AgentParams):
        """Options: method, test level, bootstrap resamples, row/column caps, time budget."""

        method: Literal["pc", "fci", "ges", "lingam"] = "pc"
        alpha: float = 0.05
        bootstrap: int = 20
        max_rows: int = 20000
        max_columns: int | None = None
        bootstrap_time_budget_s: float = 30.0

    def run(self, view: StateView, params: AgentParams, ctx: AgentContext) -> AgentResult:
        """Prepare the matrix, learn the graph, bootstrap confidences, return the DAG."""
        assert isinstance(params, CausalDiscoveryAgent.Params)
        if not 0 < params.alpha < 1 or params.bootstrap < 0 or params.max_rows < 100:
            raise AgentError("causal_discovery needs 0 < alpha < 1, bootstrap >= 0 and max_rows >= 100")
        started = time.perf_counter()
        profile = view.data_profile
        t, y, pair_note = _pair(view, profile)
        frame = read_table(view.dataframe_path)
        first = [c for c in (t, y) if c]
        for c in first:
            if c not in frame.columns:
                raise AgentError(f"{'treatment' if c == t else 'outcome'} column '{c}' is not in the data")
        x, names, notes, n_complete = prepare_matrix(frame, first, params.max_rows, params.max_columns, ctx.seed)
        if len(names) < 2 or len(x) < 20:
            raise AgentError(
                f"causal discovery needs at least 2 usable columns and 20 complete rows; got {len(names)} and {len(x)}"
            )
        knowledge = Knowledge.from_domain(view.domain_knowledge, t, y, names)
        ctx.progress(f"{METHOD_NAMES[params.method]} on {len(x):,} rows x {len(names)} columns")
        raw, enforce_notes = enforce(learn_edges(params.method, x, names, params.alpha, knowledge, ctx.seed), knowledge)
        counts, done, boot_note = self._bootstrap(x, names, params, knowledge, ctx)
        edges = [self._edge(e, counts, done) for e in raw]
        edges, cycle_notes = break_cycles(names, edges, knowledge.required)
        method = METHOD_NAMES[params.method]
        dag = CausalDAG(
            nodes=names,
            edges=edges,
            discovery_method=method,
            treatment_variable=t,
            outcome_variable=y,
            interpretation=f"{method} on {len(x):,} rows and {len(names)} variables; "
            f"{sum(e.edge_type == 'directed' for e in edges)} directed, "
            f"{sum(e.edge_type != 'directed' for e in edges)} undirected/bidirected edges.",
        )
        elapsed = time.perf_counter() - started
        sampled = f" (sampled from {n_complete:,})" if n_complete > len(x) else ""
        summary = f"{method}: {len(edges)} edges over {len(names)} variables from {len(x):,} rows{sampled}, {done} bootstrap resamples"
        reasoning = self._reasoning(
            params, knowledge, raw, notes, enforce_notes, cycle_notes, boot_note, pair_note, t, y
        )
        outputs = {
            "method": method,
            "n_rows_used": int(len(x)),
            "n_rows_complete": int(n_complete),
            "variables": names,
            "n_edges": len(edges),
            "bootstrap_done": done,
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
    def _edge(e: RawEdge, counts: Counter[tuple[str, str, str]], done: int) -> CausalEdge:
        if done:
            confidence = counts[_key(e)] / done
        else:  # no resamples: definite marks 1.0, circle marks (FCI) only half-sure
            confidence = 0.5 if "o" in e[3] else 1.0
        return CausalEdge(source=e[0], target=e[1], edge_type=e[2], confidence=round(float(confidence), 4))

    @staticmethod
    def _bootstrap(
        x: np.ndarray, names: list[str], params: CausalDiscoveryAgent.Params, knowledge: Knowledge, ctx: AgentContext
    ) -> tuple[Counter[tuple[str, str, str]], int, str]:
        """Re-learn on resamples (with replacement) and count each oriented edge."""
        counts: Counter[tuple[str, str, str]] = Counter()
        rng = np.random.default_rng(ctx.seed + 1)
        start = time.perf_counter()
        done = 0
        for b in range(params.bootstrap):
            if time.perf_counter() - start > params.bootstrap_time_budget_s:
                break
            idx = rng.integers(0, len(x), size=len(x))
            try:
                edges, _ = enforce(
                    learn_edges(params.method, x[idx], names, params.alpha, knowledge, ctx.seed + b), knowledge
                )
            except (ValueError, np.linalg.LinAlgError) as exc:
                ctx.logger.warning("bootstrap resample %d failed: %s", b, exc)
                continue
            counts.update({_key(e) for e in edges})
            done += 1
        note = ""
        if done < params.bootstrap:
            note = f"bootstrap stopped after {done} of {params.bootstrap} resamples (time budget {params.bootstrap_time_budget_s:.0f} s or failed fits)"
        return counts, done, note

    @staticmethod
    def _reasoning(
        params: CausalDiscoveryAgent.Params,
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
            "Confidence = share of bootstrap resamples containing the edge with the same orientation."
            if params.bootstrap
            else "No bootstrap: confidences are not estimated (1.0 for definite marks, 0.5 for circle marks)."
        )
        return "\n".join(lines)
