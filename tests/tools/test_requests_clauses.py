"""Every clause of a stated-format question is placed or no number is given: a reference to another
row, a restriction to named rows, a correlation partner, a stated formula or a new column that the
parse cannot place leaves its parts uncomputed; the clauses it can place are computed as stated."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.tools.request_answers import answers
from whyflow.ask.tools.request_clauses import restriction_sentences
from whyflow.ask.tools.requests import parse_requests
from whyflow.ask.tools.slots import ColumnInfo, find_columns


@pytest.fixture()
def cars() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    n = 300
    return pd.DataFrame(
        {
            "horsepower": rng.gamma(6.0, 18.0, n),
            "weight": rng.normal(3000, 500, n),
            "modelyear": rng.integers(70, 83, n),
            "origin": rng.choice(["usa", "europe", "japan"], n),
            "name": [f"car {i}" for i in range(n)],
        }
    )


def _ops(question: str, frame: pd.DataFrame) -> list[str]:
    spec = parse_requests(question, frame)
    assert spec is not None
    return [r.op for r in spec.requests]


def test_a_reference_to_another_rows_value_gives_no_number(cars: pd.DataFrame) -> None:
    q = (
        "Find the car with the highest horsepower. Calculate the average horsepower of all cars within the same "
        "model year as this car.\nFormat: @average_horsepower[mean] rounded to two decimal places."
    )
    spec = parse_requests(q, cars)
    assert spec is not None and [r.op for r in spec.requests] == ["unknown"]
    assert "same model year as this car" in (spec.requests[0].reason or "")


def test_a_restriction_no_filter_holds_gives_no_number(cars: pd.DataFrame) -> None:
    q = (
        "Is there a significant difference in horsepower between origins?\nConstraints: Only consider cars made "
        "by Saab, Volvo and Fiat. Use a one-way ANOVA.\nFormat: @p_value[p] rounded to four decimal places."
    )
    spec = parse_requests(q, cars)
    assert spec is not None and [r.op for r in spec.requests] == ["unknown"]
    assert "Only consider" in (spec.requests[0].reason or "")


def test_a_restriction_a_filter_holds_is_computed(cars: pd.DataFrame) -> None:
    q = (
        "What is the mean horsepower of cars from 'japan'?\nConstraints: Only consider cars from 'japan'.\n"
        "Format: @mean_horsepower[mean] rounded to two decimal places."
    )
    got = answers(q, cars)
    assert got["mean_horsepower"] == f"{cars.horsepower[cars.origin == 'japan'].mean():.2f}"


def test_a_correlation_partner_that_names_no_column_gives_no_number(cars: pd.DataFrame) -> None:
    q = (
        "Is horsepower related to weight? Calculate the Pearson correlation between the horsepower and the "
        "length of each name in letters.\n"
        "Format: @horsepower_length_corr[r] rounded to two decimal places."
    )
    spec = parse_requests(q, cars)
    assert spec is not None and [r.op for r in spec.requests] == ["unknown"]
    assert "length" in (spec.requests[0].reason or "")


def test_each_column_of_one_side_is_correlated_with_the_other_side() -> None:
    rng = np.random.default_rng(8)
    frame = pd.DataFrame({"neg": rng.random(200), "neu": rng.random(200), "pos": rng.random(200)})
    frame["size"] = 3 * frame.neu - frame.pos + rng.normal(0, 0.2, 200)
    q = (
        'Calculate the Pearson correlation between the scores ("neg", "neu", "pos") and the size.\n'
        "Format: @neg_size_corr[r1] @neu_size_corr[r2] @pos_size_corr[r3], each rounded to two decimal places."
    )
    got = answers(q, frame)
    for name in ("neg", "neu", "pos"):
        assert got[f"{name}_size_corr"] == f"{frame[name].corr(frame['size']):.2f}"


def test_a_stated_formula_with_numbers_is_computed_as_written() -> None:
    rng = np.random.default_rng(2)
    frame = pd.DataFrame({"IsAlone": rng.integers(0, 2, 150), "Fare": rng.gamma(2.0, 10.0, 150)})
    q = (
        'Create a new feature "FamilySize" from the IsAlone column.\nConstraints: FamilySize = IsAlone + 1 '
        "(for a spouse) + 1 (for a parent). Compute the average FamilySize.\n"
        "Format: @average_familysize[avg] rounded to two decimal places."
    )
    got = answers(q, frame)
    assert got["average_familysize"] == f"{(frame.IsAlone + 2).mean():.2f}"


def test_a_formula_term_that_is_no_column_gives_no_number() -> None:
    frame = pd.DataFrame({"IsAlone": [0, 1, 1, 0], "Fare": [1.0, 2.0, 3.0, 4.0]})
    q = (
        'Create a new feature "FamilySize".\nConstraints: FamilySize = IsAlone + Siblings + 1.\n'
        "Format: @average_familysize[avg] rounded to two decimal places."
    )
    assert _ops(q, frame) == ["unknown"]


def test_a_new_column_no_step_builds_is_not_answered_with_another() -> None:
    frame = pd.DataFrame({"IsAlone": [0, 1, 1, 0], "Fare": [1.0, 2.0, 3.0, 4.0]})
    q = (
        'Create a new feature "FamilySize" by summing the IsAlone column with the number of relatives aboard.\n'
        "Format: @average_familysize[avg] rounded to two decimal places."
    )
    assert _ops(q, frame) == ["unknown"]


def test_rows_are_dropped_then_filled_in_the_order_the_question_names() -> None:
    rng = np.random.default_rng(4)
    n = 400
    frame = pd.DataFrame({"Age": rng.normal(35, 12, n), "Cabin": rng.choice(["A1", "B2", None], n)})
    frame.loc[rng.random(n) < 0.3, "Age"] = np.nan
    q = (
        "Use the deletion strategy for missing values in the cabin column and imputation for the age column.\n"
        "Constraints: remove any row that has a missing value in the cabin column. Replace the missing values "
        "in age with the median age.\nFormat: @row_count[count] @median_age[value] rounded to one decimal place."
    )
    got = answers(q, frame)
    kept = frame.dropna(subset=["Cabin"])
    assert got["row_count"] == str(len(kept))
    assert got["median_age"] == f"{kept.Age.fillna(kept.Age.median()).median():.1f}"


def test_listed_outlier_values_are_rounded_as_asked() -> None:
    values = np.r_[np.linspace(1.0, 2.0, 40), [9.026365, 9.002764]]
    frame = pd.DataFrame({"score": values})
    q = (
        "Identify the outliers in the score column using the IQR method.\n"
        "Format: @outlier_values[value1,value2,...] where the values are each rounded to two decimal places."
    )
    assert answers(q, frame)["outlier_values"] == "9.03,9.0"


def test_the_label_with_the_highest_statistic_is_not_the_label_with_the_highest_value() -> None:
    frame = pd.DataFrame({"country": ["A", "B", "C"], "gdp_1992": [1.0, 5.0, 3.0]})
    q = (
        "Which country's gdp in 1992 had the highest skewness?\n"
        'Format: @highest_skewness_country[country_name] where "country_name" is a string.'
    )
    assert _ops(q, frame) == ["unknown"]


@pytest.mark.parametrize(
    ("question", "column"),
    [
        ("the average number of cases per country", "No. of cases"),
        ("the median sold price per square foot", "MedianSoldPricePerSqft"),
    ],
)
def test_an_abbreviated_column_name_is_found_by_its_spelled_out_words(question: str, column: str) -> None:
    columns = [ColumnInfo(name=n, dtype="float64") for n in ("No. of cases", "MedianSoldPricePerSqft", "No")]
    assert [m.column for m in find_columns(question, columns)] == [column]


@pytest.mark.parametrize(
    ("sentence", "restricts"),
    [
        ("Only consider countries using Pfizer/BioNTech and Moderna.", True),
        ("Consider only passengers in first class.", True),
        ("Only consider rows without missing values.", False),
        ("Consider only the players who have a recorded batting average.", False),
        ("Only consider the Close column.", False),
        ("Only use the statistics module.", False),
    ],
)
def test_a_restriction_is_one_to_rows(sentence: str, restricts: bool) -> None:
    assert bool(restriction_sentences(sentence)) is restricts
