"""A question with a stated format is a list of requests, each computed on its own."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.tools.request_answers import answers
from whyflow.ask.tools.request_ops import answer_requests
from whyflow.ask.tools.requests import parse_requests


@pytest.fixture()
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    n = 300
    klass = rng.integers(1, 4, n)
    fare = rng.gamma(2.0, 10.0, n) * klass
    age = rng.normal(35, 12, n)
    age[:10] = np.nan
    return pd.DataFrame(
        {"Pclass": klass, "Fare": fare, "Age": age, "SibSp": rng.integers(0, 3, n), "Parch": rng.integers(0, 3, n)}
    )


def test_each_slot_gets_its_own_statistic_and_rounding(frame: pd.DataFrame) -> None:
    q = (
        "Calculate the mean and standard deviation of the fare.\nConstraints: use the population standard deviation.\n"
        'Format: @mean_fare[mean] @std_dev_fare[std] where "mean" is rounded to two decimal places and "std" '
        "is rounded to three decimal places."
    )
    got = answers(q, frame)
    assert got["mean_fare"] == f"{frame.Fare.mean():.2f}"
    assert got["std_dev_fare"] == f"{frame.Fare.std(ddof=0):.3f}"


def test_a_group_named_in_the_slot_filters_that_slot_only(frame: pd.DataFrame) -> None:
    q = (
        "What is the mean fare in each class?\nConstraints: round to two decimal places.\n"
        "Format: @mean_fare_class1[m1] @mean_fare_class2[m2] @mean_fare_class3[m3]"
    )
    got = answers(q, frame)
    for k in (1, 2, 3):
        assert got[f"mean_fare_class{k}"] == f"{frame.Fare[frame.Pclass == k].mean():.2f}"
    assert len({got[f"mean_fare_class{k}"] for k in (1, 2, 3)}) == 3


def test_an_unread_part_is_not_computed_in_its_own_slot(frame: pd.DataFrame) -> None:
    q = (
        "Is fare related to age?\nConstraints: Pearson correlation, two decimal places.\n"
        "Format: @correlation_coefficient[r] @relationship_type[type] where type is linear or nonlinear"
    )
    spec = parse_requests(q, frame)
    assert spec is not None
    ops = {r.slot: r.op for r in spec.requests}
    assert ops == {"correlation_coefficient": "corr", "relationship_type": "unknown"}
    got = answers(q, frame)
    both = frame[["Fare", "Age"]].dropna()
    assert got["correlation_coefficient"] == f"{both.Fare.corr(both.Age):.2f}"
    assert got["relationship_type"] is None and got["_notes"]["relationship_type"]


def test_derived_column_and_outlier_removal(frame: pd.DataFrame) -> None:
    q = (
        "Create a new feature 'FamilySize' as the sum of 'SibSp' and 'Parch', then remove the outliers of 'Fare' "
        "with the IQR method.\nConstraints: 1.5*IQR.\nFormat: @familysize_mean[a] @fare_mean_after[b] "
        "@fare_outliers_count[c] where a and b are rounded to two decimal places."
    )
    got = answers(q, frame)
    fam = frame.SibSp + frame.Parch
    q1, q3 = frame.Fare.quantile([0.25, 0.75])
    out = (frame.Fare < q1 - 1.5 * (q3 - q1)) | (frame.Fare > q3 + 1.5 * (q3 - q1))
    assert got["fare_outliers_count"] == str(int(out.sum()))
    assert got["fare_mean_after"] == f"{frame.Fare[~out].mean():.2f}"
    assert got["familysize_mean"] == f"{fam[~out].mean():.2f}"


def test_a_slot_that_reads_the_same_as_another_is_not_given_its_value(frame: pd.DataFrame) -> None:
    spec = parse_requests("Mean of Fare.\nFormat: @mean_fare[a] @fare_mean[b]", frame)
    assert spec is not None
    assert [r.op for r in spec.requests] == ["mean", "unknown"]


def test_one_failing_request_leaves_the_others(frame: pd.DataFrame) -> None:
    spec = {
        "requests": [
            {"slot": "a", "op": "mean", "columns": ["Fare"], "decimals": 1},
            {"slot": "b", "op": "mean", "columns": ["Nope"]},
        ]
    }
    got = answer_requests(frame, spec)
    assert got["a"] == f"{frame.Fare.mean():.1f}" and got["b"] is None
    assert "Nope" in got["_notes"]["b"]


def test_a_stated_rule_is_answered_with_the_formats_own_words(frame: pd.DataFrame) -> None:
    from scipy import stats

    q = (
        "Is fare related to the class?\nConstraints: Pearson correlation; the relationship is linear if the p-value "
        "is less than 0.05 and the absolute value of r is greater than or equal to 0.5, nonlinear if p < 0.05 and "
        "|r| < 0.5, else none. Test the normality of Age with the Shapiro-Wilk test at alpha 0.05.\n"
        'Format: @r[r] @relationship_type[t] @age_normal[n] where "t" is "linear", "nonlinear" or "none", '
        '"n" is "Yes" or "No".'
    )
    got = answers(q, frame)
    r, p = stats.pearsonr(frame.Fare, frame.Pclass)
    assert got["relationship_type"] == ("none" if p >= 0.05 else "linear" if abs(r) >= 0.5 else "nonlinear")
    assert got["age_normal"] == ("Yes" if stats.shapiro(frame.Age.dropna()).pvalue >= 0.05 else "No")


def test_which_label_has_the_highest_value() -> None:
    frame = pd.DataFrame({"country": ["A", "A", "B", "B", "C"], "score": [1.0, 9.0, 6.0, 6.0, 2.0]})
    q = "Which country has the highest score?\nFormat: @country_with_highest_score[name]"
    assert answers(q, frame)["country_with_highest_score"] == "A"
    q2 = "Which country has the highest average score? Average the score of each country.\nFormat: @top_country[name]"
    assert answers(q2, frame)["top_country"] == "B"  # B averages 6, A 5


def test_a_named_two_group_test_and_its_verdict(frame: pd.DataFrame) -> None:
    from scipy import stats

    q = (
        "Is the age of 1st class passengers different from 3rd class passengers?\nConstraints: use the Mann-Whitney U "
        "test on Age between Pclass 1 and 3 with alpha 0.05.\nFormat: @p_value[p] @significance[(Yes/No)] where p is "
        "rounded to four decimal places."
    )
    got = answers(q, frame)
    a, b = frame.Age[frame.Pclass == 1].dropna(), frame.Age[frame.Pclass == 3].dropna()
    p = stats.mannwhitneyu(a, b, alternative="two-sided").pvalue
    assert got["p_value"] == f"{p:.4f}"
    assert got["significance"] == ("Yes" if p < 0.05 else "No")


def test_missing_values_of_the_column_the_question_quotes(frame: pd.DataFrame) -> None:
    frame = frame.assign(cabin=np.where(np.arange(len(frame)) % 3 == 0, None, "C1"))
    q = (
        'How many passengers have no "cabin"?\nConstraints: count the null values in the "cabin" column.\n'
        "Format: @missing_values[n]"
    )
    assert answers(q, frame)["missing_values"] == str(int(frame.cabin.isna().sum()))


def test_the_outliers_themselves_by_their_labels() -> None:
    frame = pd.DataFrame({"country": list("ABCDEFGHIJ"), "score": [5, 5.2, 4.9, 5.1, 5.0, 4.8, 5.3, 50.0, 5.05, -40.0]})
    q = (
        "Which countries are outliers in score?\nConstraints: use the IQR method (1.5*IQR).\n"
        "Format: @outlier_countries[country1, country2, ...] a list of countries"
    )
    assert answers(q, frame)["outlier_countries"] == "H, J"
    q2 = "Which scores are outliers?\nConstraints: z-score above 3.\nFormat: @score_outliers[a list of values]"
    assert answers(q2, frame)["score_outliers"] == ""  # no |z| > 3 among ten values


def test_strength_and_skewness_classes_from_the_stated_bounds(frame: pd.DataFrame) -> None:
    from scipy import stats

    q = (
        "How strong is the correlation of Fare and Pclass? Is Fare skewed?\nConstraints: Pearson r; strong if |r| is "
        "at least 0.7, moderate if at least 0.3, else weak. Skewness (scipy) between -0.5 and 0.5 is symmetric, "
        "above is skewed right, below skewed left.\n"
        'Format: @strength[s] @fare_skew_type[k] where "s" is "strong", "moderate" or "weak" and "k" is "symmetric", '
        '"skewed_right" or "skewed_left".'
    )
    got = answers(q, frame)
    r = abs(frame.Fare.corr(frame.Pclass))
    assert got["strength"] == ("strong" if r >= 0.7 else "moderate" if r >= 0.3 else "weak")
    skew = stats.skew(frame.Fare)
    assert got["fare_skew_type"] == ("symmetric" if abs(skew) <= 0.5 else "skewed_right" if skew > 0 else "skewed_left")


def test_stated_imputation_negated_removal_and_unbuilt_transforms(frame: pd.DataFrame) -> None:
    q = (
        "Replace the missing values in Age with the median, and do not remove any outliers.\n"
        "Format: @mean_age[m] @std_age[s] rounded to two decimal places"
    )
    got = answers(q, frame)
    filled = frame.Age.fillna(frame.Age.median())
    assert got["mean_age"] == f"{filled.mean():.2f}" and got["std_age"] == f"{filled.std():.2f}"
    spec = parse_requests(
        "Apply a Box-Cox transformation to the fare.\nFormat: @mean_transformed_fare[m] @std_transformed_fare[s]", frame
    )
    assert spec is not None and [r.op for r in spec.requests] == ["unknown", "unknown"]
