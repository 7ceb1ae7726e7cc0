"""Domain knowledge: what the user's metadata and simple column-name cues say about the data.

No LLM: the knowledge comes from the metadata file (its column names checked against the data's),
the dataset's catalogue fields and conservative heuristics (identifier, time and
post-treatment columns). Every entry records where it came from in ``notes``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from whyflow.causal.dataprep.column_names import keyword_tokens
from whyflow.causal.knowledge import ColumnMetadata, DomainKnowledge, Metadata
from whyflow.causal.prompts import annotated, domain_knowledge_mode
from whyflow.causal.state import AnalysisState
from whyflow.causal.view import AnalysisView
from whyflow.core.agent import Agent, AgentContext, AgentParams, AgentResult
from whyflow.core.errors import AgentError, DataError
from whyflow.core.status import JobStatus
from whyflow.runtime.data import read_table, suggest

__all__ = ["DomainKnowledgeAgent", "DomainKnowledgeParams", "metadata_columns"]

_PRE = {"pre", "before", "baseline", "pre-treatment", "pretreatment"}
_POST = {"post", "after", "followup", "follow-up", "post-treatment", "posttreatment"}
_POST_CUES = {"post", "after", "followup", "posttreatment"}


def _text_or_none(value: Any) -> str | None:
    """A number the metadata gives as a field of study (``domain: 1990``) kept as its text."""
    return None if value is None else str(value)


def metadata_columns(meta: Metadata) -> list[tuple[str, str]]:
    """Every column name the metadata mentions, with where it is mentioned."""
    found: list[tuple[str, str]] = []
    found += [(str(c), "columns") for c in meta.columns or {}]
    found += [(str(c), "roles") for c in meta.roles or {}]
    found += [(str(v), k) for k, v in (("treatment", meta.treatment), ("outcome", meta.outcome)) if v]
    for i, tier in enumerate(meta.temporal_order or []):
        tier = tier if isinstance(tier, list) else [tier]
        found += [(str(c), f"temporal_order tier {i + 1}") for c in tier]
    for key, edges in (("forbidden_edges", meta.forbidden_edges), ("required_edges", meta.required_edges)):
        for edge in edges or []:
            found += [(str(c), key) for c in edge]
    return found


class DomainKnowledgeParams(AgentParams):
    """Options of the domain-knowledge step."""

    name_heuristics: bool = Field(
        True, description="use column-name cues (*_after, post_*, followup) for post-treatment columns"
    )
    llm: Literal["off", "suggest", "apply"] = Field(
        "suggest", description="with a model: record its role suggestions (suggest) or fill unlabelled columns (apply)"
    )


class DomainKnowledgeAgent(Agent[DomainKnowledgeParams]):
    """Turns the user's metadata and catalogue fields into the shared :class:`DomainKnowledge`."""

    STATE_MODEL = AnalysisState
    NAME = "domain_knowledge"
    DESCRIPTION = "Column meanings, roles, temporal order and forbidden edges from metadata and name cues."
    REQUIRED_STATE_FIELDS = ("dataset_info",)
    OPTIONAL_STATE_FIELDS = ("raw_metadata", "data_profile")
    WRITES_STATE_FIELDS = ("domain_knowledge",)
    JOB_STATUS = JobStatus.PROFILING
    PROGRESS_WEIGHT = 0.5

    Params = DomainKnowledgeParams

    def run(self, view: AnalysisView, params: DomainKnowledgeParams, ctx: AgentContext) -> AgentResult:
        """Validate the metadata and build the domain knowledge."""
        meta = view.raw_metadata or Metadata()
        has_meta = meta.given()
        profile = view.data_profile
        columns, types = self._columns(view, profile)
        notes: list[str] = []
        mentioned = metadata_columns(meta)
        if columns is not None:
            self._validate(mentioned, columns)
        elif has_meta:
            notes.append("column names in the metadata could not be checked: no profile and no readable data")
        knowledge, pre, stated_post = self._from_metadata(meta, has_meta, notes)
        used_heuristics = self._heuristics(
            knowledge, pre, stated_post, view, columns or [], types, params.name_heuristics, notes
        )
        llm_changed: list[str] = []
        if ctx.llm is not None and params.llm != "off":
            t, y = view.treatment_variable, view.outcome_variable
            llm_changed = domain_knowledge_mode(ctx.llm, params.llm, knowledge, columns or [], t, y, notes)
        source = "metadata+heuristic" if has_meta and used_heuristics else ("metadata" if has_meta else "heuristic")
        knowledge.source = source
        knowledge.notes = notes
        summary = (
            f"domain knowledge from {source}: {len(knowledge.roles)} roles, "
            f"{len(knowledge.temporal_order)} time tiers, {len(knowledge.post_treatment)} post-treatment, "
            f"{len(knowledge.forbidden_edges)} forbidden edges"
        )
        return annotated(
            ctx.llm,
            AgentResult(
                updates={"domain_knowledge": knowledge},
                summary=summary,
                reasoning="\n".join(notes) or "no metadata and no column-name cues",
                outputs={"source": source, "roles": knowledge.roles, "post_treatment": knowledge.post_treatment},
            ),
            llm_changed,
        )

    @staticmethod
    def _columns(view: AnalysisView, profile: Any) -> tuple[list[str] | None, dict[str, str]]:
        if profile is not None:
            return list(profile.feature_names), dict(profile.feature_types)
        path = view.dataset_info.local_path
        if not path:
            return None, {}
        try:
            return [str(c) for c in read_table(path).columns], {}
        except DataError:
            return None, {}

    @staticmethod
    def _validate(mentioned: list[tuple[str, str]], columns: list[str]) -> None:
        """Raise one AgentError naming every metadata column that is not in the data."""
        known = set(columns)
        bad: dict[str, list[str]] = {}
        for col, where in mentioned:
            if col not in known:
                bad.setdefault(col, []).append(where)
        if bad:
            parts = [f"'{c}' (in {', '.join(dict.fromkeys(w))}){suggest(c, columns)}" for c, w in bad.items()]
            raise AgentError("the metadata names columns that are not in the data: " + "; ".join(parts))

    @staticmethod
    def _from_metadata(
        meta: Metadata, has_meta: bool, notes: list[str]
    ) -> tuple[DomainKnowledge, list[str], list[str]]:
        """The knowledge the metadata states, and the columns flagged measured pre and post."""
        descriptions: dict[str, str] = {}
        units: dict[str, str] = {}
        roles: dict[str, str] = {str(c): str(r).lower() for c, r in (meta.roles or {}).items()}
        post: list[str] = []
        pre: list[str] = []
        for col, given in (meta.columns or {}).items():
            # A bare text is the description (a bare null too, as the text "None").
            spec = given if isinstance(given, ColumnMetadata) else ColumnMetadata(description=str(given))
            if spec.description:
                descriptions[str(col)] = str(spec.description)
            if spec.unit:
                units[str(col)] = str(spec.unit)
            if spec.role:
                roles[str(col)] = str(spec.role).lower()
            measured = str(spec.measured if "measured" in spec.model_fields_set else "").lower()
            if measured in _POST:
                post.append(str(col))
            elif measured in _PRE:
                pre.append(str(col))
        for key, column in (("treatment", meta.treatment), ("outcome", meta.outcome)):
            if column:
                roles[str(column)] = key
        post += [c for c, r in roles.items() if r in ("mediator", "post_treatment") and c not in post]
        if has_meta:
            notes.append(
                f"metadata: {len(descriptions)} column descriptions, {len(roles)} roles, "
                f"{len(pre)} measured before and {len(post)} after treatment"
            )
        tags = [str(t) for t in (meta.tags or [])]
        knowledge = DomainKnowledge(
            source="",
            description=str(meta.description or ""),
            domain=_text_or_none(meta.domain),
            tags=list(dict.fromkeys(tags)),
            column_descriptions=descriptions,
            units=units,
            roles=roles,
            temporal_order=[[str(c) for c in (t if isinstance(t, list) else [t])] for t in meta.temporal_order or []],
            post_treatment=post,
            pre_treatment=list(pre),
            forbidden_edges=[[str(a), str(b)] for a, b in meta.forbidden_edges or []],
            required_edges=[[str(a), str(b)] for a, b in meta.required_edges or []],
            notes=[str(n) for n in meta.notes or []],
        )
        return knowledge, pre, list(post)

    @staticmethod
    def _heuristics(
        kn: DomainKnowledge,
        pre: list[str],
        stated_post: list[str],
        view: AnalysisView,
        columns: list[str],
        types: dict[str, str],
        cues: bool,
        notes: list[str],
    ) -> bool:
        """Add id/time/treatment/outcome roles, post-treatment name cues and the edges they imply."""
        used = False
        notes[:0] = kn.notes
        kn.notes = []
        roles = kn.roles
        profile = view.data_profile
        treatment = view.treatment_variable or next((c for c, r in roles.items() if r == "treatment"), None)
        outcome = view.outcome_variable or next((c for c, r in roles.items() if r == "outcome"), None)
        for col, role in ((treatment, "treatment"), (outcome, "outcome")):
            if col and col not in roles:
                roles[col] = role
                notes.append(f"'{col}' is the {role}: the user's choice")
                used = True
        for col, kind in types.items():
            if kind == "id" and col not in roles:
                roles[col] = "id"
                notes.append(f"'{col}' is an identifier (all distinct, named like an id): never a cause")
                used = True
        if profile is not None and profile.time_column and profile.time_column not in roles:
            roles[profile.time_column] = "time"
            notes.append(f"'{profile.time_column}' is the time dimension (from the profile)")
            used = True
        post = kn.post_treatment
        if cues:
            for col in columns:
                tokens = keyword_tokens(col)
                if col in (treatment, outcome) or col in post or roles.get(col) in ("id", "time"):
                    continue
                if tokens & _POST_CUES or {"follow", "up"} <= tokens:
                    post.append(col)
                    notes.append(
                        f"'{col}' looks measured after the treatment (name cue): keep it out of adjustment sets"
                    )
                    used = True
        if treatment:
            edges = kn.forbidden_edges
            implied = [[c, treatment] for c in post if c != treatment]
            implied += [[outcome, treatment]] if outcome else []
            for edge in implied:
                if edge not in edges:
                    edges.append(edge)
                    used = True
            if implied:
                notes.append(
                    f"forbidden edges into '{treatment}' from the outcome and post-treatment columns: "
                    "what is measured after the treatment cannot cause it"
                )
            if not kn.temporal_order and (pre or stated_post):
                later = [c for c in stated_post if c != outcome] + ([outcome] if outcome else [])
                kn.temporal_order = [t for t in ([c for c in pre if c != treatment], [treatment], later) if t]
                notes.append("temporal order built from 'measured' flags: pre-treatment, treatment, then the rest")
                used = True
        return used
