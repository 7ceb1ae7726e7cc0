"""Confounder discovery: choose the adjustment set for the treatment-outcome pair.

Why: an effect estimate is only as good as what it adjusts for, and leaving out a true confounder
is the error no later step can repair. So the policy is conservative: every covariate that may
precede the treatment is adjusted for, and one is left out only on positive evidence that it does
not: domain knowledge (temporal order, ``post_treatment``, a declared role or design column), a
directed path from the treatment (or the outcome) in the causal graph whose every edge has strong
bootstrap support, a (near-)deterministic function of the treatment, or a part or copy of the
outcome (``adjustment_policy.outcome_parts``). Data-only tests (association, "instrument-like",
collider and descendant-of-treatment signatures, weakly supported orientations) never drop a
variable: they list it under ``doubtful`` with the reason and an OLS estimate with and without it.
A test that fails to reject is not evidence of independence, and a marginal linear test cannot see
a confounder acting through x3·x4 or x2². Leaving instrument-like variables out is an explicit
option (``drop_instruments``), off by default. DoWhy's backdoor identification on the graph is
still run and reported.
"""

from __future__ import annotations

import pandas as pd

from whyflow.causal.dataprep.column_roles import (
    ColumnRole,
    classify_columns,
    left_out_summary,
    left_out_table,
    outcome_proxies,
)
from whyflow.causal.dataprep.frame_checks import at_most_distinct
from whyflow.causal.diagnostics import ConfounderDiscovery
from whyflow.causal.discovery.adjustment_policy import as_read, onehot_reference, outcome_parts
from whyflow.causal.discovery.adjustment_rules import (
    data_checks,
    known_pre_treatment,
    looks_like_id,
)
from whyflow.causal.discovery.confounder_builder import AdjustmentBuilder, ConfounderDiscoveryParams
from whyflow.causal.discovery.graphs import Knowledge
from whyflow.causal.discovery.iv_controls import iv_treatment_copies
from whyflow.causal.discovery.randomised_move import MoveCheck, randomised_move, says_randomised
from whyflow.causal.discovery.stated_controls import keep_stated, stated_summary, with_indicators
from whyflow.causal.knowledge import DomainKnowledge
from whyflow.causal.review.complete_case import complete_case_check
from whyflow.causal.state import AnalysisState, CausalDAG, DataProfile
from whyflow.causal.view import AnalysisView
from whyflow.core.agent import Agent, AgentContext, AgentResult
from whyflow.core.errors import AgentError
from whyflow.core.status import JobStatus
from whyflow.core.view import required
from whyflow.runtime.data import read_table

__all__ = ["ConfounderDiscoveryAgent", "ConfounderDiscoveryParams"]


OUTPUT_KEYS: tuple[str, ...] = ("adjustment_set", "mediators", "colliders", "derived_from_treatment", "instruments")
OUTPUT_KEYS += ("doubtful", "column_roles", "recipe_adjustment_set")


class ConfounderDiscoveryAgent(Agent[ConfounderDiscoveryParams]):
    """Chooses the adjustment set from the DAG (DoWhy backdoor), the data and domain knowledge."""

    STATE_MODEL = AnalysisState
    NAME = "confounder_discovery"
    DESCRIPTION = "Backdoor adjustment set with DoWhy, cross-checked against the data"
    REQUIRED_STATE_FIELDS = ("data_profile", "dataframe_path")
    OPTIONAL_STATE_FIELDS = ("proposed_dag", "domain_knowledge")
    WRITES_STATE_FIELDS = ("confounder_discovery",)
    JOB_STATUS = JobStatus.DISCOVERING_CAUSAL
    PRELOAD_MODULES = ("dowhy",)
    PROGRESS_WEIGHT = 1.0

    Params = ConfounderDiscoveryParams

    def run(self, view: AnalysisView, params: ConfounderDiscoveryParams, ctx: AgentContext) -> AgentResult:
        """Combine graph, data and knowledge into the adjustment set with a reason per variable."""
        profile: DataProfile = required(view.data_profile, "data_profile")
        dag: CausalDAG | None = view.proposed_dag
        pair = view.pair("find confounders for")
        t, y, notes = pair.treatment, pair.outcome, [pair.note] if pair.note else []
        frame = read_table(required(view.dataframe_path, "dataframe_path"))
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
        instrument = "declared instrument (--instrument): the IV estimator uses it; never adjusted for"
        declared: dict[str | None, str] = {
            view.design.instrument: instrument,
            view.design.running_variable: "running variable of the declared discontinuity: the RDD estimator uses it",
            view.design.unit_column: "unit id of the declared panel",
            view.design.time_column: "time index of the declared panel",
        }
        declared.update(dict.fromkeys(view.design.extra_instruments, instrument))
        for column, why in declared.items():
            if column is not None and column in candidates:
                candidates.remove(column)
                excluded[column] = why
        roles = self._column_roles(frame, t, y, candidates, excluded, view, knowledge, params, ctx.seed)
        checks = data_checks(frame, t, y, candidates)
        excluded.update(checks.unusable)
        usable = [c for c in candidates if c not in checks.unusable]
        pre = known_pre_treatment(view.domain_knowledge, knowledge.tiers, t, usable, y)
        flags = self._structural_exclusions(frame, y, usable, pre, excluded)
        usable = [c for c in usable if c not in excluded]
        result = AdjustmentBuilder(t, y, usable, checks, knowledge, params, excluded, notes, pre)
        result.doubtful.update(flags)
        result.doubtful.update({r.column: r.reason for r in roles if not r.leave_out and r.column in usable})
        if dag is not None and t in dag.nodes and y in dag.nodes:
            result.from_graph(frame, dag)
        else:
            result.from_data_only(
                "no causal graph" if dag is None else "the graph does not contain the treatment and outcome"
            )
        result.safety_net(frame)
        result.pre_treatment_rule(frame)
        move = self._randomised_move(frame, result, view, ctx.seed)
        roles += list(move.carriers)
        out = result.finish(frame)
        out["column_roles"] = left_out_table(out["excluded"], roles)
        copies = [r.column for r in roles if r.leave_out and r.role.startswith("treatment_")]
        out["derived_from_treatment"] = sorted({*out["derived_from_treatment"], *copies})
        out["randomisation_check"] = move.as_dict()
        if view.design.controls is not None:
            keep_stated(out, with_indicators(view.design.controls, frame.columns))
        out["complete_case"] = complete_case_check(frame, t, y, out["adjustment_set"])
        if view.design.instrument and view.design.instrument not in out["instruments"]:
            out["instruments"] = sorted([*out["instruments"], view.design.instrument])
        n_adj = len(out["adjustment_set"])
        summary = (
            f"Adjust for {n_adj} variable(s) [{', '.join(out['adjustment_set'][:6])}{' ...' if n_adj > 6 else ''}]; "
            f"excluded {len(out['excluded'])}; doubtful {len(out['doubtful'])}; "
            f"identified={out['identification']['identified']}"
        )
        summary += left_out_summary(out["column_roles"])
        summary += stated_summary(out)
        outputs = {k: out[k] for k in OUTPUT_KEYS if k in out}
        return AgentResult(
            updates={"confounder_discovery": ConfounderDiscovery.model_validate(out)},
            summary=summary,
            reasoning=result.reasoning(),
            outputs=outputs,
            tools_called=["dowhy.identify_effect"] if result.used_dowhy else [],
        )

    @staticmethod
    def _column_roles(
        frame: pd.DataFrame,
        t: str,
        y: str,
        candidates: list[str],
        excluded: dict[str, str],
        view: AnalysisView,
        knowledge: Knowledge,
        params: ConfounderDiscoveryParams,
        seed: int,
    ) -> list[ColumnRole]:
        """Identifiers, functions of the outcome or the treatment and post-treatment names leave
        ``candidates`` for ``excluded`` before any test (columns known to precede the treatment
        are never classified); returns every role found, kept-with-a-flag ones included."""
        pre = known_pre_treatment(view.domain_knowledge, knowledge.tiers, t, candidates, y)
        z, alpha = view.design.instrument, params.alpha
        roles = classify_columns(frame, t, y, candidates, protected=set(pre), instrument=z, alpha=alpha, seed=seed)
        rest = [c for c in candidates if c not in pre and c not in {r.column for r in roles}]
        if z and z in frame.columns:
            roles += iv_treatment_copies(frame, t, z, rest)
            rest = [c for c in rest if c not in {r.column for r in roles}]
        path = view.dataset_info.local_path if view.dataset_info is not None else None
        raw = as_read(path, frame, [y, *rest])
        roles += outcome_proxies(raw, y, [c for c in rest if c in raw.columns])
        for r in roles:
            if r.leave_out:
                candidates.remove(r.column)
                excluded[r.column] = r.reason
        return roles

    @staticmethod
    def _randomised_move(frame: pd.DataFrame, result: AdjustmentBuilder, view: AnalysisView, seed: int) -> MoveCheck:
        """Where the treatment looks randomised (and no design was declared), adjusted columns that
        move the estimate far beyond chance are left out as post-treatment."""
        d = view.design
        if d.instrument or d.running_variable or d.unit_column or d.time_column:
            return MoveCheck(False, "a design was declared")
        stated, pre, adj = says_randomised(view.domain_knowledge), set(result.pre), list(result.adjust)
        move = randomised_move(frame, result.t, result.y, adj, stated_randomised=stated, protected=pre, seed=seed)
        for r in move.carriers:
            result.adjust.remove(r.column)
            result.rationale.pop(r.column, None)
            result.doubtful.pop(r.column, None)
            result.excluded[r.column] = r.reason
        if move.applies and not move.resolved:
            result.notes.append(move.unresolved_note())
        return move

    @staticmethod
    def _structural_exclusions(
        frame: pd.DataFrame, y: str, usable: list[str], pre: dict[str, str], excluded: dict[str, str]
    ) -> dict[str, str]:
        """Parts/copies of the outcome and one reference dummy per complete one-hot group go to
        ``excluded``; returns flags for the columns kept with a caveat (a change score's baseline)."""
        parts = outcome_parts(frame, y, usable, set(pre))
        excluded.update(parts.drop)
        rest = [c for c in usable if c not in parts.drop]
        for ref, group in onehot_reference(frame, rest).items():
            excluded[ref] = (
                f"reference level of the one-hot group {group} (the dummies sum to 1 in every row): the other "
                "dummies carry the same information, and all of them together are collinear with the intercept"
            )
        return dict(parts.keep_flagged)

    @staticmethod
    def _candidates(
        frame: pd.DataFrame, profile: DataProfile, t: str, y: str, domain: DomainKnowledge | None
    ) -> tuple[list[str], dict[str, str]]:
        roles = domain.roles if domain else {}
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
            elif roles.get(c) in ("mediator", "collider"):
                excluded[c] = f"domain knowledge gives it the role '{roles[c]}'"
            elif looks_like_id(s, n):
                excluded[c] = "identifier-like (a distinct value per row)"
            elif at_most_distinct(s, 1):
                excluded[c] = "constant column: nothing to adjust for"
            else:
                candidates.append(c)
        return candidates, excluded
