"""Derived columns, in-place transformations and the groups a slot's words select, each computed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.tools.request_answers import answers


@pytest.fixture()
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    n = 240
    return pd.DataFrame(
        {
            "Sex": rng.choice(["male", "female"], n),
            "Pclass": rng.integers(1, 4, n),
            "Survived": rng.integers(0, 2, n),
            "Education": rng.choice(["Graduate", "Not Graduate"], n),
            "SibSp": rng.integers(0, 4, n),
            "Parch": rng.integers(0, 3, n),
            "Age": rng.normal(30, 10, n),
            "Income": rng.gamma(3.0, 1000.0, n),
            "Members": rng.integers(0, 5, n),
            "Power": rng.gamma(4.0, 25.0, n),
        }
    )


def test_a_feature_made_by_adding_columns_then_split_by_a_yes_no_column(frame: pd.DataFrame) -> None:
    q = (
        'Create a new feature called "FamilySize" by adding the "SibSp" and "Parch" columns together. What is the '
        'mean "FamilySize" for passengers who survived versus passengers who did not survive?\n'
        "Format: @mean_familysize_survived[m1] @mean_familysize_did_not_survive[m0] rounded to two decimal places."
    )
    got = answers(q, frame)
    size = frame.SibSp + frame.Parch
    assert got["mean_familysize_survived"] == f"{size[frame.Survived == 1].mean():.2f}"
    assert got["mean_familysize_did_not_survive"] == f"{size[frame.Survived == 0].mean():.2f}"


def test_a_sum_takes_every_named_column_but_stops_at_then(frame: pd.DataFrame) -> None:
    q = (
        "Create 'Everyone' by adding up 'SibSp', 'Parch' and 'Members', then calculate the Pearson correlation "
        "coefficient between 'Everyone' and 'Survived'.\nFormat: @correlation_coefficient[r] to two decimals."
    )
    got = answers(q, frame)
    total = frame.SibSp + frame.Parch + frame.Members
    assert got["correlation_coefficient"] == f"{total.corr(frame.Survived):.2f}"


def test_a_ratio_declared_in_one_sentence_and_defined_in_the_next(frame: pd.DataFrame) -> None:
    q = (
        'Create a new column called "Income per Member". Calculate the mean and the range of it.\n'
        'Constraints: The "Income per Member" is calculated as the ratio of Income to Members. Replace the infinity '
        "values from divisions by zero with zero.\nFormat: @income_per_member_mean[m] @income_per_member_range[r] "
        "rounded to two decimal places."
    )
    got = answers(q, frame)
    ratio = (frame.Income / frame.Members).replace([np.inf, -np.inf], 0.0)
    assert got["income_per_member_mean"] == f"{ratio.mean():.2f}"
    assert got["income_per_member_range"] == f"{ratio.max() - ratio.min():.2f}"


def test_a_log_transformation_in_place(frame: pd.DataFrame) -> None:
    q = (
        "Transform the 'Power' column by applying a log transformation. Calculate the mean and standard deviation "
        "of the transformed column.\nConstraints: use the natural logarithm.\n"
        "Format: @mean_transformed_power[m] @stddev_transformed_power[s] rounded to two decimal places."
    )
    got = answers(q, frame)
    logged = np.log(frame.Power)
    assert got["mean_transformed_power"] == f"{logged.mean():.2f}"
    assert got["stddev_transformed_power"] == f"{logged.std():.2f}"


def test_two_groups_in_one_slot_and_a_value_of_two_words(frame: pd.DataFrame) -> None:
    q = (
        "What is the average age of male and female passengers in each passenger class? And the mean income of "
        "graduates and non-graduates?\nFormat: @average_age_male_class2[a] @average_age_female_class3[b] "
        "@graduate_mean_income[c] @not_graduate_mean_income[d] rounded to two decimal places."
    )
    got = answers(q, frame)
    age, income = frame.Age, frame.Income
    assert got["average_age_male_class2"] == f"{age[(frame.Sex == 'male') & (frame.Pclass == 2)].mean():.2f}"
    assert got["average_age_female_class3"] == f"{age[(frame.Sex == 'female') & (frame.Pclass == 3)].mean():.2f}"
    assert got["graduate_mean_income"] == f"{income[frame.Education == 'Graduate'].mean():.2f}"
    assert got["not_graduate_mean_income"] == f"{income[frame.Education == 'Not Graduate'].mean():.2f}"


def test_an_unread_group_word_is_not_computed(frame: pd.DataFrame) -> None:
    q = "What is the mean age of wizards?\nFormat: @mean_age_wizards[m] @mean_age_muggles[n]"
    got = answers(q, frame)
    assert got["mean_age_wizards"] is None and got["mean_age_muggles"] is None


def test_pre_and_post_imputation_and_the_column_the_statistics_sentence_names() -> None:
    frame = pd.DataFrame({"passes": [1.0, None, 3.0, None, 5.0], "trips": [2.0, None, 4.0, 8.0, 16.0]})
    q = (
        "Fill the missing values in the passes and trips columns with the mean. Then analyze the trips "
        "before and after the imputation.\nConstraints: Then, calculate the mean and standard deviation for the "
        "trips column before and after imputation.\nFormat: @pre_mean[a] @pre_sd[b] @post_mean[c] @post_sd[d] "
        "rounded to two decimal places."
    )
    got = answers(q, frame)
    filled = frame.trips.fillna(frame.trips.mean())
    assert got["pre_mean"] == f"{frame.trips.mean():.2f}" and got["pre_sd"] == f"{frame.trips.std():.2f}"
    assert got["post_mean"] == f"{filled.mean():.2f}" and got["post_sd"] == f"{filled.std():.2f}"


def test_estimates_with_intervals_a_quoted_column_and_an_integer_mean() -> None:
    frame = pd.DataFrame(
        {
            "Year": [2017, 2017, 2018, 2018],
            "No. of cases": ["630308[495000-801000]", "0", "4615605[3106000-6661000]", "12"],
            "No. of deaths": ["298[110-510]", "0", "13316[9970-16600]", "1"],
        }
    )
    q = (
        "What is the mean number of cases?\nConstraints: Calculate the mean of the column 'No. of cases'. Then the "
        "Pearson correlation between the number of cases and deaths.\nFormat: @mean_cases[mean_value] "
        '@correlation_coefficient[r] where "mean_value" is a positive integer and "r" is rounded to two decimals.'
    )
    got = answers(q, frame)
    cases, deaths = pd.Series([630308, 0, 4615605, 12.0]), pd.Series([298, 0, 13316, 1.0])
    assert got["mean_cases"] == f"{cases.mean():.0f}"
    assert got["correlation_coefficient"] == f"{cases.corr(deaths):.2f}"


def test_rows_where_a_column_is_not_null_and_whether_a_column_has_missing_values() -> None:
    frame = pd.DataFrame(
        {
            "tree": ["(a,b)", None, "(c,d)", None, "(e,f)"],
            "nsnps": [10.0, 2.0, 30.0, 4.0, 50.0],
            "score": [1.0, None, 3.0, 4.0, 5.0],
        }
    )
    q = (
        "What is the mean nsnps for rows where the tree is not null? Does the score have missing values?\n"
        'Format: @mean_with_tree_notnull[mean] @has_nan_values_in_score[boolean] where "mean" is rounded to two '
        'decimal places and "boolean" is True or False.'
    )
    got = answers(q, frame)
    assert got["mean_with_tree_notnull"] == "30.00"
    assert got["has_nan_values_in_score"] == "True"


def test_an_unnamed_new_feature_averaging_columns(frame: pd.DataFrame) -> None:
    q = (
        "Create a new feature that represents the average of the SibSp, Parch and Members columns. Calculate the "
        "correlation between this new feature and the Age.\nConstraints: Pearson correlation.\n"
        "Format: @correlation_coefficient[r] rounded to two decimal places."
    )
    average = frame[["SibSp", "Parch", "Members"]].mean(axis=1)
    assert answers(q, frame)["correlation_coefficient"] == f"{average.corr(frame.Age):.2f}"
