"""A worked example's number is given only when no unread word states a condition on the rows."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from whyflow.ask.planning import plan_question

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def jobs() -> pd.DataFrame:
    return pd.read_csv(ROOT / "examples" / "job_training.csv")


@pytest.mark.parametrize(
    "question",
    [
        "What is the correlation between age and earnings?",
        "Compute the correlation between age and earnings, thanks.",
        "What is the average earnings by region?",
        "What is the mean earnings for each region?",
    ],
)
def test_an_example_that_reads_the_rows_still_answers(jobs: pd.DataFrame, question: str) -> None:
    plan, _ = plan_question(question, [], jobs)
    assert plan.route == "code" and plan.filled is not None, plan.reasoning


@pytest.mark.parametrize(
    ("question", "unread"),
    [
        ("What is the correlation between age and earnings of people who live far away?", "live far away"),
        ("What is the average earnings by region for people who never moved?", "never moved"),
        ("What is the correlation between age and earnings for those with more than 3 pets?", "3"),
        ("median earnings for women", "women"),  # no column says who is a woman
        ("What is the standard deviation of earnings among smokers?", "smokers"),
    ],
)
def test_a_dropped_condition_means_no_number(jobs: pd.DataFrame, question: str, unread: str) -> None:
    plan, _ = plan_question(question, [], jobs)
    assert plan.route == "unanswerable", plan.reasoning
    assert unread in plan.reasoning and plan.parameters.get("error")


def test_a_choice_the_example_does_not_make_is_not_answered_with_its_number(jobs: pd.DataFrame) -> None:
    question = 'Is the average age above 40? Please answer with "yes" or "no".'
    plan, _ = plan_question(question, [], jobs)
    assert plan.route == "unanswerable" and "'yes' and 'no'" in plan.reasoning


def test_a_filter_only_the_description_states_is_not_applied(jobs: pd.DataFrame) -> None:
    question = "Records of a programme; 40% of people in the north region were married. How many people are there?"
    plan, _ = plan_question(question, [], jobs)
    if plan.route != "unanswerable":  # answered: then over every row, not the description's region
        assert plan.filled is not None and not plan.filled.filters, plan.filled.filters
    else:
        assert "description" in plan.reasoning or "but not" in plan.reasoning
