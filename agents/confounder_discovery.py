"""Confounder discovery: choose the adjustment set for the treatment-outcome pair.

Why: an effect estimate is only as good as what it adjusts for. The graph (through DoWhy's
backdoor identification) says which variables block the backdoor paths; the data cross-checks it
(variables associated with both treatment and outcome, categoricals as a joint block of dummies,
near-copies of the treatment, possible instruments); domain knowledge vetoes anything measured
after the treatment. Variables known to precede the treatment follow the disjunctive cause
criterion (adjust for any possible cause of treatment or outcome, except instrument-like ones).
Variables of unknown position pass a safety net (collider and descendant-of-treatment
signatures; uncertain orientations listed under ``doubtful``). Mediators, colliders,
descendants of the treatment and functions of it are never adjusted for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from agents.base.agent import Agent, AgentContext, AgentParams, AgentResult
from agents.base.data import read_table
from agents.base.errors import AgentError
from agents.base.state import CausalDAG, DataProfile, JobStatus
from agents.base.view import StateView
from agents.stats.adjustment_rules import (
    DataChecks,
    assoc_pvalue,
    data_checks,
    design,
    design_block,
    disjunctive_cause,
    known_pre_treatment,
    looks_like_id,
    screen_unknown,
)
from agents.stats.graphs import Knowledge, adjustment_valid, dowhy_graph, identify_backdoor

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["ConfounderDiscoveryAgent", "dowhy_graph"]  # dowhy_graph re-exported for callers


class ConfounderDiscoveryAgent(Agent):
    """Chooses the adjustment set from the DAG (DoWhy backdoor), the data and domain knowledge."""

    NAME = "confounder_discovery"
    DESCRIPTION = "Backdoor adjustment set with DoWhy, cross-checked against the data"
    REQUIRED_STATE_FIELDS = ("data_profile", "dataframe_path")
    OPTIONAL_STATE_FIELDS = ("proposed_dag", "domain_knowledge")
    WRITES_STATE_FIELDS = ("confounder_discovery",)
    JOB_STATUS = JobStatus.DISCOVERING_CAUSAL
    PRELOAD_MODULES = ("dowhy",)
    PROGRESS_WEIGHT = 1.0

    class Params(AgentParams):
        """Options: test level, determinism threshold, rows used by the data checks, and the
        bootstrap confidence below which an edge into the treatment counts as uncertain."""

        alpha: float = 0.05
        deterministic_r2: float = 0.99
        max_rows: int = 50000
        doubtful_below: float = 0.7

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
        declared = {
            view.design.instrument: "declared instrument (--instrument): the IV estimator uses it; never adjusted for",
            view.design.running_variable: "running variable of the declared discontinuity: the RDD estimator uses it",
            view.design.unit_column: "unit id of the declared panel",
            view.design.time_column: "time index of the declared panel",
        }
        for col, why in declared.items():
            if col in candidates:
                candidates.remove(col)
                excluded[col] = why
        checks = data_checks(frame, t, y, candidates)
        excluded.update(checks.unusable)
        usable = [c for c in candidates if c not in checks.unusable]
        pre = known_pre_treatment(view.domain_knowledge, knowledge.tiers, t, usable)
        result = _Builder(t, y, candidates, checks, knowledge, params, excluded, notes, pre)
        if dag is not None and t in dag.nodes and y in dag.nodes:
            result.from_graph(frame, dag)
        else:
            result.from_data_only(
                "no causal graph" if dag is None else "the graph does not contain the treatment and outcome"
            )
        result.safety_net(frame)  # first: the pre-treatment tests condition on what it keeps
        result.pre_treatment_rule(frame)
        out = result.finish(frame)
        if view.design.instrument and view.design.instrument not in out["instruments"]:
            out["instruments"] = sorted([*out["instruments"], view.design.instrument])
        n_adj = len(out["adjustment_set"])
        summary = (
            f"Adjust for {n_adj} variable(s) [{', '.join(out['adjustment_set'][:6])}{' ...' if n_adj > 6 else ''}]; "
            f"excluded {len(out['excluded'])}; identified={out['identification']['identified']}"
        )
        outputs = {
            k: out[k]
            for k in ("adjustment_set", "mediators", "colliders", "derived_from_treatment", "instruments", "doubtful")
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
            elif looks_like_id(s, n):
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
        pre: dict[str, str],
    ) -> None:
        self.t, self.y, self.candidates, self.checks, self.k, self.params = t, y, candidates, checks, k, params
        self.excluded = excluded
        self.notes = notes
        self.pre = pre
        self.doubtful: dict[str, str] = {}
        self.g: nx.DiGraph | None = None
        self.dag: CausalDAG | None = None
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
        self.g, self.dag = g, dag
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
        backdoor, estimand, graph_ivs = identify_backdoor(frame, g, self.t, self.y, latent)
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
            self.rationale[c] = f"{tag}; in DoWhy's backdoor set" + self._orientation_warning(c)
        self.adjust = chosen
        for c in self.associated:  # data cross-check: associated variables the graph does not hold
            if c not in g and c not in self.excluded:
                self.adjust.append(c)
                self.rationale[c] = (
                    "not in the graph; associated with both treatment and outcome in the data, so adjusted"
                )

    def _edge_doubt(self, c: str) -> tuple[str, float] | None:
        """Why the orientation of ``c``'s edge with the treatment is uncertain, with the edge's
        bootstrap confidence (0 when unoriented); None when it is not uncertain."""
        if self.dag is None:
            return "no graph and no temporal knowledge place it before the treatment", 0.0
        for e in self.dag.edges:
            if {e.source, e.target} == {c, self.t}:
                if e.edge_type != "directed":
                    return f"its edge with the treatment is {e.edge_type} (orientation unknown)", 0.0
                if e.confidence < self.params.doubtful_below:
                    why = f"its edge {e.source} -> {e.target} has this orientation in only {e.confidence:.0%} of bootstrap resamples"
                    return why, e.confidence
        return None

    def _orientation_warning(self, c: str) -> str:
        """A caveat for the rationale when the edge between ``c`` and the treatment is uncertain."""
        doubt = self._edge_doubt(c) if c not in self.pre else None
        return f" (caution: {doubt[0]})" if doubt else ""

    def pre_treatment_rule(self, frame: pd.DataFrame) -> None:
        """Disjunctive cause criterion for variables domain knowledge places before the treatment."""
        pre = [c for c in self.pre if c not in self.derived and c not in self.k.post_treatment]
        rest = [c for c in self.adjust if c not in self.pre]
        verdicts = disjunctive_cause(frame, self.t, self.y, pre, rest, self.checks, self.params.alpha)
        for c, v in verdicts.items():
            where = f"known pre-treatment ({self.pre[c]})"
            if c in self.roles["descendants"]:
                for key in ("mediators", "colliders", "descendants"):
                    self.roles[key] = [x for x in self.roles[key] if x != c]
                self.notes.append(f"the graph puts {c} after the treatment, but {where}: knowledge wins")
            if v.decision == "adjust":
                self.adjust += [] if c in self.adjust else [c]
                self.excluded.pop(c, None)
                self.rationale[c] = (
                    f"{where}, so neither a mediator nor a collider; disjunctive cause criterion (a possible cause "
                    f"of the treatment or the outcome): {v.reason}"
                )
                continue
            if c in self.adjust and not self._can_drop(c):
                self.rationale[c] = f"{where}; {v.reason}; kept: the graph needs it to block a backdoor path"
                continue
            self.adjust = [x for x in self.adjust if x != c]
            self.rationale.pop(c, None)
            if v.decision == "instrument":
                self.roles["instruments"].append(c)
                self.excluded[c] = (
                    f"{where} but {v.reason}; adjusting for a cause of the treatment only would add variance"
                )
            else:
                self.excluded[c] = f"{where}; {v.reason}"

    def _can_drop(self, c: str) -> bool:
        """Whether the graph's backdoor set stays valid without ``c`` (always, without a graph)."""
        if self.g is None or c not in self.g:
            return True
        return adjustment_valid(self.g, self.t, self.y, {x for x in self.adjust if x in self.g and x != c})

    def safety_net(self, frame: pd.DataFrame) -> None:
        """Variables whose position relative to the treatment is unknown (no temporal knowledge):
        drop bad-control signatures, restore likely causes, flag uncertain orientations
        (``adjustment_rules.screen_unknown`` says how)."""
        unknown = [c for c in self.adjust if c not in self.pre]
        graph_desc = [
            c
            for c in self.roles["descendants"]
            if c not in self.pre and c not in self.k.post_treatment and c not in self.derived
        ]
        doubt = {c: d for c in unknown + graph_desc if (d := self._edge_doubt(c))}
        skip = set(self.derived) | set(self.k.post_treatment)
        stable = {
            e.source
            for e in (self.dag.edges if self.dag else [])
            if e.target == self.t and e.edge_type == "directed" and e.confidence >= 0.999
        }
        res = screen_unknown(
            frame, self.t, self.y, unknown, graph_desc, self.checks, doubt, skip, stable, self.params.alpha
        )
        for c, (role, why) in res.drop.items():
            if not self._can_drop(c):
                self.notes.append(f"DoWhy's backdoor set needed {c}; the data signature overrides its orientation")
            self.adjust.remove(c)
            self.rationale.pop(c, None)
            self.roles[role].append(c)
            self.roles["descendants"].append(c)
            self.excluded[c] = f"data {why}"
        for c, why in res.add.items():
            self.adjust.append(c)
            self.excluded.pop(c, None)
            for key in ("mediators", "colliders", "descendants"):
                self.roles[key] = [x for x in self.roles[key] if x != c]
            self.rationale[c] = f"possible confounder: {why}"
        self.doubtful.update(res.doubtful)

    def _prune(self, g: nx.DiGraph, chosen: list[str], graph_ivs: list[str]) -> list[str]:
        """Drop variables the backdoor set does not need and the outcome does not depend on
        (possible instruments or noise), checking validity after each drop."""
        keep = list(chosen)
        alpha = self.params.alpha
        for c in sorted(chosen, key=lambda c: -self.checks.p_outcome_given_t.get(c, 0)):
            if self.checks.p_outcome_given_t.get(c, 0) < alpha:
                continue
            trial = set(keep) - {c}
            if not adjustment_valid(g, self.t, self.y, trial):
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
            "domain knowledge (temporal order, post_treatment), the determinism check and the data signatures of "
            "the safety net remove them"
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
            "doubtful": dict(self.doubtful),
        }

    def _data_instruments(self, frame: pd.DataFrame) -> None:
        """Variables associated with the treatment but not the outcome given treatment and the set."""
        controls = np.column_stack([frame[self.t].to_numpy(float), design(frame, self.adjust)])
        yv = frame[self.y].to_numpy(float)
        skip = set(self.adjust) | set(self.roles["instruments"]) | set(self.roles["descendants"]) | set(self.derived)
        skip |= set(self.pre) | set(self.roles["mediators"]) | set(self.roles["colliders"])
        for c in self.candidates:
            if c in skip or c in self.k.post_treatment or self.checks.p_treatment.get(c, 1) >= self.params.alpha:
                continue
            block = design_block(frame[c])
            if block is None:
                continue
            ok = ~(np.isnan(controls).any(axis=1) | np.isnan(block).any(axis=1) | np.isnan(yv))
            if ok.sum() < 30:
                continue
            if assoc_pvalue(yv[ok], block[ok], controls[ok]) >= self.params.alpha:
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
        lines += [f"Doubtful {c}: {r}." for c, r in self.doubtful.items()]
        if self.associated:
            lines.append(
                f"Data cross-check: associated with both treatment and outcome: {', '.join(sorted(self.associated))}."
            )
        return "\n".join(lines)
