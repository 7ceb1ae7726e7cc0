"""The numeric matrix causal discovery searches: encoded columns, complete rows, a row sample,
no exact collinearity, and (on wide data) only the columns relevant to the pair.

Every column or row left out is named in a note, because a graph silently missing a
variable reads as "that variable does not matter".
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from whyflow.causal.dataprep.frame_checks import at_most_distinct
from whyflow.causal.discovery.pc_search import relevance_screen
from whyflow.causal.knowledge import DomainKnowledge
from whyflow.core.errors import AgentError

__all__ = ["prepare_matrix", "screen_columns", "named_in_knowledge"]


def _encode_column(s: pd.Series, n: int) -> tuple[np.ndarray | None, str]:
    """A float column for discovery, or ``None`` and the reason it was skipped."""
    if pd.api.types.is_bool_dtype(s):
        return s.astype(float).to_numpy(), ""
    if at_most_distinct(s, 1):
        return None, "constant"
    if pd.api.types.is_numeric_dtype(s):
        values = s.to_numpy(dtype=float, na_value=np.nan)
        # Integers first: counting distinct values hashes the whole column; a float column never needs it.
        if np.allclose(np.nan_to_num(values) % 1, 0) and int(s.nunique(dropna=True)) == n:
            named = "id" in str(s.name).lower().replace("-", "_").split("_")
            consecutive = float(np.nanmax(values) - np.nanmin(values)) == n - 1
            if named or consecutive:
                return None, "an identifier (one distinct integer per row)"
        return values, ""
    nunique = int(s.nunique(dropna=True))
    if nunique == 2:
        levels = sorted(s.dropna().astype(str).unique())
        return np.where(s.isna(), np.nan, (s.astype(str) == levels[1]).astype(float)), f"encoded {levels[1]!r} as 1"
    kind = "high-cardinality text or identifier" if nunique > 50 else f"categorical with {nunique} levels"
    return None, f"{kind}: linear independence tests cannot use it"


def _drop_collinear(x: np.ndarray, names: list[str], keep_first: int) -> tuple[list[int], list[str]]:
    """Greedily keep columns not (near-)exactly determined by those already kept (R² > 0.9999).

    R² of a column on the kept ones comes from the correlation matrix through a Cholesky factor
    grown one kept column at a time (one small triangular solve per column, not a regression).
    """
    from scipy.linalg import solve_triangular

    sd = x.std(0)
    z = (x - x.mean(0)) / np.where(sd > 0, sd, 1.0)
    corr = (z.T @ z) / max(len(z), 1)
    kept: list[int] = []
    notes: list[str] = []
    chol = np.zeros((x.shape[1], x.shape[1]))
    for j in range(x.shape[1]):
        if sd[j] == 0 and j >= keep_first:
            notes.append(f"{names[j]} skipped: constant in the rows used")
            continue
        k = len(kept)
        w = solve_triangular(chol[:k, :k], corr[kept, j], lower=True) if k else np.zeros(0)
        r2 = float(w @ w)
        if r2 > 0.9999 and j >= keep_first:
            notes.append(f"{names[j]} skipped: an exact linear function of other columns (R²={min(r2, 1.0):.5f})")
            continue
        chol[k, :k] = w
        chol[k, k] = np.sqrt(max(1.0 - r2, 1e-12))
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
    complete = np.ones(n, dtype=bool)
    for c in names:
        complete &= ~np.isnan(cols[c])
    if not complete.all():
        notes.append(f"{int((~complete).sum())} rows with missing values dropped")
    rows = np.flatnonzero(complete)
    n_complete = len(rows)
    if n_complete > max_rows:
        idx = np.sort(np.random.default_rng(seed).choice(n_complete, size=max_rows, replace=False))
        rows = rows[idx]
        notes.append(f"sampled {max_rows:,} of {n_complete:,} complete rows (seed {seed})")
    # The matrix holds only the rows searched: never a copy of every row of every column.
    x = np.column_stack([cols[c][rows] for c in names]) if names else np.empty((len(rows), 0))
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


def screen_columns(
    x: np.ndarray, names: list[str], n_first: int, alpha: float, cap: int, protect: set[str]
) -> tuple[np.ndarray, list[str], list[str], list[str]]:
    """Keep the columns relevant to the pair (``relevance_screen``); the matrix, names, notes and the columns left out."""
    scr = relevance_screen(x, n_first, alpha, cap, {i for i, c in enumerate(names) if c in protect})
    notes = [f"{scr.method}: kept {len(scr.keep)} of {len(names)} columns for the graph search"]
    if scr.dropped:
        notes.append(
            f"left out of the graph, not related to the treatment or the outcome given the other columns: "
            f"{[names[j] for j in scr.dropped]}"
        )
    if scr.capped:
        notes.append(
            f"left out of the graph by the cap max_variables={cap} although related (the weakest): "
            f"{[names[j] for j in scr.capped]}"
        )
    if scr.dropped or scr.capped:
        notes.append(
            "columns left out of the graph are not judged by it: confounder discovery decides on them from the data"
        )
    out = [names[j] for j in scr.dropped + scr.capped]
    return x[:, scr.keep], [names[j] for j in scr.keep], notes, out


def named_in_knowledge(domain: DomainKnowledge | None) -> set[str]:
    """Columns that domain knowledge names in tiers or edge lists: never screened out."""
    out: set[str] = set()
    domain = domain or DomainKnowledge()
    for tier in domain.temporal_order:
        out.update(str(c) for c in tier)
    for pair in [*domain.forbidden_edges, *domain.required_edges]:
        out.update(str(c) for c in pair)
    return out
