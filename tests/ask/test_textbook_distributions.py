"""One numeric column's distribution read without a model (ask/tools/textbook_distributions.py):
a given value's z-score and a fitted distribution's parameter, the gold computed here by numpy
and scipy's fits on generated data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from tests.ask.textbook_answers import textbook_answer


@pytest.fixture(scope="module")
def clinic() -> pd.DataFrame:
    rng = np.random.default_rng(31)
    n = 400
    return pd.DataFrame(
        {
            "height": rng.normal(170, 9, n).round(1),
            "wait_minutes": rng.exponential(12.5, n).round(2),
            "visits": rng.poisson(3.2, n),
            "ward": rng.choice(["a", "b"], n),
        }
    )


@pytest.mark.parametrize(
    "wording",
    [
        "What is the z-score of a height of 185 cm?",
        "Compute the standardized value for height 185.",
        "How many standard deviations above the mean is a height of 185 cm?",
    ],
)
def test_the_z_score_of_a_given_value(clinic: pd.DataFrame, wording: str) -> None:
    gold = (185 - clinic["height"].mean()) / clinic["height"].std(ddof=1)
    got = textbook_answer(wording, clinic)
    assert got is not None, wording
    assert got["value"] == pytest.approx(gold) and "400 known values" in got["answer"]


@pytest.mark.parametrize(
    ("wording", "gold"),
    [
        ("Fit an exponential distribution to wait_minutes. What is its rate?", "exp_rate"),
        ("If the wait minutes follow an exponential distribution, estimate the rate parameter.", "exp_rate"),
        (
            "What is the maximum likelihood estimate of lambda for an exponential distribution fitted to wait_minutes?",
            "exp_rate",
        ),
        ("Suppose height is normally distributed. Estimate the mean of the fitted distribution.", "norm_mean"),
        ("Fit a normal distribution to height: what is its standard deviation?", "norm_sd"),
        ("If visits follow a Poisson distribution, what is the estimated rate?", "poisson"),
    ],
)
def test_a_fitted_distributions_parameter(clinic: pd.DataFrame, wording: str, gold: str) -> None:
    loc, scale = stats.norm.fit(clinic["height"])
    _, exp_scale = stats.expon.fit(clinic["wait_minutes"], floc=0)
    expected = {
        "exp_rate": 1 / exp_scale,
        "norm_mean": loc,
        "norm_sd": scale,
        "poisson": clinic["visits"].mean(),
    }[gold]
    got = textbook_answer(wording, clinic)
    assert got is not None, wording
    assert got["value"] == pytest.approx(expected) and "maximum likelihood" in got["answer"]


def test_a_distribution_question_that_is_no_fit_gets_no_number(clinic: pd.DataFrame) -> None:
    # a stated distribution, not one fitted to the data
    assert (
        textbook_answer("If height is normally distributed with mean 170 and sd 9, what is the mean?", clinic) is None
    )
    # which column is not said
    assert textbook_answer("Fit an exponential distribution. What is its rate?", clinic) is None
    # a parameter the distribution does not have
    assert (
        textbook_answer("Fit an exponential distribution to wait_minutes. What is its standard deviation?", clinic)
        is None
    )
    # a z-score of a column of labels, or of no column
    assert textbook_answer("What is the z-score of a ward of 3?", clinic) is None
    assert textbook_answer("What is the z-score of 185?", clinic) is None
