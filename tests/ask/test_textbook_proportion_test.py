"""One proportion read without a model: its point estimate (ask/tools/textbook_proportions.py)
and its one-sample z-test against a stated value (ask/tools/textbook_proportion_test.py), the
gold computed here by statsmodels' proportions_ztest on generated data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportions_ztest

from tests.ask.textbook_answers import textbook_answer
from whyflow.ask.tools.textbook_prompt import split_prompt
from whyflow.ask.tools.textbook_questions import parse_textbook


@pytest.fixture(scope="module")
def poll() -> pd.DataFrame:
    rng = np.random.default_rng(17)
    n = 640
    return pd.DataFrame(
        {
            "stance": rng.choice(["favor", "against"], n, p=[0.56, 0.44]),
            "smoker": rng.choice(["yes", "no"], n, p=[0.2, 0.8]),
            "age": rng.integers(18, 90, n),
        }
    )


def _z(df: pd.DataFrame, column: str, value: str, p0: float, alternative: str = "two-sided") -> tuple[float, float]:
    k, n = int((df[column] == value).sum()), int(df[column].notna().sum())
    z, p = proportions_ztest(k, n, value=p0, alternative=alternative, prop_var=p0)
    return float(z), float(p)


@pytest.mark.parametrize(
    ("wording", "p0", "alternative", "want"),
    [
        (
            "Given the null hypothesis that the proportion of voters in favor is 0.5, conduct a test. Identify the p-value.",
            0.5,
            "two-sided",
            "p",
        ),
        (
            "Test the null hypothesis that the proportion of favor equals 50%. What is the z-statistic?",
            0.5,
            "two-sided",
            "z",
        ),
        (
            "Use a one-sample z-test of the hypothesis that the share of favor is greater than 0.52 and report the p-value.",
            0.52,
            "larger",
            "p",
        ),
        (
            "Is the proportion of smokers less than 25%? Conduct a one-sided test and identify the p-value.",
            0.25,
            "smaller",
            "p",
        ),
    ],
)
def test_one_proportion_z_test(poll: pd.DataFrame, wording: str, p0: float, alternative: str, want: str) -> None:
    column, value = ("smoker", "yes") if "smoker" in wording else ("stance", "favor")
    z, p = _z(poll, column, value, p0, alternative)
    got = textbook_answer(wording, poll)
    assert got is not None, wording
    assert got["value"] == pytest.approx(p if want == "p" else z)
    assert "one-sample z-test" in got["answer"] and "640 rows" in got["answer"]


def test_a_decision_needs_its_stated_level(poll: pd.DataFrame) -> None:
    _, p = _z(poll, "stance", "favor", 0.5)
    ask = "Given the null hypothesis that the proportion of favor is 0.5, will you accept or reject the hypothesis{}?"
    got = textbook_answer(ask.format(" at the 5% significance level") + ' Answer with "accept" or "reject".', poll)
    assert got is not None and got["answer"].startswith("reject" if p < 0.05 else "accept")
    assert textbook_answer(ask.format("") + ' Answer with "accept" or "reject".', poll) is None


def test_a_one_proportion_test_that_is_unclear_gets_no_number(poll: pd.DataFrame) -> None:
    # 'one-sided' with an 'is' claim: which side is unsaid
    assert (
        textbook_answer(
            "Test the hypothesis that the proportion of favor is 0.5 with a one-sided test. Identify the p-value.", poll
        )
        is None
    )
    # a word no reading places
    assert (
        textbook_answer("Test the hypothesis that the proportion of tall favor is 0.5. Identify the p-value.", poll)
        is None
    )
    # a proportion outside (0, 1)
    assert (
        textbook_answer("Test the hypothesis that the proportion of favor is 1.5. Identify the p-value.", poll) is None
    )


def test_the_point_estimate_is_the_share_of_the_value_named() -> None:
    rng = np.random.default_rng(2)
    survey = pd.DataFrame({"quarantine": rng.choice(["favor", "against"], 300, p=[0.7, 0.3])})
    share = float((survey["quarantine"] == "favor").mean())
    context = "A poll asked adults whether they favored a quarantine for travellers.\n\n"
    for wording in (
        "What is the point estimate in this case?",
        "Give the point estimate of the population proportion.",
        "What is the point estimate for the proportion from the poll?",
    ):
        got = textbook_answer(context + wording, survey)
        assert got is not None and got["value"] == pytest.approx(share), wording
        assert "named by the data's description" in got["answer"]
    against = textbook_answer("What is the point estimate of the proportion against?", survey)
    assert against is not None and against["value"] == pytest.approx(1 - share)
    # the point estimate of another quantity is not this one's
    parsed = parse_textbook(split_prompt(context + "What is the point estimate of the mean?"), survey)
    assert parsed is None or parsed.structure != "point_estimate"
    # the description names neither value (or both): which share is unsaid
    assert textbook_answer("A poll asked adults about a quarantine.\n\nWhat is the point estimate?", survey) is None
    both = "A poll asked adults whether they favored or were against a quarantine.\n\nWhat is the point estimate?"
    assert textbook_answer(both, survey) is None
