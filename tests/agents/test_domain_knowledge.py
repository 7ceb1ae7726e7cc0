"""Domain knowledge from a metadata dict, its validation, and the name heuristics."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from benchmarks.synthetic import job_training
from tests.helpers import make_state
from whyflow.causal.state import AnalysisState
from whyflow.core.errors import AgentError
from whyflow.flows.running.dispatch import run_single_agent

METADATA = {
    "description": "Job-training programme evaluation",
    "domain": "labour economics",
    "tags": ["training", "earnings"],
    "columns": {
        "age": {"description": "Age at enrolment", "unit": "years", "measured": "pre"},
        "prior_earnings": {"description": "Earnings the year before", "unit": "USD", "measured": "pre"},
        "skills_score": {"description": "Test score after the programme", "measured": "post"},
    },
    "temporal_order": [
        ["age", "education_years", "region"],
        ["prior_earnings", "married"],
        ["training"],
        ["skills_score"],
        ["earnings"],
    ],
    "forbidden_edges": [["earnings", "age"]],
    "required_edges": [["training", "earnings"]],
}


def _state(tmp_path: Path, metadata: dict | None, extra: bool = False):
    frame, _ = job_training(n=400, seed=1)
    if extra:
        rng = np.random.default_rng(1)
        frame.insert(0, "person_id", np.arange(len(frame)))
        frame["earnings_after"] = frame["earnings"] + rng.normal(0, 100, len(frame))
    state = make_state(frame, tmp_path, "training", "earnings", profile=False)
    state.raw_metadata = metadata
    run_single_agent("data_profiler", state, tmp_path)
    return state


def test_metadata_becomes_domain_knowledge(tmp_path: Path) -> None:
    state = _state(tmp_path, METADATA)
    run_single_agent("domain_knowledge", state, tmp_path)
    dk = state.domain_knowledge
    assert dk is not None
    assert dk.source == "metadata+heuristic"
    assert dk.description == METADATA["description"] and dk.domain == "labour economics"
    assert dk.tags == ["training", "earnings"]
    assert dk.units == {"age": "years", "prior_earnings": "USD"}
    assert dk.column_descriptions["skills_score"] == "Test score after the programme"
    assert dk.temporal_order == METADATA["temporal_order"]
    assert dk.post_treatment == ["skills_score"]
    assert dk.roles["training"] == "treatment" and dk.roles["earnings"] == "outcome"
    assert ["earnings", "age"] in dk.forbidden_edges
    # Implied: nothing measured after the treatment can cause it.
    assert ["skills_score", "training"] in dk.forbidden_edges
    assert ["earnings", "training"] in dk.forbidden_edges
    assert dk.required_edges == [["training", "earnings"]]
    dumped = dk.model_dump(mode="json")
    for key in ("notes", "forbidden_edges", "required_edges", "roles", "column_descriptions"):
        assert key in dumped


def test_unknown_metadata_columns_are_named_with_a_suggestion(tmp_path: Path) -> None:
    bad = {**METADATA, "columns": {"educaton_years": {"description": "x"}}, "forbidden_edges": [["earnigs", "age"]]}
    state = _state(tmp_path, bad)
    with pytest.raises(AgentError) as info:
        run_single_agent("domain_knowledge", state, tmp_path)
    message = str(info.value)
    assert "'educaton_years'" in message and "did you mean 'education_years'" in message
    assert "'earnigs'" in message and "did you mean 'earnings'" in message
    assert state.domain_knowledge is None


def test_malformed_metadata_is_rejected(tmp_path: Path) -> None:
    # The state holds typed metadata: an edge that is not a [source, target] pair never reaches the agent.
    with pytest.raises(ValidationError, match=r"raw_metadata\.forbidden_edges\.0\n.*at most 2 items"):
        _state(tmp_path, {"forbidden_edges": [["earnings", "age", "region"]]})


def test_an_older_job_s_dicts_load_and_serialise_unchanged() -> None:
    # What state.json holds for a job written before these fields were typed: plain dicts.
    raw = {"tags": ["training", 2024], "columns": {"region": "Region", "age": {"unit": "years"}, "x": None}}
    raw |= {"temporal_order": [["age"], "training"], "forbidden_edges": [["earnings", "age"]]}
    known = {"source": "metadata", "description": "", "domain": None, "tags": ["training", "2024"]}
    known |= {"column_descriptions": {"region": "Region"}, "units": {"age": "years"}, "roles": {"age": "confounder"}}
    known |= {"temporal_order": [["age"], ["training"]], "post_treatment": [], "pre_treatment": ["age"]}
    known |= {"forbidden_edges": [["earnings", "age"]], "required_edges": [], "notes": ["from the file"]}
    entry = {"round": 1, "decision": "ITERATE", "scores": {"overlap": 2}, "issues": ["Poor overlap"]}
    entry |= {"improvements": ["trim_to_common_support: trim"], "changes_applied": [], "approved": False}
    entry |= {"limit_reached": False}
    old = {"raw_metadata": raw, "domain_knowledge": known, "debate_history": [entry, {**entry, "llm_review": None}]}
    state = AnalysisState.model_validate({"job_id": "old", "dataset_info": {"url": "x.csv"}, **old})
    assert state.raw_metadata is not None and state.domain_knowledge is not None
    assert state.raw_metadata.tags == ["training", 2024] and state.raw_metadata.temporal_order == [["age"], "training"]
    assert state.domain_knowledge.roles == {"age": "confounder"} and state.debate_history[1].llm_review is None
    saved = json.loads(state.to_json())
    for key, value in old.items():
        assert saved[key] == value and json.dumps(saved[key]) == json.dumps(value)  # same keys, same order


def test_heuristics_without_metadata(tmp_path: Path) -> None:
    state = _state(tmp_path, None, extra=True)
    run_single_agent("domain_knowledge", state, tmp_path)
    dk = state.domain_knowledge
    assert dk is not None
    assert dk.source == "heuristic"
    assert dk.roles["person_id"] == "id"
    assert dk.post_treatment == ["earnings_after"]
    assert ["earnings_after", "training"] in dk.forbidden_edges
    # Nothing the data cannot tell is invented: no temporal tiers without metadata.
    assert dk.temporal_order == []
    assert "skills_score" not in dk.post_treatment


def test_temporal_order_from_measured_flags(tmp_path: Path) -> None:
    meta = {k: v for k, v in METADATA.items() if k != "temporal_order"}
    state = _state(tmp_path, meta)
    run_single_agent("domain_knowledge", state, tmp_path)
    dk = state.domain_knowledge
    assert dk is not None
    assert dk.temporal_order == [["age", "prior_earnings"], ["training"], ["skills_score", "earnings"]]
