"""The agent contract: registration checks, read-only views, writes, required fields, plug-ins."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.synthetic import linear_confounding
from tests.helpers import make_state
from whyflow.causal.state import AnalysisState
from whyflow.core.agent import Agent, AgentParams, AgentResult
from whyflow.core.errors import AgentRegistrationError, ContractViolation, MissingStateField
from whyflow.core.status import JobStatus
from whyflow.core.view import StateView
from whyflow.flows.running.dispatch import apply_result, run_single_agent
from whyflow.registry import Registry, UnknownAgent, default_registry


def test_plugin_agents_are_found_through_the_entry_point_group() -> None:
    registry = Registry()
    assert "toy_estimator" in registry.names()
    assert registry.get("toy_estimator").__module__ == "tests.spine_agents"


def test_unknown_agent_suggests_the_closest_name() -> None:
    with pytest.raises(UnknownAgent, match="did you mean 'effect_estimator'"):
        default_registry().get("efect_estimator")


@pytest.mark.parametrize(
    ("attrs", "message"),
    [
        ({"WRITES_STATE_FIELDS": ("treatment_efects",)}, "'treatment_efects', which is not an AnalysisState field"),
        ({"WRITES_STATE_FIELDS": ("status",)}, "'status', which only the runner may write"),
        ({"WRITES_STATE_FIELDS": ()}, "WRITES_STATE_FIELDS is empty"),
        ({"JOB_STATUS": JobStatus.COMPLETED}, "JOB_STATUS must be a working JobStatus"),
        ({"PROGRESS_WEIGHT": 0}, "PROGRESS_WEIGHT must be a positive number"),
        ({"NAME": "has space"}, "NAME must be a non-empty identifier"),
        ({"REQUIRED_STATE_FIELDS": ("nope",)}, "REQUIRED_STATE_FIELDS names 'nope'"),
        ({"STATE_MODEL": None}, "STATE_MODEL must name the state the agent works on"),
    ],
)
def test_malformed_contracts_fail_at_registration(attrs: dict[str, object], message: str) -> None:
    base = {
        "NAME": "x_agent",
        "STATE_MODEL": AnalysisState,
        "WRITES_STATE_FIELDS": ("recommendations",),
        "JOB_STATUS": JobStatus.CRITIQUE_REVIEW,
    }
    cls = type("X", (Agent,), {**base, **attrs})
    with pytest.raises(AgentRegistrationError, match=message):
        Registry(use_entry_points=False).register(cls)


class Snooper(Agent):
    STATE_MODEL = AnalysisState
    NAME = "snooper"
    REQUIRED_STATE_FIELDS = ("data_profile",)
    WRITES_STATE_FIELDS = ("recommendations",)
    JOB_STATUS = JobStatus.CRITIQUE_REVIEW

    class Params(AgentParams):
        field: str = "treatment_effects"

    def run(self, view, params, ctx):  # type: ignore[no-untyped-def]
        getattr(view, params.field)
        return AgentResult(updates={"recommendations": ["ok"]})


@pytest.fixture
def state(tmp_path: Path):  # type: ignore[no-untyped-def]
    frame, _ = linear_confounding(300, seed=1)
    return make_state(frame, tmp_path, "treated", "outcome")


def test_reading_an_undeclared_field_is_a_contract_violation(state, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ContractViolation, match="agent 'snooper' read state field 'treatment_effects'"):
        run_single_agent(Snooper, state, tmp_path)
    run_single_agent(Snooper, state, tmp_path, {"field": "treatment_variable"})  # always readable
    assert state.recommendations == ["ok"]


def test_view_is_read_only_and_a_private_copy(state) -> None:  # type: ignore[no-untyped-def]
    view = StateView(state, "snooper", frozenset({"data_profile"}))
    with pytest.raises(AttributeError, match="read-only"):
        view.data_profile = None  # type: ignore[misc]
    view.data_profile.feature_names.append("leak")
    assert "leak" not in state.data_profile.feature_names


def test_writing_outside_the_contract_fails_before_anything_is_applied(state, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from tests.spine_agents import BadWriter

    result = AgentResult(updates={"recommendations": ["x"], "treatment_effects": []})
    with pytest.raises(ContractViolation, match="agent 'bad_writer' wrote state field 'treatment_effects'"):
        apply_result(state, BadWriter, result)
    assert state.recommendations == []


def test_narrowed_writes_drop_declared_fields_outside_the_step(state, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from tests.spine_agents import ToyEstimator

    result = AgentResult(updates={"treatment_effects": [], "analyzed_pairs": []})
    applied = apply_result(state, ToyEstimator, result, writes=frozenset({"treatment_effects"}))
    assert applied == ["treatment_effects"]


def test_missing_required_field_names_agent_and_field(tmp_path: Path) -> None:
    frame, _ = linear_confounding(100)
    bare = make_state(frame, tmp_path, "treated", "outcome", profile=False)
    with pytest.raises(MissingStateField, match="agent 'toy_estimator' requires state field 'data_profile'"):
        run_single_agent("toy_estimator", bare, tmp_path)


def test_invalid_values_are_rejected_whole(state) -> None:  # type: ignore[no-untyped-def]
    from tests.spine_agents import ToyEstimator

    result = AgentResult(updates={"treatment_effects": [{"method": "OLS"}]})  # missing fields
    with pytest.raises(Exception, match="treatment_effects"):
        apply_result(state, ToyEstimator, result)
    assert state.treatment_effects == []


def test_each_update_leaves_a_trace(state, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run_single_agent("toy_estimator", state, tmp_path)
    trace = state.agent_traces[-1]
    assert trace.agent_name == "toy_estimator"
    assert trace.outputs["fields_written"] == ["treatment_effects"]


def test_the_typed_views_are_the_state_view_at_run_time_and_required_names_the_empty_field() -> None:
    from whyflow.ask.view import AskView
    from whyflow.causal.view import AnalysisView
    from whyflow.core.errors import AgentError
    from whyflow.core.view import required

    assert AnalysisView is StateView and AskView is StateView
    from whyflow.causal.state import DatasetInfo

    state = AnalysisState(job_id="j1", dataset_info=DatasetInfo(url="data.csv"))
    view = StateView(state, "x", frozenset({"data_profile"}))
    with pytest.raises(AgentError, match="state field 'data_profile' is empty, but the agent requires it"):
        required(view.data_profile, "data_profile")
    assert required(0, "n") == 0  # only None counts as empty
