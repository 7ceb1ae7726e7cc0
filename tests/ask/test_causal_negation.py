"""A negated phrase is not the column it contains: "the effect of having no high school degree" is the
opposite of the effect of ``degree`` (its sign flipped), so it is read as ``degree`` only when that is the
column's whole name (``nodegree``); otherwise the question is declined, naming the words it could not place."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from whyflow.ask.planning import plan_question


def _wages(treatment: str) -> pd.DataFrame:
    rng = np.random.default_rng(4)
    has = rng.integers(0, 2, 300)
    return pd.DataFrame(
        {
            treatment: has,
            "age": rng.integers(20, 60, 300),
            "married": rng.integers(0, 2, 300),
            "wages": 20 + 5 * has + rng.normal(0, 2, 300),
        }
    )


@pytest.mark.parametrize(
    "question",
    [
        "What is the effect of having no high school degree on wages?",
        "What is the causal effect of not having a degree on wages?",
        "Estimate the effect of being without a degree on wages.",
    ],
)
def test_a_negated_treatment_is_not_the_column_it_names(question: str) -> None:
    plan, _ = plan_question(question, [], _wages("degree"))
    assert plan.treatment != "degree" and plan.route == "unanswerable", plan.reasoning
    assert "is the opposite of the column 'degree'" in plan.reasoning, plan.reasoning


def test_the_negated_phrase_that_is_a_column_s_whole_name_is_that_column() -> None:
    plan, _ = plan_question("What is the effect of no degree on wages?", [], _wages("nodegree"))
    assert plan.route == "causal" and (plan.treatment, plan.outcome) == ("nodegree", "wages")


def test_a_description_that_holds_the_negation_still_names_its_column() -> None:
    from whyflow.ask._shared import causal_pair

    aliases = {"nodegree": ["no high school degree"]}
    question = "What is the effect of no high school degree on wages?"
    assert causal_pair(question, ["nodegree", "age", "wages"], aliases) == ("nodegree", "wages")
    assert (
        causal_pair("What is the effect of not the new drug on wages?", ["arm", "wages"], {"arm": ["the new drug"]})
        is None
    )


def test_a_control_phrase_naming_two_columns_says_so() -> None:
    question = (
        "What is the effect of degree on wages? Should we control for age and married? Answer with 'yes' or 'no'."
    )
    plan, _ = plan_question(question, [], _wages("degree"))
    assert plan.route == "unanswerable"
    assert "names more than one column (age, married)" in plan.reasoning, plan.reasoning


def test_a_negated_control_names_no_column() -> None:
    question = "What is the effect of degree on wages? Should we control for not married? Answer with 'yes' or 'no'."
    plan, _ = plan_question(question, [], _wages("degree"))
    assert plan.route == "unanswerable"
    assert "'not married', which names no column" in plan.reasoning, plan.reasoning
