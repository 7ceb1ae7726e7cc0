"""A causal question that asks to answer with one of listed words ('yes' or 'no') is a judgement
about the design; an effect estimate would answer another question, so no number is given."""

from __future__ import annotations

import numpy as np
import pandas as pd

from whyflow.ask.planning import listed_answers, plan_question


def _frame() -> pd.DataFrame:
    rng = np.random.default_rng(1)
    n = 300
    email = rng.integers(0, 2, n)
    opened = email * rng.integers(0, 2, n)
    return pd.DataFrame({"email": email, "opened": opened, "payments": 600 + 5 * email + rng.normal(0, 20, n)})


def test_the_listed_words_are_read() -> None:
    assert listed_answers("Should we control for it? Please answer with 'yes' or 'no'.") == ["yes", "no"]
    assert listed_answers("What is the effect of email on payments?") == []


def test_a_yes_no_causal_question_gets_no_estimate() -> None:
    question = (
        "We study the causal effect of email on payments in a random test. "
        "Should we control for the 'opened' variable? Please answer with 'yes' or 'no'."
    )
    plan, _ = plan_question(question, [], _frame())
    assert plan.route == "unanswerable"
    assert "'yes' or 'no'" in plan.reasoning


def test_the_same_question_without_listed_words_runs_the_causal_recipe() -> None:
    question = "We study the causal effect of email on payments in a random test."
    plan, _ = plan_question(question, [], _frame())
    assert plan.route == "causal"
