"""What the analysis knows beyond the data's values, and what its critique said: typed state records.

:class:`Metadata` is the user's ``--metadata`` file as the job received it (``raw_metadata``);
:class:`DomainKnowledge` is what ``domain_knowledge`` writes from it, the dataset's catalogue fields
and column-name cues; :class:`DebateEntry` is one round of the critique's debate. Each model covers
exactly the keys its writer produces, so an older job's ``state.json`` (plain dicts) loads into it
unchanged and serialises back to the same JSON. A key a writer adds only on some paths (the
language model's part) is left out of the JSON when it was never set.

This module must not import :mod:`whyflow.causal.state` (which imports it).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
)

from whyflow.causal.records import Record
from whyflow.core.job import JOB_CONFIG

__all__ = [
    "ColumnMetadata",
    "DebateEntry",
    "DomainKnowledge",
    "Metadata",
    "ModelReview",
    "RoleSuggestionsRecord",
    "Text",
]


class _Model(BaseModel):
    model_config = JOB_CONFIG


def _absent(value: Any) -> bool:
    return value is None


# ---- the metadata file ---------------------------------------------------------------------------
Text = str | int | float
"""A text as the metadata file wrote it: a number stays a number (``tags: [2024]``, ``treatment: 1990``)."""


class _AsWritten(Record):
    """A mapping from the metadata file: only the keys the file wrote serialise, in its order.

    ``raw_metadata`` is the validated file's own values (``whyflow/flows/recipes/metadata.py`` checks the
    file against its spec first), so ``state.json`` keeps exactly what the file said.
    """

    model_config = ConfigDict(**JOB_CONFIG, coerce_numbers_to_str=True)  # a column may be called 1990


class ColumnMetadata(_AsWritten):
    """What the metadata says about one column (``columns.<col>``)."""

    description: Text | None = None
    """What the column holds."""
    unit: Text | None = None
    """Its unit of measurement (years, USD, ...)."""
    role: Text | None = None
    """treatment, outcome, confounder, instrument, mediator, id, time, ..."""
    measured: Text | None = None
    """When it was measured relative to the treatment: pre (before, baseline) or post (after, follow-up)."""


class Metadata(_AsWritten):
    """The user's metadata file (``--metadata``), every key optional, as the file wrote it."""

    name: Text | None = None
    """The dataset's name."""
    source: Text | None = None
    """Where the data comes from."""
    description: Text | None = None
    """What the data is, in a sentence or two."""
    domain: Text | None = None
    """The field of study (labour economics, ...)."""
    tags: list[Text] | None = None
    """Free keywords."""
    columns: dict[str, ColumnMetadata | Text | None] | None = None
    """Per column: its description, unit, role and timing (a bare text is its description)."""
    roles: dict[str, Text] | None = None
    """Roles by column, as an alternative to ``columns.<col>.role``."""
    treatment: Text | None = None
    """The treatment column (a role)."""
    outcome: Text | None = None
    """The outcome column (a role)."""
    temporal_order: list[list[Text] | Text] | None = None
    """Tiers of columns, earliest first (a tier of one column may be written without brackets)."""
    forbidden_edges: list[tuple[Text, Text]] | None = None
    """[cause, effect] pairs that cannot hold."""
    required_edges: list[tuple[Text, Text]] | None = None
    """[cause, effect] pairs that are known to hold."""
    notes: list[Text] | None = None
    """Free remarks, kept with the domain knowledge."""

    def given(self) -> bool:
        """Whether the file said anything at all (an empty mapping says nothing)."""
        return bool(self.model_fields_set)


# ---- domain knowledge ----------------------------------------------------------------------------


class RoleSuggestionsRecord(_Model):
    """The language model's role suggestions, as ``domain_knowledge`` records them (``llm_suggestions``)."""

    model: str | None
    """The model that answered (its name, when the server gave one)."""
    roles: dict[str, str]
    """Suggested role by column (only columns that passed the checks)."""
    reasons: dict[str, str]
    """The model's reason by column, where it gave one."""
    temporal_order: list[list[str]]
    """Its suggested tiers, earliest first ([] when a temporal order was already declared)."""
    applied: bool
    """True in ``llm: apply`` mode (unlabelled columns took the suggested roles)."""
    mark: str
    """How the suggestions are marked wherever they appear."""


class DomainKnowledge(_Model):
    """Column meanings, roles, timing and edge lists from the metadata and column-name cues."""

    source: str = ""
    """Where it came from: "metadata", "heuristic" or "metadata+heuristic"."""
    description: str = ""
    """What the data is (the metadata's description, else the catalogue's; "" when neither)."""
    domain: str | None = None
    """The field of study, when the metadata or the catalogue names one."""
    tags: list[str] = []
    """Keywords: the metadata's, then the catalogue's, without repeats."""
    column_descriptions: dict[str, str] = {}
    """What each described column holds, by column."""
    units: dict[str, str] = {}
    """Unit of measurement by column."""
    roles: dict[str, str] = {}
    """Role by column: treatment, outcome, confounder, instrument, mediator, id, time, ..."""
    temporal_order: list[list[str]] = []
    """Tiers of columns, earliest first: nothing in a later tier causes anything in an earlier one."""
    post_treatment: list[str] = []
    """Columns measured after the treatment (never adjusted for)."""
    pre_treatment: list[str] = []
    """Columns the metadata says were measured before the treatment."""
    forbidden_edges: list[list[str]] = []
    """[cause, effect] pairs that cannot hold (declared, and implied by timing)."""
    required_edges: list[list[str]] = []
    """[cause, effect] pairs known to hold."""
    llm_suggestions: RoleSuggestionsRecord | None = Field(default=None, exclude_if=_absent)
    """The language model's suggestions; absent (not in the JSON) when no model answered."""
    notes: list[str] = []
    """Where each entry came from, one line each (the metadata's own notes first)."""


# ---- the critique's debate -----------------------------------------------------------------------
class ModelReview(_Model):
    """The language model's advisory review of a round (never the decision)."""

    reviewer: str
    """Who reviewed ("language model")."""
    model: str | None
    """The model that answered (its name, when the server gave one)."""
    points: list[str]
    """Its review points (numbers checked against the analysis)."""
    would_approve: bool
    """Whether it would approve the analysis."""
    agrees_with_rules: bool
    """Whether that agrees with the rule-based decision."""
    effect: str
    """What the review changed, in words (advisory: the rules' decision stands)."""
    mark: str
    """How model-written text is marked."""


class DebateEntry(Record):
    """One critique round of the debate: the rules' decision and what was applied before it."""

    round: int
    """The critique round (1 for the first)."""
    decision: Literal["APPROVE", "ITERATE", "REJECT"]
    """The rules' decision."""
    scores: dict[str, int]
    """Score 1-5 by dimension."""
    issues: list[str]
    """The problems found."""
    improvements: list[str]
    """Coded improvements for the next round (``code: words``)."""
    changes_applied: list[str]
    """Improvement codes the agents applied in this round."""
    approved: bool
    """True when the decision is APPROVE."""
    limit_reached: bool
    """True when the loop stopped unapproved because the iteration budget was spent."""
    llm_review: ModelReview | None = None
    """The model's review, None when its answer was rejected; absent (not in the JSON) without a model."""
