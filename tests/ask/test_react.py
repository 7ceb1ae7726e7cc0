"""whyflow/recipes/ask_react.yaml: the data scientist's ReAct loop (seed 002) on 003's runtime.

Real DuckDB, sandbox and runner; the model's turns come from a scripted OpenAI-compatible
server on loopback (the only thing that stands in). Without a model, the recipe gives the same
answers as whyflow/recipes/ask.yaml through the same tool functions.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.ask.test_agents import ask
from tests.llm.scripted import Scripted, ScriptedLLM
from whyflow.ask.react_loop import DIVERGENCE
from whyflow.ask.react_state import ALLOWED, InvalidStateTransition, Runtime, RuntimeState, call_key
from whyflow.ask.state import AskState
from whyflow.ask.tools.analysis import ExecuteCodeArgs, ProfileDataArgs, ProfileFindings, SqlQueryCall, profile_data
from whyflow.flows.recipes.builtin import builtin_recipe

ROOT = Path(__file__).resolve().parents[2]
REACT = builtin_recipe("ask_react")
MEAN = "result = float(df['price'].mean())"


def call(name: str, **arguments: Any) -> Scripted:
    """A native tool call."""
    return Scripted(content="", tool_calls=[(name, json.dumps(arguments))])


@pytest.fixture
def model(scripted_model: Callable[..., ScriptedLLM]) -> Callable[..., ScriptedLLM]:
    return scripted_model


def _react(tmp_path: Path, data: Path, question: str) -> AskState:
    return ask(tmp_path, data, question, recipe=REACT)


def _deterministic_answer(tmp_path: Path, data: Path, question: str) -> str:
    state = ask(tmp_path / "plain", data, question)
    assert state.final_output is not None
    return state.final_output.answer


# ---- the runtime alone ---------------------------------------------------------------------------
def test_the_runtime_allows_exactly_003s_transitions() -> None:
    expected = {
        "planning": {"data_fetching", "analyzing", "presenting", "completed"},
        "data_fetching": {"analyzing", "presenting", "error"},
        "analyzing": {"presenting", "data_fetching", "error"},
        "presenting": {"completed", "analyzing", "error"},
        "error": {"planning", "completed"},
        "completed": set(),
    }
    assert {str(k): {str(v) for v in vs} for k, vs in ALLOWED.items()} == expected
    for source in RuntimeState:
        for target in RuntimeState:
            if source == target:
                continue
            rt = Runtime()
            rt.state = source
            if str(target) in expected[str(source)]:
                rt.transition(target, "test")
                assert rt.state is target and rt.transitions[-1].accepted
            else:
                with pytest.raises(InvalidStateTransition, match="^invalid_state: "):
                    rt.transition(target, "test")
                assert rt.state is source and rt.counters.invalid_state == 1
                assert rt.transitions[-1].code == "invalid_state" and not rt.transitions[-1].accepted


def test_arguments_from_any_model_are_normalised() -> None:
    nested = ExecuteCodeArgs.model_validate(
        {"arguments": json.dumps({"python": ["x = 1", "result = x"], "timeout": "45s"})}
    )
    assert nested.code == "x = 1\nresult = x" and nested.timeout_s == 45.0
    fenced = ExecuteCodeArgs.model_validate({"source": "```python\nresult = 2\n```", "timeout_seconds": "500ms"})
    assert fenced.code == "result = 2\n" and fenced.timeout_s == 0.5
    assert SqlQueryCall.model_validate({"sql": "SELECT 1"}).query == "SELECT 1"
    assert call_key("sql_query", {"query": "SELECT  1", "description": ""}) == call_key(
        "sql_query", {"query": "SELECT 1"}
    )


def test_profile_data_reports_the_asked_columns(shop: tuple[Path, pd.DataFrame]) -> None:
    _, frame = shop
    found = profile_data(ProfileDataArgs(columns=["price", "colour"], check_requirements=["colour"]), frame)
    assert isinstance(found, ProfileFindings)
    assert found.columns_found == ["price"] and found.columns_missing == ["colour"] and not found.can_proceed
    assert found.quality["price"].missing == 0 and found.issues == ["column 'colour' is not in the data"]


# ---- without a model: whyflow/recipes/ask.yaml's answers -----------------------------------------------
@pytest.mark.parametrize(
    "question",
    [
        "What is the average price by region?",
        "What is the mean price? Round to 2 decimal places.",
        "Show a histogram of price",
        "Translate this into French",
    ],
)
def test_without_a_model_the_answers_are_ask_yamls(
    question: str, tmp_path: Path, shop: tuple[Path, pd.DataFrame]
) -> None:
    path, _ = shop
    plain = ask(tmp_path / "plain", path, question)
    state = _react(tmp_path, path, question)
    assert plain.final_output is not None and state.final_output is not None
    skip = {"reasoning_trace", "charts"}
    assert state.final_output.model_dump(exclude=skip) == plain.final_output.model_dump(exclude=skip)
    runtime = state.runtime
    assert runtime is not None and runtime.mode == "deterministic" and runtime.final_state == "completed"
    assert all(t.accepted for t in runtime.transitions) and runtime.counters.invalid_state == 0
    traces = (tmp_path / "job" / "traces.jsonl").read_text()
    assert '"transitions"' in traces and "duplicate_artifact_prevented" in traces


# ---- with a (scripted) model -----------------------------------------------------------------------
def test_a_final_answer_without_validation_is_validated_first(
    model, tmp_path: Path, shop: tuple[Path, pd.DataFrame]
) -> None:  # type: ignore[no-untyped-def]
    path, frame = shop
    srv = model([call("execute_code", code=MEAN), call("finalize")])
    state = _react(tmp_path, path, "What is the mean price?")
    rt = state.runtime
    assert rt is not None and rt.mode == "model" and rt.ended_by == "finalize"
    assert rt.counters.forced_validations == 1
    forced = [c for c in rt.tool_calls if c.tool == "validate_results"]
    assert len(forced) == 1 and forced[0].origin == "runtime"
    assert state.final_output is not None and state.final_output.result == pytest.approx(frame["price"].mean())
    assert [(t.source, t.target) for t in rt.transitions] == [
        ("planning", "analyzing"),
        ("analyzing", "presenting"),
        ("presenting", "completed"),
    ]
    assert len(srv.chats()) == 2 and "Artifacts so far" in json.dumps(srv.chats()[1]["messages"])


def test_the_same_failing_call_three_times_forces_divergence_then_the_deterministic_path(
    model, tmp_path: Path, shop: tuple[Path, pd.DataFrame]
) -> None:  # type: ignore[no-untyped-def]
    path, _ = shop
    broken = call("execute_code", code="result = df['pricee'].mean()")
    srv = model([broken, broken, broken])
    state = _react(tmp_path, path, "What is the mean price?")
    rt = state.runtime
    assert rt is not None and rt.mode == "model_fallback"
    assert rt.counters.code_failures == 1 and rt.counters.duplicate_tool_call_skipped == 2
    assert rt.counters.loop_detections == 2 and "loop persisted" in rt.ended_by
    third = json.dumps(srv.chats()[2]["messages"])
    assert DIVERGENCE.splitlines()[0] in third and "Previous failed attempts" in third and "pricee" in third
    assert state.final_output is not None
    assert state.final_output.answer == _deterministic_answer(tmp_path, path, "What is the mean price?")


def test_an_invalid_transition_is_refused_and_the_turn_goes_on(
    model, tmp_path: Path, shop: tuple[Path, pd.DataFrame]
) -> None:  # type: ignore[no-untyped-def]
    path, frame = shop
    model(
        [
            call("execute_code", code=MEAN),
            call("validate_results"),
            call("output_text", text="The mean price."),
            call("sql_query", query="SELECT COUNT(*) FROM data"),
            call("finalize"),
        ]
    )
    state = _react(tmp_path, path, "What is the mean price?")
    rt = state.runtime
    assert rt is not None and rt.mode == "model" and rt.counters.invalid_state == 1
    rejected = [t for t in rt.transitions if not t.accepted]
    assert [(t.source, t.target, t.code) for t in rejected] == [("presenting", "data_fetching", "invalid_state")]
    refused = next(c for c in rt.tool_calls if c.tool == "sql_query")
    assert refused.status == "refused" and refused.reason == "invalid_state"
    assert state.final_output is not None and state.final_output.result == pytest.approx(frame["price"].mean())


def test_an_equivalent_artifact_is_not_created_twice(model, tmp_path: Path, shop: tuple[Path, pd.DataFrame]) -> None:  # type: ignore[no-untyped-def]
    path, frame = shop
    model(
        [
            call("sql_query", query="SELECT AVG(price) AS m FROM data", description="mean price"),
            call("sql_query", query="SELECT avg(price) AS m FROM data WHERE 1 = 1", description="mean price again"),
            call("sql_query", query="SELECT AVG(price) AS m FROM data", description="mean price"),
            call("validate_results"),
            call("finalize"),
        ]
    )
    state = _react(tmp_path, path, "What is the mean price?")
    rt = state.runtime
    assert rt is not None and rt.mode == "model"
    assert rt.counters.duplicate_artifact_prevented == 1 and rt.counters.duplicate_tool_call_skipped == 1
    assert [a.type for a in rt.artifacts] == ["query_result"] and rt.artifacts[0].producer == "sql"
    assert rt.intents and "1 rows" in rt.intents[0] and "measures m" in rt.intents[0]
    assert state.final_output is not None and state.final_output.result == pytest.approx(frame["price"].mean())


def test_an_empty_code_payload_gets_one_guided_retry(model, tmp_path: Path, shop: tuple[Path, pd.DataFrame]) -> None:  # type: ignore[no-untyped-def]
    path, frame = shop
    srv = model(
        [
            call("execute_code", code=""),
            call("execute_code", python=MEAN, timeout="20s"),
            call("validate_results"),
            call("finalize"),
        ]
    )
    state = _react(tmp_path, path, "What is the mean price?")
    rt = state.runtime
    assert rt is not None and rt.mode == "model"
    c = rt.counters
    assert c.empty_python_payload_retried == 1 and c.empty_python_payload_recovered == 1 and c.retry_success_rate == 1.0
    assert "requires a non-empty 'code' string" in json.dumps(srv.chats()[1]["messages"])
    assert state.final_output is not None and state.final_output.result == pytest.approx(frame["price"].mean())


def test_a_tool_call_written_as_text_json_is_used(model, tmp_path: Path, shop: tuple[Path, pd.DataFrame]) -> None:  # type: ignore[no-untyped-def]
    path, frame = shop
    code = json.dumps({"name": "execute_code", "arguments": {"code": MEAN}})
    model(
        [
            Scripted(content=f"I will compute the mean.\n```json\n{code}\n```"),
            Scripted(content='<tool_call>{"name": "validate_results", "arguments": {}}</tool_call>'),
            Scripted(content='{"name": "finalize", "arguments": {"answer": "The mean price is computed."}}'),
        ]
    )
    state = _react(tmp_path, path, "What is the mean price?")
    rt = state.runtime
    assert rt is not None and rt.mode == "model" and rt.counters.forced_validations == 0
    assert [c.tool for c in rt.tool_calls] == ["execute_code", "validate_results", "finalize"]
    assert state.final_output is not None and state.final_output.result == pytest.approx(frame["price"].mean())


def test_junk_gets_one_corrective_turn_then_the_deterministic_path(
    model, tmp_path: Path, shop: tuple[Path, pd.DataFrame]
) -> None:  # type: ignore[no-untyped-def]
    path, _ = shop
    srv = model([call("run_sql", query="SELECT 1"), call("execute_code", code=MEAN, timeout_s="forever")])
    state = _react(tmp_path, path, "What is the mean price?")
    rt = state.runtime
    assert rt is not None and rt.mode == "model_fallback" and rt.counters.corrective_turns == 2
    assert len(srv.chats()) == 2 and "was rejected" in json.dumps(srv.chats()[1]["messages"])
    assert state.final_output is not None
    assert state.final_output.answer == _deterministic_answer(tmp_path, path, "What is the mean price?")


def test_at_the_budgets_end_the_best_result_comes_with_caveats(
    model, tmp_path: Path, shop: tuple[Path, pd.DataFrame]
) -> None:  # type: ignore[no-untyped-def]
    path, frame = shop
    model(
        [
            call("profile_data"),
            call("sql_query", query="SELECT AVG(price) AS m FROM data"),
            call("profile_data", columns=["price"]),
            call("profile_data", columns=["region"]),
            call("profile_data", columns=["quantity"]),
            call("finalize"),
        ]
    )
    state = _react(tmp_path, path, "What is the mean price?")
    rt = state.runtime
    assert rt is not None and rt.complexity == "simple" and rt.budget == 5 and rt.iterations == 5
    assert rt.ended_by.startswith("graceful degradation: the budget of 5")
    final = state.final_output
    assert final is not None and final.result == pytest.approx(frame["price"].mean()) and final.confidence <= 0.6
    assert any("stopped before its final answer" in c for c in final.caveats)
    assert rt.counters.forced_validations == 1  # the best result is validated before it is shown


def test_write_code_from_an_approach_in_words_then_execute_the_written_code(
    model, tmp_path: Path, shop: tuple[Path, pd.DataFrame]
) -> None:  # type: ignore[no-untyped-def]
    path, frame = shop
    model(
        [
            call("profile_data", columns=["price"]),
            call("write_code", approach="the mean of price"),
            Scripted(content=f"```python\n{MEAN}\n```"),
            call("execute_code"),
            call("validate_results"),
            call("explain_findings", explanation="The mean price is 12345.", caveats=["orders only"]),
            call("finalize"),
        ]
    )
    state = _react(tmp_path, path, "What is the mean price? Test your code.")  # 'test': a standard budget of 8
    rt = state.runtime
    assert rt is not None and rt.mode == "model" and rt.budget == 8 and rt.counters.empty_python_payload_retried == 0
    assert [(c.tool, c.status) for c in rt.tool_calls] == [
        ("profile_data", "ok"),
        ("write_code", "ok"),
        ("execute_code", "ok"),
        ("validate_results", "ok"),
        ("explain_findings", "ok"),
        ("finalize", "ok"),
    ]
    final = state.final_output
    assert final is not None and final.code == MEAN + "\n" and final.result == pytest.approx(frame["price"].mean())
    assert "orders only" in final.caveats and not any("12345" in t for t in final.reasoning_trace)


def test_the_answer_artifact_carries_the_runtime_summary() -> None:
    from whyflow.ask.state import FinalOutput, RuntimeSummary, RuntimeTransition
    from whyflow.flows.ask_jobs.flow import _markdown

    runtime = RuntimeSummary(
        mode="deterministic",
        complexity="simple",
        budget=5,
        final_state="completed",
        ended_by="finalize",
        transitions=[RuntimeTransition(step=1, source="planning", target="analyzing", cause="write_code")],
    )
    state = AskState(
        job_id="j", question="q?", final_output=FinalOutput(answer="a", output_type="analysis"), runtime=runtime
    )
    text = _markdown(state, {})
    assert "## Runtime" in text and "- invalid_state: 0" in text and "planning → analyzing" in text


def test_a_follow_up_turn_sees_the_earlier_artifacts_and_does_not_recreate_them(
    tmp_path: Path, shop: tuple[Path, pd.DataFrame]
) -> None:
    from whyflow.ask.state import ChatMessage
    from whyflow.flows.ask_jobs.job import save_turn

    path, _ = shop
    question = "What is the average price by region?"
    first = _react(tmp_path / "one", path, question)
    save_turn(tmp_path, "s", first)
    history = [ChatMessage.model_validate(m) for m in json.loads((tmp_path / "sessions" / "s.json").read_text())]
    assert first.runtime is not None and history[1].data["artifacts"]
    again = ask(tmp_path / "two", path, question, messages=history, recipe=REACT)  # "once more, please"
    rt = again.runtime
    assert rt is not None and rt.counters.duplicate_artifact_prevented >= 2  # the code, result and table exist
    assert [a.id for a in rt.artifacts][: len(first.runtime.artifacts)] == [
        f"earlier_{i + 1}" for i in range(len(first.runtime.artifacts))
    ]
    assert again.final_output is not None and first.final_output is not None
    assert again.final_output.result == first.final_output.result


@pytest.mark.parametrize(("rerun", "skipped"), [(False, 1), (True, 0)])
def test_identical_calls_are_skipped_unless_the_user_asked_to_rerun(
    rerun: bool, skipped: int, tmp_path: Path, shop: tuple[Path, pd.DataFrame]
) -> None:
    from whyflow.ask.toolbox import Toolbox

    path, frame = shop
    box = Toolbox(question="q", frame=frame, datasets={"data": str(path)}, job_dir=tmp_path, allow_rerun=rerun)
    query = SqlQueryCall(query="SELECT COUNT(*) AS n FROM data")
    statuses = [box.call("sql_query", query, "model").status for _ in range(2)]
    box.close()
    assert statuses == (["ok", "ok"] if rerun else ["ok", "skipped"])
    assert box.runtime.counters.duplicate_tool_call_skipped == skipped
    assert box.runtime.counters.duplicate_artifact_prevented == (1 if rerun else 0)  # a rerun still makes no twin


def test_three_failed_code_runs_end_the_loop(model, tmp_path: Path, shop: tuple[Path, pd.DataFrame]) -> None:  # type: ignore[no-untyped-def]
    path, _ = shop
    model([call("execute_code", code=f"result = df['{name}'].mean()") for name in ("pricee", "prices", "cost")])
    state = _react(tmp_path, path, "What is the mean price? Test it.")
    rt = state.runtime
    assert rt is not None and rt.mode == "model_fallback" and rt.counters.code_failures == 3
    assert rt.ended_by == "3 failed code runs" and rt.counters.loop_detections == 1  # diverted after the second
    assert state.final_output is not None and state.final_output.output_type == "analysis"


def test_two_failed_validations_present_the_best_result_with_caveats(
    model, tmp_path: Path, shop: tuple[Path, pd.DataFrame]
) -> None:  # type: ignore[no-untyped-def]
    path, _ = shop
    model(
        [
            call("execute_code", code="result = df[df['price'] < 0]"),
            call("finalize"),
            call("execute_code", code="result = df[df['price'] < -1]"),
            call("validate_results"),
        ]
    )
    state = _react(tmp_path, path, "What is the mean price? Test it.")
    rt = state.runtime
    assert rt is not None and rt.counters.validation_failures == 2 and rt.counters.forced_validations >= 1
    assert rt.ended_by == "graceful degradation: 2 failed validations"
    final = state.final_output
    assert final is not None and final.confidence <= 0.4
    assert any("validation found: the result table is empty" in c for c in final.caveats)
