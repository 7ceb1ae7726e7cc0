"""Verdict words decided by a stated rule, per group, and row filters stated in words, each computed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from tests.tools.request_answers import answers


@pytest.fixture()
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    n = 300
    sex = rng.choice(["male", "female"], n)
    x = rng.normal(0, 1, n)
    y = np.where(sex == "male", 0.8 * x, -0.1 * x) + rng.normal(0, 1, n)
    return pd.DataFrame(
        {
            "Sex": sex,
            "Survived": rng.integers(0, 2, n),
            "Age": rng.normal(30, 9, n),
            "Fare": rng.gamma(2.0, 15.0, n),
            "Height": x,
            "Weight": y,
        }
    )


def test_a_relationship_verdict_per_group_uses_that_groups_rows(frame: pd.DataFrame) -> None:
    q = (
        "Is there a correlation between height and weight? How does it differ among male and female people?\n"
        "Constraints: Pearson correlation. Consider the relationship to be linear if the p-value is less than 0.05 "
        "and the absolute value of r is greater than or equal to 0.5. Consider it nonlinear if the p-value is less "
        "than 0.05 and the absolute value of r is less than 0.5. Consider it none if the p-value is greater than "
        'or equal to 0.05.\nFormat: @relationship_type_male[t] @relationship_type_female[t] where "t" is a string '
        'that can either be "linear", "nonlinear", or "none".'
    )
    got = answers(q, frame)
    for sex, slot in (("male", "relationship_type_male"), ("female", "relationship_type_female")):
        part = frame[frame.Sex == sex]
        r, p = stats.pearsonr(part.Height, part.Weight)
        want = "none" if p >= 0.05 else "linear" if abs(r) >= 0.5 else "nonlinear"
        assert got[slot] == want


def test_a_string_slot_named_like_a_number_is_a_verdict_on_the_p_value(frame: pd.DataFrame) -> None:
    q = (
        "Is there a correlation between height and weight? Calculate the Pearson correlation coefficient and the "
        "p-value.\nConstraints: Consider the variables to be correlated if the p-value is less than 0.05.\n"
        'Format: @correlation_coefficient[r] @correlation[c]\nwhere "r" is rounded to two decimal places.\n'
        'where "c" is a string that can either be "correlated" or "not correlated".'
    )
    got = answers(q, frame)
    r, p = stats.pearsonr(frame.Height, frame.Weight)
    assert got["correlation_coefficient"] == f"{r:.2f}"
    assert got["correlation"] == ("correlated" if p < 0.05 else "not correlated")


def test_a_rule_on_r_alone(frame: pd.DataFrame) -> None:
    q = (
        "Is there a correlation between the age and the fare?\nConstraints: Calculate the Pearson correlation "
        "coefficient (r). Consider the relationship to correlate if the absolute value of r is greater than or equal "
        'to 0.9.\nFormat: @relationship_status[s] where "s" is a string that can either be "correlate" or "none".'
    )
    assert answers(q, frame)["relationship_status"] == "none"


def test_filters_stated_in_words_apply_to_every_part(frame: pd.DataFrame) -> None:
    q = (
        "Calculate the median age of male passengers who survived.\nConstraints: ignore missing ages.\n"
        "Format: @median_age[m] rounded to one decimal place."
    )
    got = answers(q, frame)
    want = frame.Age[(frame.Sex == "male") & (frame.Survived == 1)].median()
    assert got["median_age"] == f"{want:.1f}"


def test_outliers_counted_per_group(frame: pd.DataFrame) -> None:
    q = (
        "Perform outlier detection on the fare for each sex separately using the Z-score method.\n"
        "Constraints: an outlier has an absolute Z-score above 2.\n"
        'Format: @male_outliers[n1] @female_outliers[n2] where "n1" and "n2" are non-negative integers.'
    )
    got = answers(q, frame)
    for sex in ("male", "female"):
        fare = frame.Fare[frame.Sex == sex]
        z = (fare - fare.mean()) / fare.std(ddof=0)
        assert got[f"{sex}_outliers"] == str(int((z.abs() > 2).sum()))


def test_missing_share_the_column_with_most_missing_and_a_column_named_score() -> None:
    frame = pd.DataFrame(
        {"alpha": [1.0, None, None, 4.0], "beta": [None, 2.0, 3.0, 4.0], "quality.score": [1.0, 2.0, 4.0, 5.0]}
    )
    q = (
        "What percentage of the values in the alpha column is missing, which column has the most missing values, and what "
        "is the mean quality score?\nFormat: @missing_percentage[p] @max_missing_column[column_name] "
        "@quality_score_mean[m] rounded to two decimal places."
    )
    got = answers(q, frame)
    assert got["missing_percentage"] == "50.00"
    assert got["max_missing_column"] == "alpha"
    assert got["quality_score_mean"] == "3.00"


def test_a_column_compared_with_its_own_average_and_a_quoted_value_next_to_its_column() -> None:
    frame = pd.DataFrame(
        {
            "Fare": [5.0, 10.0, 30.0, 40.0, 50.0, 60.0],
            "Age": [20.0, 30.0, 40.0, 50.0, 60.0, 70.0],
            "Category": ["Gold", "Gold", "Gold", "Silver", "Gold", "Silver"],
        }
    )
    q = (
        "Calculate the median age of passengers in the 'Gold' category who paid a fare greater than the average "
        "fare.\nConstraints: the fare must be greater than the average fare of all passengers.\n"
        "Format: @median_age[m] rounded to one decimal place."
    )
    got = answers(q, frame)
    keep = (frame.Category == "Gold") & (frame.Fare > frame.Fare.mean())
    assert got["median_age"] == f"{frame.Age[keep].median():.1f}"


def test_durations_are_read_as_seconds() -> None:
    frame = pd.DataFrame({"wait time": ["00:00:10", "00:01:00", "00:00:30", "00:02:00"], "agents": [1, 3, 2, 5]})
    q = (
        "What is the mean wait time in seconds?\nConstraints: convert the wait time from HH:MM:SS to seconds.\n"
        "Format: @mean_wait_time[m] rounded to one decimal place."
    )
    assert answers(q, frame)["mean_wait_time"] == "55.0"  # (10 + 60 + 30 + 120) / 4


def test_shapiro_statistic_and_values_seen_at_least_k_times(frame: pd.DataFrame) -> None:
    species = pd.DataFrame({"species": ["a"] * 5 + ["b"] * 4 + ["c"] * 6, "height": np.arange(15.0) ** 1.5})
    q = (
        "How many unique species are there, where each species has at least 5 observations? And the Shapiro-Wilk "
        "statistic of the height?\nFormat: @unique_species_count[n] @shapiro_w[w] rounded to four decimal places."
    )
    got = answers(q, species)
    assert got["unique_species_count"] == "2"
    assert got["shapiro_w"] == f"{stats.shapiro(species.height).statistic:.4f}"


def test_an_ordinal_before_a_column_filters_on_that_number() -> None:
    rng = np.random.default_rng(2)
    frame = pd.DataFrame({"Pclass": rng.integers(1, 4, 90), "Age": rng.normal(30, 8, 90), "Fare": rng.gamma(2, 9, 90)})
    q = (
        "Calculate the Pearson correlation coefficient between the age and fare variables for passengers in first "
        "class.\nFormat: @correlation_coefficient[r] rounded to three decimal places."
    )
    first = frame[frame.Pclass == 1]
    assert answers(q, frame)["correlation_coefficient"] == f"{first.Age.corr(first.Fare):.3f}"


def test_the_variable_most_correlated_with_a_target_and_its_sign() -> None:
    rng = np.random.default_rng(9)
    score = rng.normal(5, 1, 120)
    frame = pd.DataFrame(
        {
            "Country": [f"c{i}" for i in range(120)],
            "Score": score,
            "Rank": -3 * score + rng.normal(0, 0.5, 120),
            "GDP": score + rng.normal(0, 2, 120),
            "Noise": rng.normal(0, 1, 120),
        }
    )
    q = (
        "Which variable has the strongest correlation with the score? Is it positive or negative?\nConstraints: "
        "Pearson correlation between the score and every other numerical variable.\nFormat: "
        "@strongest_correlation_variable[variable_name] @correlation_type[positive/negative]"
    )
    got = answers(q, frame)
    assert got["strongest_correlation_variable"] == "Rank"
    assert got["correlation_type"] == "negative"


def test_a_total_of_a_named_column_and_the_value_at_the_row_with_the_highest_category() -> None:
    frame = pd.DataFrame(
        {
            "storm": ["a", "b", "c", "d"],
            "category": [3, 5, 5, 1],
            "wind": [150.0, 120.0, 170.0, 90.0],
            "calls abandoned": [1, 0, 4, 2],
        }
    )
    q = (
        "What is the maximum wind speed recorded during the storm with the highest category?\nConstraints: if storms "
        'tie, the first one in the data counts.\nFormat: @max_wind_speed[w] where "w" is rounded to two decimals.'
    )
    assert answers(q, frame)["max_wind_speed"] == "120.00"
    q = (
        "Find the total number of calls abandoned.\nConstraints: use the sum of the column.\n"
        "Format: @total_calls_abandoned[integer]"
    )
    assert answers(q, frame)["total_calls_abandoned"] == "7"


def test_a_two_sample_ks_test_between_groups_named_by_their_values(frame: pd.DataFrame) -> None:
    q = (
        "Is the distribution of ages among the male passengers who did not survive significantly different from "
        "that of the female passengers who did not survive?\nConstraints: Perform a two-sample Kolmogorov-Smirnov "
        "test with a significance level (alpha) of 0.05.\nFormat: @is_significantly_different[answer] where "
        '"answer" is "True" or "False".'
    )
    dead = frame[frame.Survived == 0]
    p = stats.ks_2samp(dead.Age[dead.Sex == "male"], dead.Age[dead.Sex == "female"]).pvalue
    assert answers(q, frame)["is_significantly_different"] == ("True" if p < 0.05 else "False")


def test_the_outliers_range_their_ids_and_a_year_filter() -> None:
    frame = pd.DataFrame(
        {
            "PassengerId": range(901, 913),
            "Year": range(1995, 2007),
            "Fare": [7.0, 8.0, 9.0, 8.5, 7.5, 300.0, 8.2, 9.1, 7.7, 250.0, 8.8, 1.0],
        }
    )
    q = (
        "Are there any outliers in the fare? How many, what is their range, which passengers?\nConstraints: use the "
        "IQR method with 1.5 IQR.\nFormat: @outlier_count[n] @outlier_range_low[a] @outlier_range_high[b] "
        '@outlier_ids[id1, id2, ...] where "a" and "b" are rounded to 2 decimal places and "id1, id2, ..." are '
        'the "PassengerId"s of the outliers, sorted in ascending order.'
    )
    got = answers(q, frame)
    assert (got["outlier_count"], got["outlier_range_low"], got["outlier_range_high"]) == ("3", "1.00", "300.00")
    assert got["outlier_ids"] == "906, 910, 912"
    q = "What is the mean fare for the years 2000 and beyond?\nFormat: @mean_fare[m] rounded to two decimal places."
    assert answers(q, frame)["mean_fare"] == f"{frame.Fare[frame.Year >= 2000].mean():.2f}"


def test_whether_an_unbuilt_column_has_missing_values_is_not_computed(frame: pd.DataFrame) -> None:
    q = (
        "Create a new feature from the fare on a logarithmic scale.\nFormat: @has_nan_values_in_new_feature[boolean] "
        'where "boolean" is True or False.'
    )
    assert answers(q, frame)["has_nan_values_in_new_feature"] is None
