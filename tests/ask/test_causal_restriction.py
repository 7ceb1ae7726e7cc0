"""A causal question that restricts the rows ("only consider people aged 20 to 22") gets no effect
from the causal recipe, which runs on every row: its number would be for another population."""

from __future__ import annotations

import numpy as np
import pandas as pd

from whyflow.ask.planning import plan_question


def _frame() -> pd.DataFrame:
    rng = np.random.default_rng(9)
    age = rng.uniform(18, 25, 400)
    alcohol = (age >= 21).astype(int)
    return pd.DataFrame({"age": age, "alcohol": alcohol, "deaths": 90 + 8 * alcohol + rng.normal(0, 3, 400)})


def test_a_restricted_causal_question_is_declined() -> None:
    question = "What is the effect of alcohol on deaths? Please only consider people no older than 22 years."
    plan, _ = plan_question(question, [], _frame())
    assert plan.route == "unanswerable"
    assert "only consider people" in plan.reasoning


def test_a_restriction_to_rows_with_values_still_runs() -> None:
    question = "What is the effect of alcohol on deaths? Only consider rows without missing values."
    plan, _ = plan_question(question, [], _frame())
    assert plan.route == "causal"
