"""Confounder discovery: choose the adjustment set for the treatment-outcome pair.

Why: an effect estimate is only as good as what it adjusts for. The graph (through DoWhy's
backdoor identification) says which variables block the backdoor paths; the data cross-checks it
(variables associated with both treatment and outcome, near-copies of the treatment, possible
instruments); domain knowledge vetoes anything measured after the treatment. Mediators,
colliders, descendants of the treatment and functions of it are never adjusted for.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from agents.base.agent import Agent, AgentContext, AgentParams, AgentResult
from agents.base.data import read_table
from agents.base.errors import AgentError
from agents.base.state import CausalDAG, DataProfile, JobStatus
from agents.base.view import StateView
from agents.stats.graphs import Knowledge

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["ConfounderDiscoveryAgent", "DataChecks", "data_checks", "dowhy_graph"]

_MAX_LEVELS = 20


@dataclass
class DataChecks:
    """Per-variable evidence from the data (p-values of F-tests, R² on the treatment)."""

    p_treatment: dict[str, float] = field(default_factory=dict)
    p_outcome_given_t: dict[str, float] = field(default_factory=dict)
    r2_from_treatment: dict[str, float] = field(default_factory=dict)
    unusable: dict[str, str] = field(default_factory=dict)


def _block(s: pd.Series) -> np.ndarray | None:
    """Design columns for one variable: itself if numeric, dummies if categorical (else None)."""
    if pd.api.types.is_bool_dtype(s) or pd.api.types.is_numeric_dtype(s):
        return s.to_numpy(dtype=float, na_value=np.nan).reshape(-1, 1)
    if s.nunique(dropna=True) > _MAX_LEVELS:
        return None
    dummies = pd.get_dummies(s.astype("string"), drop_first=True, dtype=float)
    return dummies.to_numpy() if dummies.shape[1] else None


def _f_pvalue(target: np.ndarray, block: np.ndarray, controls: np.ndarray) -> float:
    """p-value that ``block`` adds to an OLS of ``target`` on ``controls`` (statsmodels F-test)."""
    import statsmodels.api as sm
    from statsmodels.tools.sm_exceptions import SingularMatrixWarning

    n = len(target)
    base = np.column_stack([np.ones(n), controls]) if controls.size else np.ones((n, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", SingularMatrixWarning)
        full = sm.OLS(target, np.column_stack([base, block])).fit()
        restricted = sm.OLS(target, base).fit()
        if full.ssr <= 1e-12 * max(restricted.ssr, 1e-300):
            return 0.0
        _, p, _ = full.compare_f_test(restricted)
    return float(p) if np.isfinite(p) else 1.0


def _r2_from(x: np.ndarray, t: np.ndarray) -> float:
    """How well a flexible function of the treatment predicts ``x`` (max of several R²)."""
    from scipy.stats import spearmanr

    x = x.ravel()
    if np.std(x) == 0:
        return 1.0
    levels = np.unique(t)
    if len(levels) <= 20:
        design = (t.reshape(-1, 1) == levels[1:].reshape(1, -1)).astype(float)
    else:
        z = (t - t.mean()) / t.std()
        design = np.column_stack([z, z**2, z**3])
    design = np.column_stack([np.ones(len(x)), design])
    coef, *_ = np.linalg.lstsq(design, x, rcond=None)
    r2 = 1 - np.var(x - design @ coef) / np.var(x)
    if len(levels) > 2:
        rho = spearmanr(x, t).statistic
        r2 = max(r2, float(rho) ** 2 if np.isfinite(rho) else 0.0)
    return float(r2)


def data_checks(frame: pd.DataFrame, t: str, y: str, candidates: list[str]) -> DataChecks:
    """Association of each candidate with the treatment, with the outcome given the treatment,
    and R² of each candidate as a function of the treatment."""
    out = DataChecks()
    tv = frame[t].to_numpy(dtype=float)
    yv = frame[y].to_numpy(dtype=float)
    for c in candidates:
        block = _block(frame[c])
        if block is None:
            out.unusable[c] = "categorical with too many levels for the association tests"
            continue
        ok = ~(np.isnan(block).any(axis=1) | np.isnan(tv) | np.isnan(yv))
        if ok.sum() < 30 or np.nanstd(block[ok], axis=0).max() == 0:
            out.unusable[c] = "constant or too few complete rows"
            continue
        out.p_treatment[c] = _f_pvalue(tv[ok], block[ok], np.empty(0))
        out.p_outcome_given_t[c] = _f_pvalue(yv[ok], block[ok], tv[ok].reshape(-1, 1))
        out.r2_from_treatment[c] = max(_r2_from(block[ok][:, j], tv[ok]) for j in range(block.shape[1]))
    return out


def _looks_like_id(s: pd.Series, n: int) -> bool:
    """Text with a distinct value per row, or integers that are distinct per row and named like an id."""
    unique = s.nunique(dropna=True)
    if pd.api.types.is_float_dtype(s) or pd.api.types.is_bool_dtype(s):
        return False
    if not pd.api.types.is_numeric_dtype(s):
        return unique >= 0.95 * n
    tokens = str(s.name).lower().replace("-", "_").split("_")
    return unique == n and ("id" in tokens or str(s.name).lower().endswith("id"))


def _adjustment_valid(g: nx.DiGraph, t: str, y: str, s: set[str]) -> bool:
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


def _identify(
    frame: pd.DataFrame, g: nx.DiGraph, t: str, y: str, latent: list[str]
) -> tuple[list[str] | None, str, list[str]]:
    """DoWhy maximal-adjustment backdoor identification: (set or None, estimand, graph instruments)."""
    import networkx as nx
    from dowhy import CausalModel

    observed = [n for n in g.nodes if n in frame.columns]
    eligible = set(observed) - nx.descendants(g, t) - {t, y}
    if latent and not _adjustment_valid(g, t, y, eligible) and len(eligible) > 12:
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


class ConfounderDiscoveryAgent(Agent):
    """Chooses the adjustment set from the DAG (DoWhy backdoor), the data and domain knowledge."""

    NAME = "confounder_discovery"
    DESCRIPTION = "Backdoor adjustment set with DoWhy, cross-checked against the data"
    REQUIRED_STATE_FIELDS = ("data_profile", "dataframe_path")
    OPTIONAL_STATE_FIELDS = ("proposed_dag", "domain_knowledge")
    WRITES_STATE_FIELDS = ("confounder_discovery",)
    JOB_STATUS = JobStatus.DISCOVERING_CAUSAL
    PROGRESS_WEIGHT = 1.0

    class Params(AgentParams):
        """Options: test level, determinism threshold, rows used by the data checks."""

        alpha: float = 0.05
        deterministic_r2: float = 0.99
        max_rows: int = 50000

    def run(self, view: StateView, params: AgentParams, ctx: AgentContext) -> AgentResult:
        """Combine graph, data and knowledge into the adjustment set with a reason per variable."""
        assert isinstance(params, ConfounderDiscoveryAgent.Params)
        profile: DataProfile = view.data_profile
        dag: CausalDAG | None = view.proposed_dag
        t, y, notes = self._pair(view, profile, dag)
        frame = read_table(view.dataframe_path)
        for role, col in (("treatment", t), ("outcome", y)):
            if col not in frame.columns:
                raise AgentError(f"{role} column '{col}' is not in the data")
            if not (pd.api.types.is_numeric_dtype(frame[col]) or pd.api.types.is_bool_dtype(frame[col])):
                raise AgentError(f"{role} column '{col}' must be numeric or 0/1 (encode it first)")
        if len(frame) > params.max_rows:
            frame = frame.sample(n=params.max_rows, random_state=ctx.seed)
            notes.append(f"data checks on a seeded sample of {params.max_rows:,} rows")
        knowledge = Knowledge.from_domain(view.domain_knowledge, t, y)
        candidates, excluded = self._candidates(frame, profile, t, y, view.domain_knowledge)
        checks = data_checks(frame, t, y, candidates)
        excluded.update(checks.unusable)
        result = _Builder(t, y, candidates, checks, knowledge, params, excluded, notes)
        if dag is not None and t in dag.nodes and y in dag.nodes:
            result.from_graph(frame, dag)
        else:
            result.from_data_only(
                "no causal graph" if dag is None else "the graph does not contain the treatment and outcome"
            )
        out = result.finish(frame)
        n_adj = len(out["adjustment_set"])
        summary = (
            f"Adjust for {n_adj} variable(s) [{', '.join(out['adjustment_set'][:6])}{' ...' if n_adj > 6 else ''}]; "
            f"excluded {len(out['excluded'])}; identified={out['identification']['identified']}"
        )
        outputs = {
            k: out[k] for k in ("adjustment_set", "mediators", "colliders", "derived_from_treatment", "instruments")
        }
        return AgentResult(
            updates={"confounder_discovery": out},
            summary=summary,
            reasoning=result.reasoning(),
            outputs=outputs,
            tools_called=["dowhy.identify_effect"] if result.used_dowhy else [],
        )

    @staticmethod
    def _pair(view: StateView, profile: DataProfile, dag: CausalDAG | None) -> tuple[str, str, list[str]]:
        t, y = view.get_primary_pair()
        if t and y:
            return t, y, []
        if dag is not None and dag.treatment_variable and dag.outcome_variable:
            return dag.treatment_variable, dag.outcome_variable, ["pair taken from the proposed DAG"]
        if profile.treatment_candidates and profile.outcome_candidates:
            return (
                profile.treatment_candidates[0],
                profile.outcome_candidates[0],
                ["no pair set: used the profile's first treatment and outcome candidates"],
            )
        raise AgentError("no treatment/outcome pair: set --treatment and --outcome or run the profiler first")

    @staticmethod
    def _candidates(
        frame: pd.DataFrame, profile: DataProfile, t: str, y: str, domain: dict[str, Any] | None
    ) -> tuple[list[str], dict[str, str]]:
        roles = (domain or {}).get("roles") or {}
        excluded: dict[str, str] = {}
        candidates: list[str] = []
        n = len(frame)
        for c in frame.columns:
            if c in (t, y):
                continue
            s = frame[c]
            kind = profile.feature_types.get(c, "")
            if roles.get(c) in ("id", "time") or kind in ("id", "datetime", "text"):
                excluded[c] = f"{roles.get(c) or kind} column, not a causal variable"
            elif _looks_like_id(s, n):
                excluded[c] = "identifier-like (a distinct value per row)"
            else:
                candidates.append(c)
        return candidates, excluded


class _Builder:
    """Collects the decisions for one pair: graph classification, data checks, exclusions."""

    def __init__(
        self,
        t: str,
        y: str,
        candidates: list[str],
        checks: DataChecks,
        k: Knowledge,
        params: ConfounderDiscoveryAgent.Params,
        excluded: dict[str, str],
        notes: list[str],
    ) -> None:
        self.t, self.y, self.candidates, self.checks, self.k, self.params = t, y, candidates, checks, k, params
        self.excluded = excluded
        self.notes = notes
        self.rationale: dict[str, str] = {}
        self.adjust: list[str] = []
        self.roles: dict[str, list[str]] = {"mediators": [], "colliders": [], "descendants": [], "instruments": []}
        self.identification = {"method": "data-driven (no graph)", "identified": False, "estimand": ""}
        self.used_dowhy = False
        alpha = params.alpha
        self.associated = [
            c for c in candidates if checks.p_treatment.get(c, 1) < alpha and checks.p_outcome_given_t.get(c, 1) < alpha
        ]
        self.derived = [c for c in candidates if checks.r2_from_treatment.get(c, 0) > params.deterministic_r2]
        self._veto()

    def _veto(self) -> None:
        """Hard exclusions that no graph can override: functions of, or measured after, the treatment."""
        for c in self.derived:
            self.excluded[c] = (
                f"a (near-)deterministic function of the treatment (R²={self.checks.r2_from_treatment[c]:.4f})"
            )
        for c in self.candidates:
            if c in self.excluded:
                continue
            if c in self.k.post_treatment:
                self.excluded[c] = "domain knowledge says it is measured after the treatment (post-treatment)"

    def from_graph(self, frame: pd.DataFrame, dag: CausalDAG) -> None:
        """Backdoor set from DoWhy on the (conservatively oriented) graph, then prune and classify."""
        import networkx as nx

        g, latent, orient_notes = dowhy_graph(dag, self.t, self.y, self.k)
        self.notes += orient_notes
        desc = nx.descendants(g, self.t)
        anc_y = nx.ancestors(g, self.y)
        desc_y = nx.descendants(g, self.y)
        for c in sorted(desc & set(self.candidates)):
            if c in anc_y:
                self.roles["mediators"].append(c)
                why = "a mediator: on a directed path from the treatment to the outcome"
            elif c in desc_y:
                self.roles["colliders"].append(c)
                why = "a collider: a common effect of treatment and outcome"
            else:
                why = "a descendant of the treatment in the graph"
            self.roles["descendants"].append(c)
            self.excluded.setdefault(c, why)
        self.used_dowhy = True
        backdoor, estimand, graph_ivs = _identify(frame, g, self.t, self.y, latent)
        self.identification = {
            "method": "dowhy backdoor (maximal-adjustment)",
            "identified": backdoor is not None,
            "estimand": estimand,
        }
        if backdoor is None:
            self.notes.append(f"DoWhy found no valid backdoor set ({estimand}); falling back to the data-driven set")
            self.from_data_only("the graph's backdoor paths cannot all be blocked", keep_identification=True)
            return
        chosen = [c for c in backdoor if c not in self.excluded]
        dropped = [c for c in backdoor if c in self.excluded]
        if dropped:
            self.notes.append(
                f"removed from DoWhy's set by a hard exclusion: {dropped} (identification now rests on the exclusion being right)"
            )
        chosen = self._prune(g, chosen, graph_ivs)
        for c in chosen:
            outcome_only = g.has_edge(c, self.y) and not g.has_edge(c, self.t)
            if c in self.associated:
                tag = "confounder: associated with treatment and outcome in the data"
                tag += " (the graph shows it as a cause of the outcome only)" if outcome_only else ""
            elif outcome_only:
                tag = "cause of the outcome only: adjusting improves precision"
            else:
                tag = "non-descendant of the treatment kept by the maximal backdoor set"
            self.rationale[c] = f"{tag}; in DoWhy's backdoor set" + self._orientation_warning(dag, c)
        self.adjust = chosen
        for c in self.associated:  # data cross-check: associated variables the graph does not hold
            if c not in g and c not in self.excluded:
                self.adjust.append(c)
                self.rationale[c] = (
                    "not in the graph; associated with both treatment and outcome in the data, so adjusted"
                )

    def _orientation_warning(self, dag: CausalDAG, c: str) -> str:
        """A caveat when the edge between ``c`` and the treatment is unoriented or unstable."""
        for e in dag.edges:
            if {e.source, e.target} == {c, self.t} and (e.edge_type != "directed" or e.confidence < 0.5):
                return (
                    f" (caution: its edge with the treatment is {e.edge_type}, confidence {e.confidence:.2f}; "
                    "if it is measured after the treatment, do not adjust for it)"
                )
        return ""

    def _prune(self, g: nx.DiGraph, chosen: list[str], graph_ivs: list[str]) -> list[str]:
        """Drop variables the backdoor set does not need and the outcome does not depend on
        (possible instruments or noise), checking validity after each drop."""
        keep = list(chosen)
        alpha = self.params.alpha
        for c in sorted(chosen, key=lambda c: -self.checks.p_outcome_given_t.get(c, 0)):
            if self.checks.p_outcome_given_t.get(c, 0) < alpha:
                continue
            trial = set(keep) - {c}
            if not _adjustment_valid(g, self.t, self.y, trial):
                continue
            keep.remove(c)
            if self.checks.p_treatment.get(c, 1) < alpha:
                self.roles["instruments"].append(c)
                self.excluded[c] = (
                    "possible instrument: drives the treatment, unrelated to the outcome given it; adjusting would only add variance"
                )
            else:
                self.excluded[c] = "not needed to block any backdoor path and unrelated to the outcome"
        extra = [c for c in graph_ivs if c in chosen and c in keep]
        if extra:
            self.notes.append(f"DoWhy lists {extra} as graph instruments, but the data ties them to the outcome: kept")
        return keep

    def from_data_only(self, why: str, keep_identification: bool = False) -> None:
        """Without a usable graph: variables associated with both, minus every exclusion."""
        self.notes.append(
            f"{why}: the adjustment set is data-driven (associated with both treatment and outcome), minus "
            "excluded variables. Without a graph, mediators and colliders look like confounders in the data; "
            "only domain knowledge (temporal order, post_treatment) and the determinism check remove them"
        )
        if not keep_identification:
            self.identification = {
                "method": "data-driven (no graph)",
                "identified": False,
                "estimand": "conditional ignorability given the set (assumed, not identified from a graph)",
            }
        self.adjust = [c for c in self.associated if c not in self.excluded]
        for c in self.adjust:
            self.rationale[c] = (
                f"associated with the treatment (p={self.checks.p_treatment[c]:.2g}) and with the outcome given the "
                f"treatment (p={self.checks.p_outcome_given_t[c]:.2g})"
            )

    def finish(self, frame: pd.DataFrame) -> dict[str, Any]:
        """Data instruments check, the reason for every left-out candidate, the output dict."""
        self._data_instruments(frame)
        for c in self.candidates:
            if c not in self.adjust and c not in self.excluded:
                pt, py = self.checks.p_treatment.get(c, 1), self.checks.p_outcome_given_t.get(c, 1)
                self.excluded[c] = (
                    f"not associated with both treatment (p={pt:.2g}) and outcome given treatment (p={py:.2g})"
                )
        return {
            "treatment": self.t,
            "outcome": self.y,
            "adjustment_set": list(self.adjust),
            "rationale": dict(self.rationale),
            "excluded": {c: r for c, r in self.excluded.items() if c not in self.adjust},
            "mediators": sorted(self.roles["mediators"]),
            "colliders": sorted(self.roles["colliders"]),
            "descendants": sorted(self.roles["descendants"]),
            "derived_from_treatment": sorted(self.derived),
            "instruments": sorted(set(self.roles["instruments"])),
            "identification": self.identification,
            "data_associated": sorted(self.associated),
        }

    def _data_instruments(self, frame: pd.DataFrame) -> None:
        """Variables associated with the treatment but not the outcome given treatment and the set."""
        blocks = [b for c in self.adjust if (b := _block(frame[c])) is not None]
        controls = np.column_stack([frame[self.t].to_numpy(float), *blocks])
        yv = frame[self.y].to_numpy(float)
        skip = set(self.adjust) | set(self.roles["instruments"]) | set(self.roles["descendants"]) | set(self.derived)
        for c in self.candidates:
            if c in skip or c in self.k.post_treatment or self.checks.p_treatment.get(c, 1) >= self.params.alpha:
                continue
            block = _block(frame[c])
            if block is None:
                continue
            ok = ~(np.isnan(controls).any(axis=1) | np.isnan(block).any(axis=1) | np.isnan(yv))
            if ok.sum() < 30:
                continue
            if _f_pvalue(yv[ok], block[ok], controls[ok]) >= self.params.alpha:
                self.roles["instruments"].append(c)
                self.excluded.setdefault(
                    c, "possible instrument: drives the treatment, unrelated to the outcome given it and the set"
                )

    def reasoning(self) -> str:
        """Every decision in plain words."""
        lines = [f"Treatment {self.t!r}, outcome {self.y!r}. Identification: {self.identification['method']}."]
        lines += [f"Note: {n}." for n in self.notes]
        lines += [f"Adjust for {c}: {r}." for c, r in self.rationale.items()]
        lines += [f"Exclude {c}: {r}." for c, r in self.excluded.items() if c not in self.adjust]
        if self.associated:
            lines.append(
                f"Data cross-check: associated with both treatment and outcome: {', '.join(sorted(self.associated))}."
            )
        return "\n".join(lines)
