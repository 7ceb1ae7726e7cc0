"""A causal question that asks to answer with one of listed words ('yes' or 'no').

"Should we control for X?" is answered from the causal recipe's own adjustment: "No" only when the
data shows X is made from the treatment, the outcome or is an identifier; any other yes/no question
about the design gets no estimate, since an effect would answer another question.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.ask.test_agents import ask
from whyflow.ask.answering import causal_answer
from whyflow.ask.planning import listed_answers, plan_question
from whyflow.ask.state import AskPlan, CausalRunResult, NestedLeftOut
from whyflow.causal.dataprep.column_names import ROLES_FROM_VALUES

YES_NO = ["Please answer with 'yes' or 'no'.", 'Answer with "yes" or "no".']
ASKS = [
    "Should we control for the '{x}' variable?",
    "Should we control for {x}?",
    "Do we need to adjust for `{x}`?",
    "Is it right to condition on {x}?",
    "Should we include {x} as a control?",
    "Would you add '{x}' as a covariate?",
    "Do we need to control for {x} as well?",
]


def _trial(n: int, seed: int) -> pd.DataFrame:
    """A randomised test: ``opened`` and ``agreement`` happen only after the email, ``risk`` before it."""
    rng = np.random.default_rng(seed)
    email = rng.integers(0, 2, n)
    risk = rng.uniform(0, 1, n).round(3)
    opened = email * rng.integers(0, 2, n)
    agreement = opened * rng.integers(0, 2, n)
    payments = 600 + 5 * email + 40 * agreement - 50 * risk + rng.normal(0, 20, n)
    return pd.DataFrame(
        {"email": email, "opened": opened, "agreement": agreement, "risk": risk, "payments": payments.round(1)}
    )


def test_the_listed_words_are_read() -> None:
    assert listed_answers("Should we control for it? Please answer with 'yes' or 'no'.") == ["yes", "no"]
    assert listed_answers("What is the effect of email on payments?") == []
    assert listed_answers("Should we control for age? Answer yes or no.") == ["yes", "no"]
    assert listed_answers("Should we control for age? Please answer with yes/no") == ["yes", "no"]
    assert listed_answers("Answer the question: is it yes or no?") == []


@pytest.mark.parametrize(("ask_x", "yes_no"), list(itertools.product(ASKS, YES_NO)))
def test_a_question_whether_to_control_runs_the_recipe_for_that_column(ask_x: str, yes_no: str) -> None:
    frame = _trial(300, 1)
    for x in ("opened", "agreement", "risk"):
        question = f"We study the causal effect of email on payments in a random test. {ask_x.format(x=x)} {yes_no}"
        plan, _ = plan_question(question, [], frame)
        assert plan.route == "causal", (question, plan.reasoning)
        assert (plan.treatment, plan.outcome) == ("email", "payments")
        assert plan.parameters["control_column"] == x, question


@pytest.mark.parametrize(
    ("tail", "said"),
    [
        ("Is the randomisation valid?", "'yes' or 'no', a judgement about the design"),
        ("Should we control for the weather?", "adjust for 'weather', which names no column of the data"),
        ("Do we need to adjust for 'season' as well?", "adjust for 'season', which names no column"),
        ("Should we control for email?", "adjust for 'email', which is the treatment itself"),
        ("Should we condition on payments?", "adjust for 'payments', which is the outcome itself"),
    ],
)
def test_other_yes_no_questions_about_the_design_get_no_estimate_and_say_why(tail: str, said: str) -> None:
    question = f"We study the causal effect of email on payments in a random test. {tail} {YES_NO[0]}"
    plan, _ = plan_question(question, [], _trial(300, 1))
    assert plan.route == "unanswerable", question
    assert said in plan.reasoning, plan.reasoning


def test_a_control_question_after_a_colon_ends_the_outcome() -> None:
    frame = _trial(300, 1)
    for x in ("opened", "risk"):
        question = f"Effect of email on payments: do we need to adjust for {x}? {YES_NO[1]}"
        plan, _ = plan_question(question, [], frame)
        assert plan.route == "causal" and (plan.treatment, plan.outcome) == ("email", "payments"), plan.reasoning
        assert plan.parameters["control_column"] == x


def test_the_same_question_without_listed_words_runs_the_causal_recipe() -> None:
    question = "We study the causal effect of email on payments in a random test."
    plan, _ = plan_question(question, [], _trial(300, 1))
    assert plan.route == "causal"
    assert "control_column" not in plan.parameters


def _plan(x: str) -> AskPlan:
    return AskPlan(
        needs_code=False,
        needs_evaluation=False,
        route="causal",
        treatment="email",
        outcome="payments",
        parameters={"control_column": x},
    )


@pytest.mark.parametrize("role", sorted(ROLES_FROM_VALUES))
def test_no_is_said_only_on_a_role_the_data_shows(role: str) -> None:
    left = [NestedLeftOut(column="opened", role=role, reason="the reason the rule gave", from_values=True)]
    said = causal_answer(CausalRunResult(job_dir="j", status="completed", left_out=left), _plan("opened"))
    assert said.answer.startswith("No.") and "the reason the rule gave" in said.answer
    assert said.result == {"answer": "no", "column": "opened", "role": role, "reason": "the reason the rule gave"}


@pytest.mark.parametrize(
    ("left", "adjusted", "words"),
    [
        ([NestedLeftOut(column="opened", role="post_treatment", reason="a descendant in the graph")], [], "left"),
        ([], ["opened"], "adjusts for 'opened'"),
        ([], [], "neither adjusts"),
    ],
)
def test_without_the_data_s_evidence_no_yes_or_no_is_given(
    left: list[NestedLeftOut], adjusted: list[str], words: str
) -> None:
    result = CausalRunResult(job_dir="j", status="completed", left_out=left, adjusted_for=adjusted)
    said = causal_answer(result, _plan("opened"))
    assert said.answer.startswith("I can't answer this with yes or no") and words in said.answer
    assert said.output_type == "error" and not said.answer.lower().startswith(("yes", "no"))


def test_through_the_ask_recipe_a_consequence_of_the_treatment_is_not_controlled_for(tmp_path: Path) -> None:
    data = tmp_path / "collections.csv"
    _trial(600, 3).to_csv(data, index=False)
    ask_about = "We study the causal effect of email on payments in a random test. Should we control for {x}? "
    state = ask(tmp_path / "a", data, ask_about.format(x="agreement") + YES_NO[0])
    final = state.final_output
    assert final is not None and final.answer.startswith("No."), final.answer
    assert final.result is not None and final.result["role"] in ROLES_FROM_VALUES
    # A covariate measured before the email: the data gives no reason either way, so no yes or no.
    state = ask(tmp_path / "b", data, ask_about.format(x="risk") + YES_NO[0])
    final = state.final_output
    assert final is not None and final.answer.startswith("I can't answer"), final.answer
