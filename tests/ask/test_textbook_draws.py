"""Independent draws read without a model (ask/tools/textbook_draws.py): the binomial probability
that all, none, or some of k random draws hold an event, its share computed here by pandas and
the probability by scipy's binomial on generated data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from tests.ask.textbook_answers import textbook_answer


@pytest.fixture(scope="module")
def heights() -> pd.DataFrame:
    """A frequency table: each height (cm) and how many adults have it."""
    rng = np.random.default_rng(5)
    height = np.arange(140.5, 200.5)
    counts = rng.poisson(5000 * stats.norm.pdf(height, 170, 10) * 10).astype(int)
    return pd.DataFrame({"height": height, "num_of_adults": counts})


@pytest.fixture(scope="module")
def patients() -> pd.DataFrame:
    rng = np.random.default_rng(9)
    n = 500
    return pd.DataFrame(
        {
            "outcome": rng.choice(["cured", "sick", "dead"], n, p=[0.6, 0.3, 0.1]),
            "age": rng.integers(18, 90, n),
            "weight": rng.normal(75, 12, n).round(1),
        }
    )


def _weighted_share(df: pd.DataFrame, low: float, high: float) -> float:
    inside = df["height"].between(low, high)
    return float(df.loc[inside, "num_of_adults"].sum() / df["num_of_adults"].sum())


@pytest.mark.parametrize(
    ("wording", "want"),
    [
        (
            "Three adults are randomly selected. What is the probability that all three are between 175 and 182 cm tall?",
            "all",
        ),
        (
            "Suppose we randomly select three adults. What is the probability that none of them are between 175 and 182 cm tall?",
            "none",
        ),
        (
            "Three adults are chosen at random. Find the probability that at least one is between 175 and 182 cm tall.",
            "at_least",
        ),
        (
            "If you pick three adults at random, what is the probability that exactly two of them are between 175 and 182 cm tall?",
            "exactly",
        ),
    ],
)
def test_draws_from_a_frequency_table_are_weighted_by_what_it_counts(
    heights: pd.DataFrame, wording: str, want: str
) -> None:
    p = _weighted_share(heights, 175, 182)
    gold = {
        "all": stats.binom.pmf(3, 3, p),
        "none": stats.binom.pmf(0, 3, p),
        "at_least": stats.binom.sf(0, 3, p),
        "exactly": stats.binom.pmf(2, 3, p),
    }[want]
    got = textbook_answer(wording, heights)
    assert got is not None, wording
    assert got["value"] == pytest.approx(gold)
    assert "num_of_adults" in got["answer"] and "3 independent random draws" in got["answer"]


def test_a_category_event_and_a_named_numeric_column(patients: pd.DataFrame) -> None:
    p = float((patients["outcome"] == "cured").mean())
    got = textbook_answer(
        "Four patients are randomly selected. What is the probability that all four are cured?", patients
    )
    assert got is not None and got["value"] == pytest.approx(p**4) and "500 rows" in got["answer"]
    older = float((patients["age"] > 60).mean())  # 'older than 60' leaves 60 out
    got = textbook_answer(
        "Five patients are selected at random. What is the probability that at most two of them are older than 60?",
        patients,
    )
    assert got is not None and got["value"] == pytest.approx(stats.binom.cdf(2, 5, older))
    heavy = float((patients["weight"] > 80).mean())
    got = textbook_answer(
        "We randomly select 6 patients. What is the probability that at least 3 of them have weight more than 80 kg?",
        patients,
    )
    assert got is not None and got["value"] == pytest.approx(stats.binom.sf(2, 6, heavy))


def test_draws_whose_event_or_count_is_unclear_get_no_number(patients: pd.DataFrame, heights: pd.DataFrame) -> None:
    # which numeric column 'between 30 and 40' bounds is not said
    assert (
        textbook_answer(
            "Three patients are randomly selected. What is the probability that all three are between 30 and 40?",
            patients,
        )
        is None
    )
    # 'all four' of three draws
    assert (
        textbook_answer(
            "Three patients are randomly selected. What is the probability that all four are cured?", patients
        )
        is None
    )
    # a word no reading places
    assert (
        textbook_answer(
            "Three adults are randomly selected. What is the probability that all three are between 175 and 182 cm tall and left-handed?",
            heights,
        )
        is None
    )
    # more hits than draws
    assert (
        textbook_answer(
            "Two patients are randomly selected. What is the probability that exactly three of them are cured?",
            patients,
        )
        is None
    )


def test_only_a_count_of_the_drawn_units_weights_the_rows(heights: pd.DataFrame) -> None:
    """'count' may count anything (visits, say): its rows are not units, and the share is over rows."""
    counted = heights.rename(columns={"num_of_adults": "count"})
    got = textbook_answer(
        "Two adults are randomly selected. What is the probability that all two are taller than 180?", counted
    )
    share = float((counted["height"] > 180).mean())
    assert got is not None and got["value"] == pytest.approx(share**2) and "rows with it known" in got["answer"]


def test_a_measure_adjective_names_a_column_by_a_whole_word_of_its_name() -> None:
    """'older' is said of an age column, never of 'wage', which merely holds the letters."""
    rng = np.random.default_rng(4)
    df = pd.DataFrame({"wage": rng.normal(20, 5, 200), "age_years": rng.integers(18, 80, 200)})
    got = textbook_answer(
        "Three workers are randomly selected. What is the probability that all three are older than 50?", df
    )
    assert got is not None and got["value"] == pytest.approx(float((df["age_years"] > 50).mean()) ** 3)
    wage_only = df[["wage"]]
    assert (
        textbook_answer(
            "Three workers are randomly selected. What is the probability that all three are older than 50?", wage_only
        )
        is None
    )
