"""AnalysisState: every helper's semantics, the status diagram, updated_at, traces, JSON."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.factories import make_estimate
from whyflow.causal.queries import effects_for_pair
from whyflow.causal.state import (
    AnalysisState,
    CausalPair,
    CritiqueDecision,
    CritiqueFeedback,
    DatasetInfo,
    TreatmentEffectResult,
)
from whyflow.core.errors import IllegalTransition
from whyflow.core.job import MAX_TRACE_OUTPUT_LEN, MAX_TRACE_REASONING_LEN, AgentTrace
from whyflow.core.status import JobStatus, is_legal_transition


def new_state(**kw: object) -> AnalysisState:
    return AnalysisState(job_id="j1", dataset_info=DatasetInfo(url="data.csv"), **kw)  # type: ignore[arg-type]


def effect(t: str, y: str, est: float = 1.0) -> TreatmentEffectResult:
    return make_estimate("ols", est, 0.1, label="OLS", ci=(est - 0.2, est + 0.2), treatment=t, outcome=y)


def feedback(decision: CritiqueDecision, iteration: int = 1) -> CritiqueFeedback:
    return CritiqueFeedback(
        decision=decision, iteration=iteration, scores={"overlap": 3}, issues=[], improvements=[], reasoning=""
    )


def test_defaults_follow_the_schema() -> None:
    s = new_state()
    assert s.status is JobStatus.PENDING
    assert s.treatment_effects == [] and s.analyzed_pairs == [] and s.data_repairs == []
    assert s.iteration_count == 0 and s.max_iterations == 3
    assert s.notebook_path is None and s.completed_at is None
    assert len(JobStatus) == 14
    assert JobStatus.FETCHING_DATA.value == "fetching_data"


def test_updated_at_moves_on_every_assignment() -> None:
    s = new_state()
    before = s.updated_at
    time.sleep(0.001)
    s.recommendations = ["collect more data"]
    assert s.updated_at > before


def test_add_trace_truncates_outputs_and_reasoning_and_feeds_the_sink() -> None:
    s = new_state()
    seen: list[AgentTrace] = []
    s.set_trace_sink(seen.append)
    s.add_trace(AgentTrace(agent_name="a", action="x", reasoning="r" * 5000, outputs={"big": "y" * 2000, "small": 3}))
    kept = s.agent_traces[-1]
    assert len(kept.reasoning) <= MAX_TRACE_REASONING_LEN + 20
    assert len(kept.outputs["big"]) <= MAX_TRACE_OUTPUT_LEN + 40 and "truncated" in kept.outputs["big"]
    assert kept.outputs["small"] == 3
    assert seen[0].reasoning == "r" * 5000 and seen[0].outputs["big"] == "y" * 2000  # full copy kept


def test_compression_keeps_recent_traces_and_counts_older_ones() -> None:
    s = new_state()
    full: list[AgentTrace] = []
    s.set_trace_sink(full.append)
    for i in range(101):
        s.add_trace(AgentTrace(agent_name=f"agent{i % 3}", action="run", reasoning=str(i)))
    assert len(s.agent_traces) == 26
    summary = s.agent_traces[0]
    assert summary.agent_name == "trace_compressor" and summary.outputs["n_compressed"] == 76
    assert [t.reasoning for t in s.agent_traces[1:]] == [str(i) for i in range(76, 101)]
    assert len(full) == 101  # nothing lost in the sink
    for i in range(101, 176):
        s.add_trace(AgentTrace(agent_name="late", action="run", reasoning=str(i)))
    assert s.agent_traces[0].outputs["n_compressed"] == 151  # earlier summary merged, not lost
    assert sum(s.agent_traces[0].outputs["action_counts"].values()) == 151


def test_should_iterate_and_is_approved() -> None:
    s = new_state()
    assert not s.should_iterate() and not s.is_approved()
    s.critique_history = [feedback(CritiqueDecision.ITERATE)]
    assert s.should_iterate() and not s.is_approved()
    s.iteration_count = 3
    assert not s.should_iterate()  # budget spent
    s.critique_history = [feedback(CritiqueDecision.ITERATE), feedback(CritiqueDecision.APPROVE, 2)]
    assert s.is_approved() and not s.should_iterate()
    s.critique_history = [feedback(CritiqueDecision.REJECT)]
    assert not s.is_approved() and not s.should_iterate()


def test_primary_pair_priority() -> None:
    s = new_state()
    assert s.get_primary_pair() == (None, None)
    s.treatment_effects = [effect("t3", "y3")]
    assert s.get_primary_pair() == ("t3", "y3")
    s.analyzed_pairs = [
        CausalPair(treatment="t2b", outcome="y2b", priority=2),
        CausalPair(treatment="t2", outcome="y2", priority=1),
    ]
    assert s.get_primary_pair() == ("t2", "y2")
    s.treatment_variable, s.outcome_variable = "t1", "y1"
    assert s.get_primary_pair() == ("t1", "y1")


def test_effects_for_pair_and_all_pairs() -> None:
    s = new_state()
    s.treatment_effects = [effect("a", "y"), effect("b", "y"), effect("a", "y", 2.0)]
    assert [e.estimate for e in effects_for_pair(s.treatment_effects, "a", "y")] == [1.0, 2.0]
    assert s.get_all_pairs() == [("a", "y"), ("b", "y")]
    s.analyzed_pairs = [CausalPair(treatment="b", outcome="y", priority=2), CausalPair(treatment="a", outcome="y")]
    assert s.get_all_pairs() == [("a", "y"), ("b", "y")]


def test_mark_helpers() -> None:
    s = new_state()
    s.transition(JobStatus.FETCHING_DATA)
    s.transition(JobStatus.PROFILING)
    s.mark_failed("bad column", "data_profiler")
    assert (s.status, s.error_message, s.error_agent) == (JobStatus.FAILED, "bad column", "data_profiler")

    s = new_state()
    for status in (JobStatus.FETCHING_DATA, JobStatus.ESTIMATING_EFFECTS, JobStatus.GENERATING_NOTEBOOK):
        s.transition(status)
    s.mark_completed()
    assert s.status is JobStatus.COMPLETED and s.completed_at is not None and s.progress_percentage == 100.0

    s = new_state()
    s.transition(JobStatus.FETCHING_DATA)
    s.mark_cancelling()
    assert s.status is JobStatus.CANCELLING
    s.mark_cancelled()
    assert s.status is JobStatus.CANCELLED and s.error_message == "Cancelled by user"

    s = new_state()
    s.mark_cancelled("not needed")  # PENDING -> CANCELLED directly
    assert s.status is JobStatus.CANCELLED and s.error_message == "not needed"


@pytest.mark.parametrize(
    ("current", "target"),
    [
        (JobStatus.PENDING, JobStatus.PROFILING),
        (JobStatus.PENDING, JobStatus.COMPLETED),
        (JobStatus.ESTIMATING_EFFECTS, JobStatus.PROFILING),
        (JobStatus.COMPLETED, JobStatus.PROFILING),
        (JobStatus.FAILED, JobStatus.ESTIMATING_EFFECTS),
        (JobStatus.CANCELLED, JobStatus.PENDING),
        (JobStatus.CANCELLING, JobStatus.COMPLETED),
        (JobStatus.ITERATING, JobStatus.GENERATING_NOTEBOOK),
        (JobStatus.ESTIMATING_EFFECTS, JobStatus.ITERATING),
        (JobStatus.FETCHING_DATA, JobStatus.COMPLETED),
    ],
)
def test_illegal_transitions_are_rejected(current: JobStatus, target: JobStatus) -> None:
    assert not is_legal_transition(current, target)
    s = new_state()
    s.__dict__["status"] = current  # place the job in `current` directly
    with pytest.raises(IllegalTransition, match=f"{current.value} -> {target.value}"):
        s.transition(target)


@pytest.mark.parametrize(
    ("current", "target"),
    [
        (JobStatus.PENDING, JobStatus.FETCHING_DATA),
        (JobStatus.PENDING, JobStatus.CANCELLED),
        (JobStatus.FETCHING_DATA, JobStatus.PROFILING),
        (JobStatus.PROFILING, JobStatus.EXPLORATORY_ANALYSIS),
        (JobStatus.CRITIQUE_REVIEW, JobStatus.ITERATING),
        (JobStatus.ITERATING, JobStatus.ESTIMATING_EFFECTS),
        (JobStatus.CRITIQUE_REVIEW, JobStatus.GENERATING_NOTEBOOK),
        (JobStatus.GENERATING_NOTEBOOK, JobStatus.COMPLETED),
        (JobStatus.SENSITIVITY_ANALYSIS, JobStatus.FAILED),
        (JobStatus.DISCOVERING_CAUSAL, JobStatus.CANCELLING),
        (JobStatus.CANCELLING, JobStatus.CANCELLED),
    ],
)
def test_legal_transitions_from_the_diagram(current: JobStatus, target: JobStatus) -> None:
    assert is_legal_transition(current, target)


def test_reopen_returns_failed_job_to_pending_but_not_completed() -> None:
    s = new_state()
    s.transition(JobStatus.FETCHING_DATA)
    s.mark_failed("x", "a")
    s.reopen()
    assert s.status is JobStatus.PENDING and s.error_message is None
    s.transition(JobStatus.FETCHING_DATA)
    s.transition(JobStatus.GENERATING_NOTEBOOK)
    s.mark_completed()
    with pytest.raises(IllegalTransition):
        s.reopen()


def test_json_round_trip_keeps_everything() -> None:
    s = new_state(treatment_variable="t", outcome_variable="y")
    s.treatment_effects = [effect("t", "y")]
    s.critique_history = [feedback(CritiqueDecision.APPROVE)]
    s.add_trace(AgentTrace(agent_name="a", action="run", reasoning="why", duration_ms=5))
    again = AnalysisState.from_json(s.to_json())
    assert again == s
    assert again.updated_at - s.updated_at == timedelta(0)


@settings(max_examples=40, deadline=None)
@given(
    treatment=st.one_of(st.none(), st.text(min_size=1, max_size=8)),
    estimates=st.lists(st.floats(allow_nan=False, allow_infinity=False, width=32), max_size=4),
    recs=st.lists(st.text(max_size=20), max_size=3),
    iteration=st.integers(min_value=0, max_value=10),
)
def test_state_json_round_trip_property(
    treatment: str | None, estimates: list[float], recs: list[str], iteration: int
) -> None:
    s = new_state(treatment_variable=treatment, recommendations=recs, iteration_count=iteration)
    s.treatment_effects = [effect("t", "y", e) for e in estimates]
    assert AnalysisState.from_json(s.to_json()) == s


def test_nan_and_infinity_survive_a_save_and_load() -> None:
    from whyflow.causal.state import EDAResult

    s = new_state()
    s.eda_result = EDAResult(
        covariate_balance={"constant_col": {"smd": 0.0, "p_value": float("nan")}}, vif_scores={"x": float("inf")}
    )
    again = AnalysisState.from_json(s.to_json())
    assert again.eda_result is not None
    assert again.eda_result.vif_scores["x"] == float("inf")
    p = again.eda_result.covariate_balance["constant_col"]["p_value"]
    assert p != p  # NaN
