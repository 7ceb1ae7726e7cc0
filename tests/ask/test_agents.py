"""The ask agents in deterministic mode through the real runner, sandbox and example library."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from whyflow.ask.state import AskState, ChatMessage
from whyflow.core.status import JobStatus
from whyflow.flows.ask_jobs.job import AskRequest, prepare_ask_job
from whyflow.flows.recipes.builtin import builtin_recipe
from whyflow.flows.recipes.plan import load_plan
from whyflow.flows.running.dispatch import run_single_agent
from whyflow.flows.running.progress import Reporter
from whyflow.flows.running.runner import LocalExecutor, Runner
from whyflow.runtime.data import read_table

ROOT = Path(__file__).resolve().parents[2]
ASK = builtin_recipe("ask")


def ask(
    tmp_path: Path,
    data: Path,
    question: str,
    messages: list[ChatMessage] | None = None,
    recipe: Path = ASK,
    extra: tuple[Path, ...] = (),
    describe: str | None = None,
    metadata: str | None = None,
) -> AskState:
    plan = load_plan(recipe)
    files = [str(data), *map(str, extra)]
    request = AskRequest(
        question, files, recipe=str(recipe), output=str(tmp_path / "job"), describe=describe, metadata=metadata
    )
    folder = prepare_ask_job(request, plan)
    state = folder.load_any()
    assert isinstance(state, AskState)
    if messages:
        state.messages = messages
    Runner(plan, folder, state, LocalExecutor(), Reporter()).run()
    assert state.status is JobStatus.COMPLETED, state.error_message
    assert state.final_output is not None
    return state


def _table(result: dict) -> dict:
    return {row[0]: row[1] for row in result["rows"]}


def test_group_means_come_from_code_that_ran(tmp_path: Path, shop: tuple[Path, pd.DataFrame]) -> None:
    path, frame = shop
    state = ask(tmp_path, path, "What is the average price by region?")
    assert state.plan is not None and state.plan.example_id == "mean_by_group"
    assert state.plan.filled is not None and state.plan.filled.params == {"group": "region", "value": "price"}
    assert state.execution_success and state.attempts == 1
    # The sandbox's active isolation layers reach the state and the trace (issue 14).
    assert state.execution_result is not None and "rlimits" in state.execution_result.layers
    assert state.execution_result.cpu_seconds >= 0
    traces = (tmp_path / "job" / "traces.jsonl").read_text()
    assert "sandbox: " in traces and "rlimits" in traces
    final = state.final_output
    assert final is not None and final.output_type == "analysis" and final.code == state.code
    truth = frame.groupby("region")["price"].mean()
    got = _table(final.result)
    assert set(got) == set(truth.index)
    for region, value in truth.items():
        assert got[region] == pytest.approx(value, rel=1e-9)


def test_rounding_follows_the_question(tmp_path: Path, shop: tuple[Path, pd.DataFrame]) -> None:
    path, frame = shop
    state = ask(tmp_path, path, "What is the mean price? Round to 2 decimal places.")
    assert state.final_output is not None
    assert f"{frame['price'].mean():.2f}" in state.final_output.answer


def test_a_semicolon_file_reaches_the_sandbox_as_the_planner_read_it(
    tmp_path: Path, shop: tuple[Path, pd.DataFrame]
) -> None:
    _, frame = shop
    path = tmp_path / "orders_eu.csv"
    frame.to_csv(path, sep=";", index=False)
    before = path.read_bytes()
    state = ask(tmp_path, path, "What is the mean price? Round to 3 decimal places.")
    assert state.execution_success and state.final_output is not None
    assert f"{frame['price'].mean():.3f}" in state.final_output.answer
    assert path.read_bytes() == before and state.datasets["data"].local_path.endswith("data/data.parquet")


def test_an_old_mac_file_is_read_like_any_other(tmp_path: Path, shop: tuple[Path, pd.DataFrame]) -> None:
    """Lines ending in a bare carriage return (old Mac exports): read_table reads them as the LF
    file, so the planner and the sandbox see the same table."""
    lf_path, frame = shop
    path = tmp_path / "orders_mac.csv"
    path.write_bytes(lf_path.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r"))
    before = path.read_bytes()
    assert b"\n" not in before and before.count(b"\r") == len(frame) + 1
    pd.testing.assert_frame_equal(read_table(path), read_table(lf_path))
    quoted = tmp_path / "quoted_mac.csv"
    quoted.write_bytes(b'name;note;price\r"Smith; J";"said ""hi""";1,5\r"Doe";"x";2,25\r')
    read = read_table(quoted)
    assert read.to_dict("list") == {"name": ["Smith; J", "Doe"], "note": ['said "hi"', "x"], "price": [1.5, 2.25]}
    state = ask(tmp_path, path, "What is the mean price? Round to 3 decimal places.")
    assert state.execution_success and state.final_output is not None
    assert f"{frame['price'].mean():.3f}" in state.final_output.answer
    assert path.read_bytes() == before


def test_a_follow_up_is_resolved_against_the_conversation(tmp_path: Path, shop: tuple[Path, pd.DataFrame]) -> None:
    path, frame = shop
    history = [
        ChatMessage(role="user", content="What is the average price by region?"),
        ChatMessage(role="assistant", content="(a table)"),
    ]
    state = ask(tmp_path, path, "now by year", history)
    assert state.plan is not None and state.plan.parameters["question"] == "What is the average price by year"
    truth = frame.groupby("year")["price"].mean()
    got = {int(k): v for k, v in _table(state.final_output.result).items()}  # type: ignore[union-attr]
    assert got == pytest.approx(truth.to_dict())


def test_a_question_without_a_fitting_example_is_answered_honestly(
    tmp_path: Path, shop: tuple[Path, pd.DataFrame]
) -> None:
    path, _ = shop
    state = ask(tmp_path, path, "Write a sonnet about the ocean tides")
    final = state.final_output
    assert final is not None and final.output_type == "explanation" and final.confidence == 0.0
    assert final.answer.startswith("I can't answer this without a model")
    assert final.examples and all(e.split(" ")[0] in final.answer for e in final.examples)
    assert state.attempts == 0 and state.code is None  # nothing ran, so no number is given


def test_a_chart_is_validated_and_rendered(tmp_path: Path, shop: tuple[Path, pd.DataFrame]) -> None:
    path, _ = shop
    state = ask(tmp_path, path, "Show a bar chart of the average price by region")
    final = state.final_output
    assert final is not None and final.output_type == "visualization"
    assert final.figure is not None and len(final.figure["data"]["values"]) == 4
    assert final.charts and Path(final.charts[0]).exists() and Path(final.charts[0]).read_text().startswith("<svg")


def test_failing_code_is_recorded_with_its_traceback_for_the_next_attempt(
    tmp_path: Path, shop: tuple[Path, pd.DataFrame]
) -> None:
    path, _ = shop
    state = AskState.model_validate(
        {
            "job_id": "j",
            "question": "q",
            "code": "result = df['no_such_column'].mean()\n",
            "datasets": {
                "data": {
                    "name": "data",
                    "source": str(path),
                    "local_path": str(path),
                    "rows": 300,
                    "columns": ["region", "year", "price", "quantity"],
                }
            },
        }
    )
    run_single_agent("code_runner", state, tmp_path)
    assert not state.execution_success and state.attempts == 1
    assert state.failed_attempts[0].attempt == 1 and "no_such_column" in state.failed_attempts[0].error
    assert "Traceback" in state.failed_attempts[0].error or "KeyError" in state.failed_attempts[0].error


@pytest.mark.slow
def test_a_causal_question_runs_the_causal_recipe(tmp_path: Path) -> None:
    from benchmarks.synthetic import linear_confounding

    frame, _ = linear_confounding(600, effect=2.0, seed=5)
    data = tmp_path / "trial.csv"
    frame.to_csv(data, index=False)
    causal = tmp_path / "causal.yaml"
    causal.write_text("name: tiny_causal\nsteps:\n  - agent: data_profiler\n  - agent: effect_estimator\n")
    recipe = tmp_path / "ask.yaml"
    recipe.write_text(
        ASK.read_text().replace(
            "  - agent: causal_runner\n", f"  - agent: causal_runner\n    with: {{recipe: '{causal}'}}\n"
        )
    )
    state = ask(tmp_path, data, "What is the effect of treated on outcome?", recipe=recipe)
    final = state.final_output
    assert state.plan is not None and state.plan.route == "causal"
    assert final is not None and final.output_type == "analysis"
    head = final.result
    assert head["ci_lower"] <= 2.0 <= head["ci_upper"], head
    assert "causal effect of 'treated' on 'outcome'" in final.answer
    assert (tmp_path / "job" / "causal" / "state.json").exists()
