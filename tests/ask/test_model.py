"""Model mode against a scripted OpenAI-compatible server on loopback (the only thing mocked).

The model plans, writes broken code, sees the traceback and fixes it; three broken attempts end
at the error node; and every number in the answer still comes from the code that ran.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from tests.ask.test_agents import ask
from tests.llm.scripted import Scripted, ScriptedLLM
from whyflow.ask.state import AskState

PLAN = Scripted(
    content=json.dumps(
        {
            "needs_code": True,
            "needs_evaluation": True,
            "needs_explanation": True,
            "reasoning": "a statistic of one column",
        }
    )
)
BROKEN = Scripted(content="```python\nresult = float(df['pricee'].mean())\n```")
FIXED = Scripted(content="result = float(df['price'].mean())\n")
PROSE = Scripted(content="The typical order costs a little over forty.")


@pytest.fixture
def model_on(scripted_model: Callable[..., ScriptedLLM]) -> Callable[..., ScriptedLLM]:
    return lambda routes: scripted_model(routes, retries=1)


def test_broken_code_then_the_fix_from_the_traceback(model_on, tmp_path: Path, shop: tuple[Path, pd.DataFrame]) -> None:  # type: ignore[no-untyped-def]
    path, frame = shop
    srv = model_on(
        {
            "previous code failed": [FIXED],
            "plan how to answer": [PLAN],
            "Write Python that answers": [BROKEN],
            "explain data-analysis": [PROSE],
            "evaluate the output": [PROSE],
        }
    )
    state: AskState = ask(tmp_path, path, "What is the mean price?")
    assert state.plan is not None and state.plan.mode == "model"
    assert state.attempts == 2 and state.execution_success
    assert "pricee" in state.failed_attempts[0].error
    fix_request = next(
        json.dumps(r["messages"]) for r in srv.chats() if "previous code failed" in json.dumps(r["messages"])
    )
    assert "KeyError" in fix_request and "pricee" in fix_request  # the traceback reached the model
    final = state.final_output
    assert final is not None and final.result == pytest.approx(frame["price"].mean())
    assert f"{frame['price'].mean():.4g}" in final.answer  # the number is the computed one
    assert any(t.startswith("explanation: ") for t in final.reasoning_trace)


def test_three_failures_end_at_the_error_node(model_on, tmp_path: Path, shop: tuple[Path, pd.DataFrame]) -> None:  # type: ignore[no-untyped-def]
    path, _ = shop
    model_on({"plan how to answer": [PLAN], "Write Python that answers": [BROKEN]})
    state: AskState = ask(tmp_path, path, "Which orders look suspicious?")  # no worked example fits
    final = state.final_output
    assert state.attempts == 3 and not state.execution_success and len(state.failed_attempts) == 3
    assert final is not None and final.output_type == "error"
    assert final.answer.startswith("Code execution failed after 3 attempts. Final error:")
    assert "explainer" not in state.completed_steps and "error_reporter" in state.completed_steps


def test_after_two_broken_attempts_the_worked_example_has_the_last_word(
    model_on, tmp_path: Path, shop: tuple[Path, pd.DataFrame]
) -> None:  # type: ignore[no-untyped-def]
    path, frame = shop
    model_on({"plan how to answer": [PLAN], "Write Python that answers": [BROKEN]})
    state: AskState = ask(tmp_path, path, "What is the mean price?")
    assert state.attempts == 3 and state.execution_success and len(state.failed_attempts) == 2
    assert state.final_output is not None and state.final_output.result == pytest.approx(frame["price"].mean())


def test_a_model_that_plans_no_code_for_a_data_question_still_gets_a_computed_answer(
    model_on, tmp_path: Path, shop: tuple[Path, pd.DataFrame]
) -> None:  # type: ignore[no-untyped-def]
    """The real 135M model called ANOVA questions 'conceptual' and answered in prose: a worked example keeps code."""
    path, frame = shop
    prose_plan = Scripted(
        content=json.dumps(
            {"needs_code": False, "needs_evaluation": False, "needs_explanation": True, "reasoning": "explain the idea"}
        )
    )
    model_on(
        {
            "plan how to answer": [prose_plan],
            "Write Python that answers": [FIXED],
            "explain data-analysis": [PROSE],
            "evaluate the output": [PROSE],
        }
    )
    state: AskState = ask(tmp_path, path, "What is the mean price?")
    assert state.plan is not None and state.plan.needs_code and state.plan.route == "code"
    assert "planned no code" in state.plan.reasoning
    assert state.final_output is not None and state.final_output.result == pytest.approx(frame["price"].mean())


def test_code_that_sets_no_result_is_a_failed_attempt(
    model_on, tmp_path: Path, shop: tuple[Path, pd.DataFrame]
) -> None:  # type: ignore[no-untyped-def]
    """The real model's code sometimes ran but assigned nothing; the answer was the word 'None'."""
    path, frame = shop
    silent = Scripted(content="mean_price = df['price'].mean()\n")
    model_on(
        {
            "previous code failed": [FIXED],
            "plan how to answer": [PLAN],
            "Write Python that answers": [silent],
            "explain data-analysis": [PROSE],
            "evaluate the output": [PROSE],
        }
    )
    state: AskState = ask(tmp_path, path, "What is the mean price?")
    assert state.attempts == 2 and "set no `result`" in state.failed_attempts[0].error
    assert state.final_output is not None and state.final_output.result == pytest.approx(frame["price"].mean())


def test_a_chart_of_101_rows_is_refused_with_the_reason(
    model_on, tmp_path: Path, shop: tuple[Path, pd.DataFrame]
) -> None:  # type: ignore[no-untyped-def]
    path, frame = shop
    chart = (
        "result = int(len(df))\n"
        "figure = {'$schema': 'https://vega.github.io/schema/vega-lite/v5.json', 'mark': 'point',\n"
        "          'data': {'values': [{'x': float(v)} for v in df['price'].head(101)]},\n"
        "          'encoding': {'x': {'field': 'x', 'type': 'quantitative'}}}\n"
    )
    model_on({"plan how to answer": [PLAN], "Write Python that answers": [Scripted(content=chart)]})
    state: AskState = ask(tmp_path, path, "Plot every price as a point")
    final = state.final_output
    assert final is not None and final.output_type == "analysis" and final.figure is None and not final.charts
    assert any("the chart was not drawn" in c and "101" in c for c in final.caveats), final.caveats
    assert final.result == len(frame)


def test_every_file_is_a_dataset_the_code_can_use(model_on, tmp_path: Path, shop: tuple[Path, pd.DataFrame]) -> None:  # type: ignore[no-untyped-def]
    path, frame = shop
    extra = tmp_path / "Returns 2024.csv"
    frame.head(17).to_csv(extra, index=False)
    code = "result = {'orders': int(len(datasets['data'])), 'returns': int(len(datasets['returns_2024']))}\n"
    model_on({"plan how to answer": [PLAN], "Write Python that answers": [Scripted(content=code)]})
    state: AskState = ask(tmp_path, path, "How many orders and how many returns are there?", extra=(extra,))
    assert list(state.datasets) == ["data", "returns_2024"]
    assert state.final_output is not None and state.final_output.result == {"orders": len(frame), "returns": 17}
    assert "Dataset 'returns_2024'" in state.data_summary
