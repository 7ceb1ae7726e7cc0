"""Domain knowledge from a metadata dict, its validation, and the name heuristics."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agents.core.errors import AgentError
from benchmarks.synthetic import job_training
from flows.running.dispatch import run_single_agent
from tests.helpers import make_state

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
    state.dataset_info.kaggle_tags = ["economics", "training"]
    run_single_agent("data_profiler", state, tmp_path)
    return state


def test_metadata_becomes_domain_knowledge(tmp_path: Path) -> None:
    state = _state(tmp_path, METADATA)
    run_single_agent("domain_knowledge", state, tmp_path)
    dk = state.domain_knowledge
    assert dk["source"] == "metadata+heuristic"
    assert dk["description"] == METADATA["description"] and dk["domain"] == "labour economics"
    assert dk["tags"] == ["training", "earnings", "economics"]
    assert dk["units"] == {"age": "years", "prior_earnings": "USD"}
    assert dk["column_descriptions"]["skills_score"] == "Test score after the programme"
    assert dk["temporal_order"] == METADATA["temporal_order"]
    assert dk["post_treatment"] == ["skills_score"]
    assert dk["roles"]["training"] == "treatment" and dk["roles"]["earnings"] == "outcome"
    assert ["earnings", "age"] in dk["forbidden_edges"]
    # Implied: nothing measured after the treatment can cause it.
    assert ["skills_score", "training"] in dk["forbidden_edges"]
    assert ["earnings", "training"] in dk["forbidden_edges"]
    assert dk["required_edges"] == [["training", "earnings"]]
    for key in ("notes", "forbidden_edges", "required_edges", "roles", "column_descriptions"):
        assert key in dk


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
    state = _state(tmp_path, {"forbidden_edges": [["earnings", "age", "region"]]})
    with pytest.raises(AgentError, match=r"\[source, target\] pairs"):
        run_single_agent("domain_knowledge", state, tmp_path)


def test_heuristics_without_metadata(tmp_path: Path) -> None:
    state = _state(tmp_path, None, extra=True)
    run_single_agent("domain_knowledge", state, tmp_path)
    dk = state.domain_knowledge
    assert dk["source"] == "heuristic"
    assert dk["roles"]["person_id"] == "id"
    assert dk["post_treatment"] == ["earnings_after"]
    assert ["earnings_after", "training"] in dk["forbidden_edges"]
    # Nothing the data cannot tell is invented: no temporal tiers without metadata.
    assert dk["temporal_order"] == []
    assert "skills_score" not in dk["post_treatment"]


def test_temporal_order_from_measured_flags(tmp_path: Path) -> None:
    meta = {k: v for k, v in METADATA.items() if k != "temporal_order"}
    state = _state(tmp_path, meta)
    run_single_agent("domain_knowledge", state, tmp_path)
    dk = state.domain_knowledge
    assert dk["temporal_order"] == [["age", "prior_earnings"], ["training"], ["skills_score", "earnings"]]
