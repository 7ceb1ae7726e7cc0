"""``state.json``'s versions, and reading a state of any version into the model its ``kind`` names.

Every state this release writes says which layout it has (``schema_version``) and which family
it belongs to (``kind``: ``analysis`` or ``ask``). :func:`read_state` parses the text, brings the
document up to :data:`~whyflow.core.job.STATE_SCHEMA_VERSION` one version at a time, and only
then validates it with the model of its kind: the dispatch is on the parsed fields, never on the
text. A version newer than this release's is refused with :class:`StateVersionError`; this is
the one module that knows what older states looked like.

What each version changed (the upgrade from the version before is the function named after it):

- **0**: no ``schema_version``; every state written before versions existed. An ask job's state
  said ``"kind": "ask"``; an analysis said nothing.
- **1**: ``schema_version``, ``kind`` and ``job_dir`` (the folder the state was saved in) on
  every state. An analysis's ``dataset_info`` lost the ``kaggle_*`` fields nothing wrote. An
  estimate's ``details`` carry their ``method_key`` and ``family`` (derived here for states
  that held the estimator's plain dict, with every other key moved into ``extras``). A
  sensitivity result's ``details`` hold the E-value figures in fields (``evalue_estimate``,
  ``evalue_ci``, ``ci_crosses_null``) instead of ``extras``, and the simulated unobserved
  confounder is ``kind: unobserved``. An ask state's plan carries its filled worked example as
  ``plan.filled`` instead of ``plan.parameters.filled`` (and no ``answer_format``, a copy of the
  example's output format nothing read), and its ``execution_result`` is the
  sandbox's own result (with ``overhead_seconds``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from whyflow.causal.estimates import EstimateDetails, SensitivityDetails
from whyflow.core.errors import WhyflowError
from whyflow.core.job import STATE_SCHEMA_VERSION
from whyflow.states import STATE_MODELS, JobState

__all__ = ["StateVersionError", "parse_state", "read_state", "upgrade", "validate_state"]

Document = dict[str, Any]


class StateVersionError(WhyflowError):
    """A state's ``schema_version`` is newer than this release reads, or is not a version at all."""


def read_state(text: str) -> JobState:
    """The state a ``state.json`` of any version holds, in this release's model of its kind."""
    document = upgrade(parse_state(text))
    return validate_state(document)


def parse_state(text: str) -> Document:
    """The JSON document of a state (``NaN`` and ``Infinity`` as ``to_json`` writes them)."""
    document = json.loads(text)
    if not isinstance(document, dict) or "job_id" not in document:
        raise ValueError("not a job state: a JSON object with a job_id")
    return document


def upgrade(document: Document) -> Document:
    """``document`` brought to the current version (the input is left as it was)."""
    version = document.get("schema_version", 0)
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise StateVersionError(f"schema_version {version!r} is not a version number")
    if version > STATE_SCHEMA_VERSION:
        raise StateVersionError(
            f"the state was written by a newer whyflow (state schema {version}; this one reads up to "
            f"{STATE_SCHEMA_VERSION}): upgrade whyflow to read it"
        )
    out = json.loads(json.dumps(document))  # a deep copy, NaN included
    for step in _UPGRADES[version:]:
        out = step(out)
    return out


def validate_state(document: Document) -> JobState:
    """The current-version ``document`` validated by the model its ``kind`` names."""
    kind = document.get("kind")
    model = STATE_MODELS.get(str(kind))
    if model is None:
        raise ValueError(f"unknown state kind {kind!r} (known: {', '.join(STATE_MODELS)})")
    state = model.model_validate_json(json.dumps(document))
    assert isinstance(state, JobState)
    return state


# ---- version 0 -> 1 ----------------------------------------------------------------------------
def _from_0(document: Document) -> Document:
    kind = "ask" if document.get("kind") == "ask" else "analysis"
    head = {"schema_version": 1, "kind": kind, "job_dir": None}
    rest = {k: v for k, v in document.items() if k not in head}
    out = {**head, **rest}
    return _analysis_from_0(out) if kind == "analysis" else _ask_from_0(out)


def _analysis_from_0(document: Document) -> Document:
    info = document.get("dataset_info")
    if isinstance(info, dict):
        document["dataset_info"] = {k: v for k, v in info.items() if not k.startswith("kaggle_")}
    for effect in document.get("treatment_effects") or []:
        if isinstance(effect, dict) and isinstance(effect.get("details"), dict):
            effect["details"] = _estimate_details_from_0(effect["details"])
    for result in document.get("sensitivity_results") or []:
        if isinstance(result, dict):
            result["details"] = _sensitivity_details_from_0(result.get("method"), result.get("details") or {})
    return document


def _ask_from_0(document: Document) -> Document:
    """An ask state's plan carries its filled worked example as ``plan.filled``, not in ``plan.parameters``.

    (Its ``execution_result``, the sandbox's result, reads as it was: ``overhead_seconds`` defaults to 0.)
    """
    plan = document.get("plan")
    if isinstance(plan, dict):
        plan.pop("answer_format", None)  # a copy of the filled example's output format nothing read
        if isinstance(plan.get("parameters"), dict) and "filled" in plan["parameters"]:
            plan["filled"] = plan["parameters"].pop("filled")
    return document


def _known_and_extras(details: Document, known: set[str]) -> Document:
    """A details dict split into the model's fields and ``extras`` (every other key merged in)."""
    out = {k: v for k, v in details.items() if k in known}
    out["extras"] = {**(out.get("extras") or {}), **{k: v for k, v in details.items() if k not in known}}
    return out


def _estimate_details_from_0(details: Document) -> Document:
    out = _known_and_extras(details, set(EstimateDetails.model_fields))
    extras = out["extras"]
    naive = extras.pop("naive", None)
    out.setdefault("method_key", str(extras.get("method") or "unknown"))
    if "family" not in out:
        out["family"] = "naive" if naive is True else _family_of_0(str(out["method_key"]))
    return out


_FAMILIES_0: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"naive|unadjusted", re.I), "naive"),
    (re.compile(r"diff_means|difference.in.means", re.I), "experiment"),
    (re.compile(r"^iv$|instrument|2sls|two.stage", re.I), "iv"),
    (re.compile(r"discontinuity|rdd", re.I), "rdd"),
    (re.compile(r"^did$|difference.in.difference|twfe", re.I), "did"),
    (re.compile(r"aipw|doubly|dr.?learner|tmle|dml", re.I), "doubly_robust"),
    (re.compile(r"weight|ipw", re.I), "weighting"),
    (re.compile(r"match", re.I), "matching"),
    (re.compile(r"stratif", re.I), "stratification"),
    (re.compile(r"learner", re.I), "meta"),
)
"""An estimate saved without its family: the family its method key or label names."""


def _family_of_0(method: str) -> str:
    return next((family for pattern, family in _FAMILIES_0 if pattern.search(method)), "regression")


_SENSITIVITY_KINDS = ("e_value", "rosenbaum", "refuter", "unobserved", "other")
_EVALUE_FIELDS = ("evalue_estimate", "evalue_ci", "ci_crosses_null")


def _sensitivity_details_from_0(method: Any, details: Document) -> Document:
    out = _known_and_extras(details, set(SensitivityDetails.model_fields) - set(_EVALUE_FIELDS))
    kind = out.get("kind")
    if method == "unobserved_common_cause" or kind == "unobserved_common_cause":
        out["kind"] = "unobserved"
    elif kind not in _SENSITIVITY_KINDS:
        out["kind"] = "other"
    if out["kind"] == "e_value":
        for name in _EVALUE_FIELDS:
            if name in out["extras"]:
                out[name] = out["extras"].pop(name)
    return out


_UPGRADES: tuple[Callable[[Document], Document], ...] = (_from_0,)
"""``_UPGRADES[v]`` turns a version-``v`` document into a version ``v + 1`` one."""

assert len(_UPGRADES) == STATE_SCHEMA_VERSION, "one upgrade per version"
