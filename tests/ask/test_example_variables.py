"""A worked example whose columns are not the variable set the question states gives no number:
'take all provided variables into consideration' is not a regression on two of them."""

from __future__ import annotations

import numpy as np
import pandas as pd

from whyflow.ask.planning import plan_question


def _frame() -> pd.DataFrame:
    rng = np.random.default_rng(6)
    n = 200
    x = rng.normal(size=(n, 4))
    return pd.DataFrame({"wage": x @ [1.0, 2.0, 0.5, 0.1] + rng.normal(size=n), **{f"x{i}": x[:, i] for i in range(4)}})


def test_a_regression_on_two_columns_does_not_answer_one_on_all() -> None:
    question = "Regress wage on x0 and x1. Please take all provided variables into consideration."
    plan, _ = plan_question(question, [], _frame())
    assert plan.route == "unanswerable"
    assert "all 5 provided variables" in plan.reasoning


def test_the_named_variables_must_be_the_ones_used() -> None:
    question = "Regress wage on x0 and x1. Do not use variables other than 'wage', 'x0' and 'x2'."
    plan, _ = plan_question(question, [], _frame())
    assert plan.route == "unanswerable"


def test_the_regression_is_run_when_no_variable_set_is_stated() -> None:
    plan, _ = plan_question("Regress wage on x0 and x1.", [], _frame())
    assert plan.route == "code" and plan.filled is not None
    assert plan.filled.example_id == "multiple_regression"
