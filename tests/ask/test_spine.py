"""The spine's second state model, step conditions and general loops (toy agents, real runner)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from tests.ask.toy_agents import registry
from whyflow.ask.state import AskState
from whyflow.core.agent import Agent, AgentParams, check_contract
from whyflow.core.errors import AgentRegistrationError
from whyflow.core.status import JobStatus
from whyflow.flows.ask_jobs.job import AskRequest, prepare_ask_job
from whyflow.flows.errors import RecipeValidationError
from whyflow.flows.recipes.builtin import builtin_recipe
from whyflow.flows.recipes.conditions import ConditionError, check_condition, evaluate, parse_condition
from whyflow.flows.recipes.plan import load_plan
from whyflow.flows.running.progress import Reporter
from whyflow.flows.running.runner import LocalExecutor, Runner

RECIPES = Path(__file__).resolve().parents[1] / "fixtures" / "recipes"


# ---- the expression language -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plan.needs_code", True),
        ("not plan.needs_evaluation", True),
        ("plan.needs_code and attempts < 3", True),
        ("attempts >= 2 or execution_success", False),
        ('plan.route == "code"', True),
        ('plan.route in ["causal", "conceptual"]', False),
        ("failed_attempts[-1].attempt == 1", True),
        ("failed_attempts[5].attempt == 1", False),
        ("final_output.answer == None", True),
    ],
)
def test_conditions_evaluate_on_the_state(text: str, expected: bool) -> None:
    state = AskState.model_validate(
        {
            "job_id": "j",
            "question": "q",
            "plan": {"needs_code": True, "route": "code"},
            "attempts": 1,
            "failed_attempts": [{"attempt": 1, "code": "x", "error": "e"}],
        }
    )
    condition = parse_condition(text)
    check_condition(condition, AskState)
    assert bool(evaluate(condition, state)) is expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("__import__('os').system('x')", "Call is not allowed"),
        ("plan.needs_code + 1", "BinOp is not allowed"),
        ("lambda: 1", "Lambda is not allowed"),
        ("failed_attempts[i]", "only an integer index"),
        ("plan.", "not a valid expression"),
        ("attempts is None", "operator Is is not allowed"),
    ],
)
def test_anything_outside_the_language_is_refused(text: str, message: str) -> None:
    with pytest.raises(ConditionError, match=message):
        parse_condition(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("plan.needs_cod", "AskPlan has no field 'needs_cod' (did you mean 'needs_code'?)"),
        ("execution_sucess", "AskState has no field 'execution_sucess' (did you mean 'execution_success'?)"),
        ("question.words", "a str value has no attribute 'words'"),
        ("attempts[0]", "only a list field can be indexed"),
    ],
)
def test_conditions_are_checked_against_the_state_model(text: str, message: str) -> None:
    with pytest.raises(ConditionError, match=re.escape(message)):
        check_condition(parse_condition(text), AskState)


# ---- validation with file:line ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "line", "message"),
    [
        ("ask_bad_condition.yaml", 6, "when: 'plan.needs_explanaton': AskPlan has no field 'needs_explanaton'"),
        ("ask_unsafe_condition.yaml", 6, 'until: \'__import__("os").system("true")\': Call is not allowed'),
        (
            "ask_wrong_state.yaml",
            5,
            "agent: 'data_profiler' works on the analysis state, but this recipe runs on the ask state",
        ),
        ("loop_unknown_until.yaml", 5, "CritiqueFeedback has no field 'decison' (did you mean 'decision'?)"),
    ],
)
def test_bad_recipes_are_rejected_at_file_and_line(name: str, line: int, message: str) -> None:
    with pytest.raises(RecipeValidationError) as caught:
        load_plan(RECIPES / name)
    text = str(caught.value)
    assert f"{RECIPES / name}:{line}:" in text and message in text, text


def test_shipped_ask_recipe_is_valid_and_runs_on_the_ask_state() -> None:
    plan = load_plan(builtin_recipe("ask"))
    assert plan.state_model is AskState and plan.spec.state == "ask"
    assert [n.key for n in plan.agent_nodes()][:4] == [
        "question_planner",
        "code_writer",
        "code_runner",
        "error_reporter",
    ]
    assert {"question", "datasets", "data_summary", "messages"} <= plan.inputs


def test_agents_declare_their_state_model_and_contracts_are_checked_against_it() -> None:
    class Wrong(Agent):
        NAME = "wrong"
        STATE_MODEL = AskState
        REQUIRED_STATE_FIELDS = ("data_profile",)
        WRITES_STATE_FIELDS = ("plan", "completed_steps")
        JOB_STATUS = JobStatus.PROFILING
        Params = AgentParams

    with pytest.raises(AgentRegistrationError) as caught:
        check_contract(Wrong)
    assert "'data_profile', which is not an AskState field" in str(caught.value)
    assert "'completed_steps', which only the runner may write" in str(caught.value)


# ---- loops and conditions through the runner -------------------------------------------------
def _job(tmp_path: Path, overrides: dict[str, str]):  # type: ignore[no-untyped-def]
    data = tmp_path / "d.csv"
    pd.DataFrame({"x": [1, 2, 3]}).to_csv(data, index=False)
    plan = load_plan(RECIPES / "ask_toy_loop.yaml", overrides, registry=registry())
    folder = prepare_ask_job(
        AskRequest("q?", [str(data)], recipe=str(RECIPES / "ask_toy_loop.yaml"), output=str(tmp_path / "job")), plan
    )
    return plan, folder


def test_loop_exits_when_its_condition_holds(tmp_path: Path) -> None:
    plan, folder = _job(tmp_path, {"toy_flaky_runner.succeed_at": "2"})
    state = Runner(plan, folder, folder.load_any(), LocalExecutor(), Reporter()).run()
    assert isinstance(state, AskState) and state.status is JobStatus.COMPLETED
    assert state.attempts == 2 and state.execution_success
    assert state.final_output is not None and state.final_output.answer == "answered after 2 attempt(s)"
    assert "toy_flaky_runner@2" in state.completed_steps and "toy_flaky_runner@3" not in state.completed_steps
    assert "toy_ask_reporter" not in state.completed_steps


def test_exhausted_loop_runs_on_exhausted_and_ends_the_run(tmp_path: Path) -> None:
    plan, folder = _job(tmp_path, {"toy_flaky_runner.succeed_at": "0"})
    Runner(plan, folder, folder.load_any(), LocalExecutor(), Reporter()).run()
    saved = folder.load_any()
    assert isinstance(saved, AskState) and saved.status is JobStatus.COMPLETED
    assert saved.attempts == 3 and not saved.execution_success
    assert saved.final_output is not None and saved.final_output.answer == "failed after 3 attempts: boom 3"
    assert "toy_ask_explainer" not in saved.completed_steps  # the run ended at the error node


def test_a_false_condition_skips_the_loop(tmp_path: Path) -> None:
    plan, folder = _job(tmp_path, {"toy_ask_planner.needs_code": "false"})
    state = Runner(plan, folder, folder.load_any(), LocalExecutor(), Reporter()).run()
    assert isinstance(state, AskState)
    assert state.attempts == 0 and not any(k.startswith("toy_flaky_runner") for k in state.completed_steps)
    assert state.final_output is not None and state.final_output.answer == "answered after 0 attempt(s)"


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("now by year", "What is the average price by year"),
        ("and by year?", "What is the average price by year"),
        ("what about the median?", "What is the median price by region"),
        ("Which region sells most?", "Which region sells most?"),  # not a follow-up
    ],
)
def test_follow_ups_are_rewritten_against_the_previous_question(question: str, expected: str) -> None:
    from whyflow.ask._shared import resolve_follow_up
    from whyflow.ask.state import ChatMessage

    history = [
        ChatMessage(role="user", content="What is the average price by region?"),
        ChatMessage(role="assistant", content="(a table)"),
    ]
    assert resolve_follow_up(question, history) == expected
    assert resolve_follow_up(question, []) == question  # nothing to follow
