"""Domain knowledge: what the user's metadata and simple column-name cues say about the data.

No LLM: the knowledge comes from the metadata file (validated against the data's columns),
the dataset's catalogue fields and conservative heuristics (identifier, time and
post-treatment columns). Every entry records where it came from in ``notes``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from agents.causal.dataprep.profiling import name_tokens
from agents.causal.roles import annotated, domain_knowledge_mode
from agents.causal.state import AnalysisState
from agents.core.agent import Agent, AgentContext, AgentParams, AgentResult
from agents.core.errors import AgentError, DataError
from agents.core.status import JobStatus
from agents.core.view import StateView
from agents.runtime.data import read_table, suggest

__all__ = ["DomainKnowledgeAgent", "DomainKnowledgeParams", "metadata_columns"]

_PRE = {"pre", "before", "baseline", "pre-treatment", "pretreatment"}
_POST = {"post", "after", "followup", "follow-up", "post-treatment", "posttreatment"}
_POST_CUES = {"post", "after", "followup", "posttreatment"}
_KNOWN_KEYS = {"description", "domain", "tags", "columns", "roles", "temporal_order", "forbidden_edges"}
_KNOWN_KEYS |= {"required_edges", "notes", "name", "source", "treatment", "outcome"}


def _as_list(value: Any, what: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise AgentError(f"metadata '{what}' must be a list, got {type(value).__name__}")
    return value


def metadata_columns(meta: dict[str, Any]) -> list[tuple[str, str]]:
    """Every column name the metadata mentions, with where it is mentioned."""
    found: list[tuple[str, str]] = []
    columns = meta.get("columns") or {}
    if not isinstance(columns, dict):
        raise AgentError("metadata 'columns' must be a mapping of column name to its description")
    found += [(str(c), "columns") for c in columns]
    roles = meta.get("roles") or {}
    if not isinstance(roles, dict):
        raise AgentError("metadata 'roles' must be a mapping of column name to role")
    found += [(str(c), "roles") for c in roles]
    found += [(str(meta[k]), k) for k in ("treatment", "outcome") if meta.get(k)]
    for i, tier in enumerate(_as_list(meta.get("temporal_order"), "temporal_order")):
        tier = tier if isinstance(tier, list) else [tier]
        found += [(str(c), f"temporal_order tier {i + 1}") for c in tier]
    for key in ("forbidden_edges", "required_edges"):
        for edge in _as_list(meta.get(key), key):
            if not (isinstance(edge, list) and len(edge) == 2):
                raise AgentError(f"metadata '{key}' entries must be [source, target] pairs, got {edge!r}")
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
    """Turns the user's metadata and catalogue fields into the shared ``domain_knowledge`` dict."""

    STATE_MODEL = AnalysisState

    NAME = "domain_knowledge"
    DESCRIPTION = "Column meanings, roles, temporal order and forbidden edges from metadata and name cues."
    REQUIRED_STATE_FIELDS = ("dataset_info",)
    OPTIONAL_STATE_FIELDS = ("raw_metadata", "data_profile")
    WRITES_STATE_FIELDS = ("domain_knowledge",)
    JOB_STATUS = JobStatus.PROFILING
    PROGRESS_WEIGHT = 0.5

    Params = DomainKnowledgeParams

    def run(self, view: StateView, params: DomainKnowledgeParams, ctx: AgentContext) -> AgentResult:
        """Validate the metadata and build the domain-knowledge dict."""
        meta = view.raw_metadata or {}
        if not isinstance(meta, dict):
            raise AgentError("the metadata file must hold a mapping (description, columns, temporal_order...)")
        profile = view.data_profile
        columns, types = self._columns(view, profile)
        notes: list[str] = []
        mentioned = metadata_columns(meta)
        if columns is not None:
            self._validate(mentioned, columns)
        elif meta:
            notes.append("column names in the metadata could not be checked: no profile and no readable data")
        info = view.dataset_info
        knowledge = self._from_metadata(meta, info, notes)
        used_heuristics = self._heuristics(knowledge, view, columns or [], types, params.name_heuristics, notes)
        llm_changed: list[str] = []
        if ctx.llm is not None and params.llm != "off":
            t, y = view.treatment_variable, view.outcome_variable
            llm_changed = domain_knowledge_mode(ctx.llm, params.llm, knowledge, columns or [], t, y, notes)
        has_meta = bool(meta)
        source = "metadata+heuristic" if has_meta and used_heuristics else ("metadata" if has_meta else "heuristic")
        knowledge["source"] = source
        knowledge["notes"] = notes
        summary = (
            f"domain knowledge from {source}: {len(knowledge['roles'])} roles, "
            f"{len(knowledge['temporal_order'])} time tiers, {len(knowledge['post_treatment'])} post-treatment, "
            f"{len(knowledge['forbidden_edges'])} forbidden edges"
        )
        return annotated(
            ctx.llm,
            AgentResult(
                updates={"domain_knowledge": knowledge},
                summary=summary,
                reasoning="\n".join(notes) or "no metadata and no column-name cues",
                outputs={"source": source, "roles": knowledge["roles"], "post_treatment": knowledge["post_treatment"]},
            ),
            llm_changed,
        )

    @staticmethod
    def _columns(view: StateView, profile: Any) -> tuple[list[str] | None, dict[str, str]]:
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
    def _from_metadata(meta: dict[str, Any], info: Any, notes: list[str]) -> dict[str, Any]:
        unknown = sorted(set(meta) - _KNOWN_KEYS)
        if unknown:
            notes.append(f"metadata keys ignored (not understood): {', '.join(unknown)}")
        descriptions = dict(info.kaggle_column_descriptions or {})
        units: dict[str, str] = {}
        roles: dict[str, str] = {str(c): str(r).lower() for c, r in (meta.get("roles") or {}).items()}
        post: list[str] = []
        pre: list[str] = []
        for col, spec in (meta.get("columns") or {}).items():
            spec = spec if isinstance(spec, dict) else {"description": str(spec)}
            if spec.get("description"):
                descriptions[str(col)] = str(spec["description"])
            if spec.get("unit"):
                units[str(col)] = str(spec["unit"])
            if spec.get("role"):
                roles[str(col)] = str(spec["role"]).lower()
            measured = str(spec.get("measured", "")).lower()
            if measured in _POST:
                post.append(str(col))
            elif measured in _PRE:
                pre.append(str(col))
        for key in ("treatment", "outcome"):
            if meta.get(key):
                roles[str(meta[key])] = key
        post += [c for c, r in roles.items() if r in ("mediator", "post_treatment") and c not in post]
        if meta:
            notes.append(
                f"metadata: {len(descriptions)} column descriptions, {len(roles)} roles, "
                f"{len(pre)} measured before and {len(post)} after treatment"
            )
        tags = [str(t) for t in (meta.get("tags") or [])] + [str(t) for t in info.kaggle_tags or []]
        return {
            "source": "",
            "description": str(meta.get("description") or info.kaggle_description or ""),
            "domain": meta.get("domain") or info.kaggle_domain,
            "tags": list(dict.fromkeys(tags)),
            "column_descriptions": descriptions,
            "units": units,
            "roles": roles,
            "temporal_order": [
                [str(c) for c in (t if isinstance(t, list) else [t])] for t in meta.get("temporal_order") or []
            ],
            "post_treatment": post,
            "pre_treatment": list(pre),
            "forbidden_edges": [[str(a), str(b)] for a, b in meta.get("forbidden_edges") or []],
            "required_edges": [[str(a), str(b)] for a, b in meta.get("required_edges") or []],
            "notes": [str(n) for n in meta.get("notes") or []],
            "_pre": pre,
            "_post": list(post),
        }

    @staticmethod
    def _heuristics(
        kn: dict[str, Any], view: StateView, columns: list[str], types: dict[str, str], cues: bool, notes: list[str]
    ) -> bool:
        """Add id/time/treatment/outcome roles, post-treatment name cues and the edges they imply."""
        used = False
        pre, stated_post = kn.pop("_pre"), kn.pop("_post")
        notes[:0] = kn.pop("notes")
        roles: dict[str, str] = kn["roles"]
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
        post: list[str] = kn["post_treatment"]
        if cues:
            for col in columns:
                tokens = name_tokens(col)
                if col in (treatment, outcome) or col in post or roles.get(col) in ("id", "time"):
                    continue
                if tokens & _POST_CUES or {"follow", "up"} <= tokens:
                    post.append(col)
                    notes.append(
                        f"'{col}' looks measured after the treatment (name cue): keep it out of adjustment sets"
                    )
                    used = True
        if treatment:
            edges: list[list[str]] = kn["forbidden_edges"]
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
            if not kn["temporal_order"] and (pre or stated_post):
                later = [c for c in stated_post if c != outcome] + ([outcome] if outcome else [])
                kn["temporal_order"] = [t for t in ([c for c in pre if c != treatment], [treatment], later) if t]
                notes.append("temporal order built from 'measured' flags: pre-treatment, treatment, then the rest")
                used = True
        return used
