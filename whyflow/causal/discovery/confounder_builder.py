"""The adjustment set of one pair, decision by decision: the confounder discovery agent's options and builder.

:class:`AdjustmentBuilder` starts from every candidate that may precede the treatment and records, for
each, why it is adjusted for, excluded or doubtful: the graph's classification (with its bootstrap
support), domain knowledge on timing, the data's signatures and the with/without estimates of the
doubtful ones. The policy is described in :mod:`whyflow.causal.discovery.confounder_discovery`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from pydantic import Field

from whyflow.causal.discovery.adjustment_policy import strong_descendants, with_without
from whyflow.causal.discovery.adjustment_rules import (
    DataChecks,
    assoc_pvalue,
    design,
    design_block,
    disjunctive_cause,
    screen_unknown,
)
from whyflow.causal.discovery.graphs import Knowledge, dowhy_graph, identify_backdoor
from whyflow.causal.review.doubts import AGAINST_THE_GRAPH
from whyflow.causal.state import CausalDAG
from whyflow.core.agent import AgentParams

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["AdjustmentBuilder", "ConfounderDiscoveryParams", "MOST_RESAMPLES"]

MOST_RESAMPLES = 0.5
"""Support of the best directed path from the treatment above which a descendant that is kept (its support
short of ``strong_support``) is worded as evidence that it comes after the treatment: most resamples say so, and
the review does not approve an answer that moves with it. At or below it the orientation is the stated assumption."""


class ConfounderDiscoveryParams(AgentParams):
    """Options: test level, determinism threshold, rows used by the data checks, the bootstrap
    confidence below which an edge into the treatment counts as uncertain, the support every
    edge of a path from the treatment needs before the graph alone can exclude a variable,
    whether instrument-like variables are left out (off: they are kept and flagged), and how
    many doubtful variables get a with/without estimate."""

    alpha: float = Field(0.05, gt=0, lt=1, description="significance level of the data checks")
    deterministic_r2: float = Field(
        0.99, ge=0, le=1, description="R² from the treatment above which a variable counts as derived from it"
    )
    max_rows: int = Field(50000, ge=1, description="rows used by the data checks (a seeded sample above this)")
    doubtful_below: float = Field(
        0.7, ge=0, le=1, description="bootstrap confidence below which an edge into the treatment is uncertain"
    )
    strong_support: float = Field(
        0.95, ge=0, le=1, description="support every edge of a path from the treatment needs to exclude a variable"
    )
    drop_instruments: bool = Field(False, description="leave instrument-like variables out (off: kept and flagged)")
    max_sensitivity: int = Field(12, ge=0, description="doubtful variables that get a with/without estimate")


class AdjustmentBuilder:
    """Collects the decisions for one pair: graph classification, data flags, exclusions."""

    def __init__(
        self,
        t: str,
        y: str,
        candidates: list[str],
        checks: DataChecks,
        k: Knowledge,
        params: ConfounderDiscoveryParams,
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
        self.instrument_like: list[str] = []
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
            if c not in self.excluded and c in self.k.post_treatment:
                self.excluded[c] = "domain knowledge says it is measured after the treatment (post-treatment)"

    def _default_set(self) -> None:
        """Every candidate without an exclusion: a covariate that may precede the treatment is kept."""
        self.adjust = [c for c in self.candidates if c not in self.excluded]

    def _assoc(self, c: str) -> str:
        pt, py = self.checks.p_treatment.get(c, 1.0), self.checks.p_outcome_given_t.get(c, 1.0)
        return f"treatment p={pt:.2g}, outcome given the treatment p={py:.2g}"

    def from_graph(self, frame: pd.DataFrame, dag: CausalDAG) -> None:
        """Exclude graph descendants of the treatment only on strongly supported edges; report
        DoWhy's backdoor identification; keep every other candidate."""
        import networkx as nx

        g, latent, orient_notes = dowhy_graph(dag, self.t, self.y, self.k)
        self.g, self.dag = g, dag
        self.notes += orient_notes
        support = self.params.strong_support
        strong = strong_descendants(dag.edges, [self.t], support)
        after_y = strong_descendants(dag.edges, [self.y], support)
        desc, anc_y, desc_y = nx.descendants(g, self.t), nx.ancestors(g, self.y), nx.descendants(g, self.y)
        for c in sorted((desc | after_y) & set(self.candidates)):
            if c in self.excluded:
                continue
            if c in desc and c in anc_y:
                role, why = "mediators", "a mediator: on a directed path from the treatment to the outcome"
            elif c in desc_y or c in after_y:
                role, why = "colliders", "a collider or later measurement: caused by the outcome"
            else:
                role, why = "descendants", "a descendant of the treatment in the graph"
            if c in strong or c in after_y:
                src = "outcome" if c in after_y and c not in strong else "treatment"
                if role != "descendants":
                    self.roles[role].append(c)
                self.roles["descendants"].append(c)
                self.excluded[c] = f"{why} (every edge from the {src} to it has ≥{support:.0%} bootstrap support)"
            elif (level := self._path_level(dag, c)) is not None and level > MOST_RESAMPLES:
                self.doubtful[c] = (
                    f"kept, but the graph makes it {why} and its best directed path from the treatment has an edge "
                    f"in {level:.0%} of bootstrap resamples (below the {support:.0%} needed to leave it out), which "
                    "suggests it is measured after the treatment. If it is, re-estimate without it"
                )
            else:
                lead = AGAINST_THE_GRAPH if level is not None else "kept"
                self.doubtful[c] = (
                    f"{lead}: the graph makes it {why}, but {self._path_support(dag, c)}; a weak orientation is "
                    "not evidence that the treatment causes it. If it does, re-estimate without it"
                )
        self.used_dowhy = True
        self._default_set()
        backdoor, estimand, _ = identify_backdoor(frame, g, self.t, self.y, latent)
        self.identification = {
            "method": "dowhy backdoor (maximal-adjustment)",
            "identified": backdoor is not None,
            "estimand": estimand,
        }
        bd = set(backdoor or [])
        if backdoor is None:
            self.notes.append(f"DoWhy found no valid backdoor set ({estimand}); every possible confounder is kept")
        for c in self.adjust:
            if c in bd:
                tag = "in DoWhy's backdoor set"
            elif c not in g:
                tag = "not in the graph (discovery did not use it)"
            else:
                tag = "not required by the graph, kept because nothing shows the treatment causes it"
            self.rationale[c] = f"possible confounder ({self._assoc(c)}); {tag}" + self._orientation_warning(c)

    def _path_level(self, dag: CausalDAG, c: str) -> float | None:
        """The best bootstrap support of a directed path to ``c`` (its weakest edge); None without one."""
        levels = sorted({e.confidence for e in dag.edges if e.edge_type == "directed"}, reverse=True)
        return next((lv for lv in levels if c in strong_descendants(dag.edges, [self.t, self.y], lv)), None)

    def _path_support(self, dag: CausalDAG, c: str) -> str:
        """The best bootstrap support of a directed path to ``c``, in words."""
        level = self._path_level(dag, c)
        if level is not None:
            return f"its best directed path from the treatment has an edge in only {level:.0%} of bootstrap resamples"
        return "no directed path from the treatment reaches it (the orientation came from an undirected edge)"

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

    def from_data_only(self, why: str) -> None:
        """Without a usable graph: every candidate without an exclusion is adjusted for."""
        self.notes.append(
            f"{why}: every covariate that may precede the treatment is adjusted for, minus excluded variables. "
            "Without a graph, mediators and colliders look like confounders in the data; domain knowledge "
            "(temporal order, post_treatment), the determinism checks and the data signatures (flags under "
            "'doubtful', with a with/without estimate) are what can tell them apart"
        )
        self.identification = {
            "method": "data-driven (no graph)",
            "identified": False,
            "estimand": "conditional ignorability given the set (assumed, not identified from a graph)",
        }
        self._default_set()
        for c in self.adjust:
            self.rationale[c] = f"possible confounder ({self._assoc(c)}); nothing shows it is post-treatment"

    def pre_treatment_rule(self, frame: pd.DataFrame) -> None:
        """Variables domain knowledge places before the treatment are never mediators or colliders:
        adjusted (the disjunctive cause criterion's verdict is recorded; instrument-like ones are
        flagged, or left out when ``drop_instruments`` is set)."""
        pre = [c for c in self.pre if c not in self.derived and c not in self.k.post_treatment and c in self.candidates]
        rest = [c for c in self.adjust if c not in self.pre]
        verdicts = disjunctive_cause(frame, self.t, self.y, pre, rest, self.checks, self.params.alpha)
        for c, v in verdicts.items():
            where = f"known pre-treatment ({self.pre[c]})"
            if c in self.roles["descendants"]:
                for key in ("mediators", "colliders", "descendants"):
                    self.roles[key] = [x for x in self.roles[key] if x != c]
                self.notes.append(f"the graph puts {c} after the treatment, but {where}: knowledge wins")
            self.doubtful.pop(c, None)
            self.excluded.pop(c, None)
            if v.decision == "instrument":
                self._instrument(c, f"{where}, but {v.reason}")
                continue
            self.adjust += [] if c in self.adjust else [c]
            if v.decision == "adjust":
                self.rationale[c] = (
                    f"{where}, so neither a mediator nor a collider; disjunctive cause criterion (a possible cause "
                    f"of the treatment or the outcome): {v.reason}"
                )
            else:
                self.rationale[c] = (
                    f"{where}, so adjusting is safe; {v.reason} (no association found, which does not show "
                    "there is none)"
                )

    def _instrument(self, c: str, why: str) -> None:
        """An instrument-like variable: flagged and kept, or left out with ``drop_instruments``."""
        self.instrument_like.append(c)
        if self.params.drop_instruments:
            self.adjust = [x for x in self.adjust if x != c]
            self.rationale.pop(c, None)
            self.roles["instruments"].append(c)
            self.excluded[c] = f"{why}; left out (drop_instruments): a cause of the treatment only adds variance"
            return
        self.adjust += [] if c in self.adjust else [c]
        self.rationale[c] = (
            f"{why}; kept (adjusting for a pure instrument costs precision, dropping a confounder costs bias)"
        )
        self.doubtful[c] = (
            f"instrument-like ({why}); kept, since no test shows it is unrelated to the outcome: re-estimate without it "
            "to compare (the option drop_instruments leaves such variables out)"
        )

    def safety_net(self, frame: pd.DataFrame) -> None:
        """Data signatures for variables of unknown position: a powered collider signature drops
        (positive evidence: the treatment and the outcome each predict it); the descendant
        signature and uncertain orientations are flags only."""
        unknown = [c for c in self.adjust if c not in self.pre]
        doubt = {c: d for c in unknown if (d := self._edge_doubt(c))}
        skip = set(self.derived) | set(self.k.post_treatment) | set(self.roles["descendants"]) | set(self.excluded)
        drops, flags = screen_unknown(frame, self.t, self.y, unknown, self.checks, doubt, skip, self.params.alpha)
        for c, why in drops.items():
            self.adjust.remove(c)
            self.rationale.pop(c, None)
            self.roles["colliders"].append(c)
            self.roles["descendants"].append(c)
            self.excluded[c] = f"data {why}"
        for c, why in flags.items():
            self.doubtful[c] = why if c in drops else self.doubtful.get(c, why)

    def _data_instruments(self, frame: pd.DataFrame) -> None:
        """Adjusted variables of unknown position associated with the treatment but not with the
        outcome given the treatment and the rest of the set: instrument-like (flag, or drop on request)."""
        yv = frame[self.y].to_numpy(float)
        for c in [x for x in self.adjust if x not in self.pre]:
            if self.checks.p_treatment.get(c, 1) >= self.params.alpha:
                continue
            block = design_block(frame[c])
            if block is None:
                continue
            controls = np.column_stack(
                [frame[self.t].to_numpy(float), design(frame, [x for x in self.adjust if x != c])]
            )
            ok = ~(np.isnan(controls).any(axis=1) | np.isnan(block).any(axis=1) | np.isnan(yv))
            if ok.sum() < 30:
                continue
            p = assoc_pvalue(yv[ok], block[ok], controls[ok])
            if p >= self.params.alpha:
                self._instrument(
                    c,
                    f"associated with the treatment (p={self.checks.p_treatment[c]:.2g}) but not detectably with the "
                    f"outcome given the treatment and the rest of the set (p={p:.2g})",
                )

    def _sensitivity(self, frame: pd.DataFrame) -> dict[str, dict[str, float]]:
        """OLS effect with and without each doubtful variable (kept or excluded), largest first."""
        out: dict[str, dict[str, float]] = {}
        for c in list(self.doubtful)[: self.params.max_sensitivity]:
            if c not in frame.columns:
                continue
            base = [x for x in self.adjust if x != c]
            try:
                res = with_without(frame, self.t, self.y, base, c)
            except (ValueError, np.linalg.LinAlgError):
                res = None
            if res is None:
                continue
            out[c] = res
            state = "kept" if c in self.adjust else "left out"
            self.doubtful[c] += (
                f" [OLS effect with it {res['with']:.4g} (SE {res['se_with']:.2g}), without it {res['without']:.4g} "
                f"(SE {res['se_without']:.2g}); {state}]"
            )
        return out

    def finish(self, frame: pd.DataFrame) -> dict[str, Any]:
        """Instrument flags, with/without estimates for doubtful variables, the output dict."""
        self._data_instruments(frame)
        for c in self.candidates:
            if c not in self.adjust and c not in self.excluded:
                self.excluded[c] = f"left out ({self._assoc(c)})"
        sensitivity = self._sensitivity(frame)
        return {
            "treatment": self.t,
            "outcome": self.y,
            "adjustment_set": list(self.adjust),
            "rationale": {c: self.rationale.get(c, "possible confounder") for c in self.adjust},
            "excluded": {c: r for c, r in self.excluded.items() if c not in self.adjust},
            "mediators": sorted(self.roles["mediators"]),
            "colliders": sorted(self.roles["colliders"]),
            "descendants": sorted(self.roles["descendants"]),
            "derived_from_treatment": sorted(self.derived),
            "instruments": sorted(set(self.roles["instruments"])),
            "instrument_like": sorted(set(self.instrument_like)),
            "identification": self.identification,
            "data_associated": sorted(self.associated),
            "doubtful": dict(self.doubtful),
            "doubtful_sensitivity": sensitivity,
            "policy": (
                "conservative: covariates are left out only on positive evidence (knowledge, strongly supported "
                f"graph edges, functions of the treatment, parts of the outcome); drop_instruments={self.params.drop_instruments}"
            ),
        }

    def reasoning(self) -> str:
        """Every decision in plain words."""
        lines = [f"Treatment {self.t!r}, outcome {self.y!r}. Identification: {self.identification['method']}."]
        lines += [f"Note: {n}." for n in self.notes]
        lines += [f"Adjust for {c}: {r}." for c, r in self.rationale.items() if c in self.adjust]
        lines += [f"Exclude {c}: {r}." for c, r in self.excluded.items() if c not in self.adjust]
        lines += [f"Doubtful {c}: {r}." for c, r in self.doubtful.items()]
        if self.associated:
            lines.append(
                f"Data cross-check: associated with both treatment and outcome: {', '.join(sorted(self.associated))}."
            )
        return "\n".join(lines)
