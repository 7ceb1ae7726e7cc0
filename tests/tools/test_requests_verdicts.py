"""Verdict words decided by a stated rule, per group, and row filters stated in words, each computed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from agents.tools.requests import parse_requests, request_code


@pytest.fixture()
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    n = 300
    sex = rng.choice(["male", "female"], n)
    x = rng.normal(0, 1, n)
    y = np.where(sex == "male", 0.8 * x, -0.1 * x) + rng.normal(0, 1, n)
    return pd.DataFrame({"Sex": sex, "Survived": rng.integers(0, 2, n), "Age": rng.normal(30, 9, n),
                         "Fare": rng.gamma(2.0, 15.0, n), "Height": x, "Weight": y})


def _answers(question: str, frame: pd.DataFrame) -> dict:
    spec = parse_requests(question, frame)
    assert spec is not None
    scope: dict = {"df": frame}
    exec(request_code(spec), scope)  # noqa: S102 - the code the sandbox would run
    return scope["result"]


def test_a_relationship_verdict_per_group_uses_that_groups_rows(frame: pd.DataFrame) -> None:
    q = ("Is there a correlation between height and weight? How does it differ among male and female people?\n"
         "Constraints: Pearson correlation. Consider the relationship to be linear if the p-value is less than 0.05 "
         "and the absolute value of r is greater than or equal to 0.5. Consider it nonlinear if the p-value is less "
         "than 0.05 and the absolute value of r is less than 0.5. Consider it none if the p-value is greater than "
         "or equal to 0.05.\nFormat: @relationship_type_male[t] @relationship_type_female[t] where \"t\" is a string "
         "that can either be \"linear\", \"nonlinear\", or \"none\".")
    got = _answers(q, frame)
    for sex, slot in (("male", "relationship_type_male"), ("female", "relationship_type_female")):
        part = frame[frame.Sex == sex]
        r, p = stats.pearsonr(part.Height, part.Weight)
        want = "none" if p >= 0.05 else "linear" if abs(r) >= 0.5 else "nonlinear"
        assert got[slot] == want


def test_a_string_slot_named_like_a_number_is_a_verdict_on_the_p_value(frame: pd.DataFrame) -> None:
    q = ("Is there a correlation between height and weight? Calculate the Pearson correlation coefficient and the "
         "p-value.\nConstraints: Consider the variables to be correlated if the p-value is less than 0.05.\n"
         "Format: @correlation_coefficient[r] @correlation[c]\nwhere \"r\" is rounded to two decimal places.\n"
         "where \"c\" is a string that can either be \"correlated\" or \"not correlated\".")
    got = _answers(q, frame)
    r, p = stats.pearsonr(frame.Height, frame.Weight)
    assert got["correlation_coefficient"] == f"{r:.2f}"
    assert got["correlation"] == ("correlated" if p < 0.05 else "not correlated")


def test_a_rule_on_r_alone(frame: pd.DataFrame) -> None:
    q = ("Is there a correlation between the age and the fare?\nConstraints: Calculate the Pearson correlation "
         "coefficient (r). Consider the relationship to correlate if the absolute value of r is greater than or equal "
         "to 0.9.\nFormat: @relationship_status[s] where \"s\" is a string that can either be \"correlate\" or \"none\".")
    assert _answers(q, frame)["relationship_status"] == "none"


def test_filters_stated_in_words_apply_to_every_part(frame: pd.DataFrame) -> None:
    q = ("Calculate the median age of male passengers who survived.\nConstraints: ignore missing ages.\n"
         "Format: @median_age[m] rounded to one decimal place.")
    got = _answers(q, frame)
    want = frame.Age[(frame.Sex == "male") & (frame.Survived == 1)].median()
    assert got["median_age"] == f"{want:.1f}"


def test_outliers_counted_per_group(frame: pd.DataFrame) -> None:
    q = ("Perform outlier detection on the fare for each sex separately using the Z-score method.\n"
         "Constraints: an outlier has an absolute Z-score above 2.\n"
         "Format: @male_outliers[n1] @female_outliers[n2] where \"n1\" and \"n2\" are non-negative integers.")
    got = _answers(q, frame)
    for sex in ("male", "female"):
        fare = frame.Fare[frame.Sex == sex]
        z = (fare - fare.mean()) / fare.std(ddof=0)
        assert got[f"{sex}_outliers"] == str(int((z.abs() > 2).sum()))


def test_missing_share_the_column_with_most_missing_and_a_column_named_score() -> None:
    frame = pd.DataFrame({"alpha": [1.0, None, None, 4.0], "beta": [None, 2.0, 3.0, 4.0],
                          "quality.score": [1.0, 2.0, 4.0, 5.0]})
    q = ("What percentage of the values in the alpha column is missing, which column has the most missing values, and what "
         "is the mean quality score?\nFormat: @missing_percentage[p] @max_missing_column[column_name] "
         "@quality_score_mean[m] rounded to two decimal places.")
    got = _answers(q, frame)
    assert got["missing_percentage"] == "50.00"
    assert got["max_missing_column"] == "alpha"
    assert got["quality_score_mean"] == "3.00"
