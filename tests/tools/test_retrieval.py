"""Retrieval picks the right example for paraphrases; filling reads columns, synonyms, numbers, filters, format."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from whyflow.ask.tools.answers import format_answer, parse_output_format
from whyflow.ask.tools.retrieval import fill, retrieve
from whyflow.ask.tools.slots import ColumnInfo, describe_columns


@pytest.fixture(scope="module")
def people() -> list[ColumnInfo]:
    rng = np.random.default_rng(3)
    n = 120
    frame = pd.DataFrame(
        {
            "Sex": rng.choice(["male", "female"], n),
            "Age": rng.integers(1, 80, n).astype(float),
            "Salary": rng.normal(50, 10, n),
            "Department": rng.choice(["Sales", "Engineering", "Support"], n),
            "YearsExperience": rng.integers(0, 30, n),
            "Survived": rng.integers(0, 2, n),
            "Volume": [f"{v:,}" for v in rng.integers(1000, 9_000_000, n)],
            "year": rng.integers(2000, 2020, n),
        }
    )
    return describe_columns(frame)


@pytest.mark.parametrize(
    ("question", "example_id"),
    [
        ("Tell me the typical salary, on average", "mean_of_column"),
        ("what's the middle value of age", "median_of_column"),
        ("How much does salary vary? Give the standard deviation", "std_of_column"),
        ("Which department earns the most on average?", "group_with_highest_mean"),
        ("Break down average salary per department", "mean_by_group"),
        ("Do men and women earn different salaries? Run a t-test", "ttest_two_groups"),
        ("Compare salary across departments with an analysis of variance", "anova_oneway"),
        ("Are sex and department associated?", "chi_square"),
        ("Is there a linear relationship between age and salary? Give the correlation", "pearson_correlation"),
        ("Does age look Gaussian?", "normality_shapiro"),
        ("Any anomalies in salary based on the interquartile range?", "outliers_iqr"),
        ("Draw a histogram of the ages", "histogram_chart"),
        ("Graph salary against age as a scatter", "scatter_chart"),
        ("Which columns have nulls?", "missing_per_column"),
        ("Predict salary from years of experience with a linear regression", "simple_regression"),
        ("Has salary been increasing across the years?", "trend_over_time"),
        ("What is a p-value, conceptually?", "concept_p_value"),
    ],
)
def test_paraphrases_pick_the_right_example(people: list[ColumnInfo], question: str, example_id: str) -> None:
    plan = fill(question, people)
    assert plan is not None, retrieve(question, 5, people)
    assert plan.example_id == example_id, (plan.example_id, plan.params)


def test_synonyms_misspellings_and_abbreviations_find_columns(people: list[ColumnInfo]) -> None:
    assert fill("average wage by gender", people).params == {"group": "Sex", "value": "Salary"}  # type: ignore[union-attr]
    assert fill("What is the mean salry?", people).params == {"value": "Salary"}  # type: ignore[union-attr]
    assert fill("correlation between years experience and salary", people).params == {
        "x": "YearsExperience",
        "y": "Salary",
    }  # type: ignore[union-attr]


def test_numbers_filters_and_levels_are_read(people: list[ColumnInfo]) -> None:
    top = fill("Show the top 7 rows by salary", people)
    assert top is not None and top.params["k"] == 7
    pct = fill("What is the 90th percentile of age?", people)
    assert pct is not None and pct.params["q"] == 90
    older = fill("How many people are older than 60?", people)
    assert older is not None and older.filters == ["Age > 60.0"] and "df['Age']" in older.code
    female = fill("What is the mean salary of female employees?", people)
    assert female is not None and female.example_id == "mean_of_column" and female.filters == ["Sex == female"]
    test = fill("Is salary different between female and male? t-test", people)
    assert test is not None and (test.params["a_level"], test.params["b_level"]) == ("female", "male")


def test_text_numbers_count_as_numeric(people: list[ColumnInfo]) -> None:
    plan = fill("What is the average volume?", people)
    assert plan is not None and plan.params == {"value": "Volume"} and "num(df['Volume'])" in plan.code


def test_unrelated_questions_are_not_forced(people: list[ColumnInfo]) -> None:
    assert fill("Write a poem about the sea", people) is None
    assert fill("What is the average moon phase?", people) is None  # no such column


def test_column_names_are_literals_not_code() -> None:
    nasty = "x']; import os; os.system('echo hi') #"
    columns = [
        ColumnInfo(name=nasty, dtype="float64", n_unique=100),
        ColumnInfo(name="Group", dtype="object", n_unique=3),
    ]
    plan = fill(f"What is the average {nasty}?", columns)
    assert plan is not None
    assert repr(nasty) in plan.code
    compile(plan.code, "plan", "exec")


def test_output_format_hints() -> None:
    fmt = parse_output_format("Report the mean fare rounded to two decimal places, in dollars.")
    assert fmt.decimals == 2 and fmt.unit == "dollars"
    assert parse_output_format("to 3 d.p.").decimals == 3
    assert parse_output_format("to the nearest integer").decimals == 0
    tokens = parse_output_format("Answer: @mean_fare[mean_value] @p_value[p]").tokens
    assert [t.name for t in tokens] == ["mean_fare", "p_value"]


def test_format_answer_takes_every_number_from_the_result() -> None:
    q = "Give @correlation_coefficient[r] and @p_value[p], rounded to 3 decimals"
    assert (
        format_answer(q, {"correlation": 0.123456, "p_value": 0.04449, "n": 10})
        == "@correlation_coefficient[0.123]\n@p_value[0.044]"
    )
    assert format_answer("mean? round to 2 decimal places", 34.6545) == "34.65"
    assert format_answer("@mean_fare[x]", None) == "@mean_fare[not computed]"
    assert format_answer("", 2.5, template="The mean is {result}.") == "The mean is 2.5."


def test_filled_code_runs_in_the_sandbox_and_matches_pandas(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from whyflow.ask.tools.retrieval import explain
    from whyflow.runtime.sandbox.run import run_code

    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"team": rng.choice(["red", "blue"], 80), "score": rng.normal(10, 2, 80).round(3)})
    path = tmp_path / "scores.csv"
    frame.to_csv(path, index=False)
    columns = describe_columns(frame)
    mean = fill("What is the average score for the red team? Round to 2 decimal places.", columns)
    assert mean is not None
    run = run_code(mean.code, {"data": path})
    assert run.ok, run.error
    want = frame.loc[frame["team"] == "red", "score"].mean()
    assert run.result == pytest.approx(want)
    assert f"{want:.2f}" in explain(mean, run.result, "Round to 2 decimal places")
    grouped = fill("mean score per team", columns)
    assert grouped is not None
    run = run_code(grouped.code, {"data": path})
    assert run.ok and run.result_kind == "table", run.error
    got = {row[0]: row[1] for row in run.result["rows"]}
    assert got == pytest.approx(frame.groupby("team")["score"].mean().to_dict())


def test_flags_long_names_and_clipped_names() -> None:
    columns = [
        ColumnInfo(name="smoker", dtype="object", n_unique=2, values=("no", "yes")),
        ColumnInfo(name="charges", dtype="float64", n_unique=900),
        ColumnInfo(name="salary_in_thousands_of_dollars", dtype="float64", n_unique=300),
        ColumnInfo(name="cigsale", dtype="float64", n_unique=300),
        ColumnInfo(name="PassengerId", dtype="int64", n_unique=891),
        ColumnInfo(name="Age", dtype="float64", n_unique=88),
    ]
    count = fill("How many smokers are there?", columns)
    assert count is not None and count.example_id == "row_count" and count.filters == ["smoker == yes"]
    negated = fill("average charges of non-smokers", columns)
    assert negated is not None and negated.filters == ["smoker == no"]
    both = fill("What are the average charges for smokers and non-smokers?", columns)
    assert both is not None and both.example_id == "mean_by_group" and both.filters == []
    assert fill("What is the median salary?", columns).params == {"value": "salary_in_thousands_of_dollars"}  # type: ignore[union-attr]
    assert fill("mean cigarette sales", columns).params == {"value": "cigsale"}  # type: ignore[union-attr]
    # an identifier column is not 'passengers'
    older = fill("How many passengers are older than 60?", columns)
    assert older is not None and older.filters == ["Age > 60.0"]


def test_requests_to_write_or_change_things_are_not_analyses(people: list[ColumnInfo]) -> None:
    for question in (
        "Translate the column names into French",
        "Delete the rows with missing age",
        "Rename Salary to pay",
        "Write an essay about the salary columns",
    ):
        assert fill(question, people) is None, question
    assert fill("What are the column types?", people) is not None


def test_the_library_finds_its_own_examples_from_their_questions() -> None:
    """Each example's questions, with real column names put in, fill back to that example (≥ 90%)."""
    from whyflow.ask.tools.library import load_examples

    pools = {
        "numeric": ["revenue", "weight", "height"],
        "category": ["region", "product", "segment"],
        "column": ["revenue", "region"],
        "datetime": ["year"],
    }
    columns = [
        ColumnInfo(name="revenue", dtype="float64", n_unique=500),
        ColumnInfo(name="weight", dtype="float64", n_unique=400),
        ColumnInfo(name="height", dtype="float64", n_unique=300),
        ColumnInfo(name="region", dtype="object", n_unique=4, values=("North", "South", "East", "West")),
        ColumnInfo(name="product", dtype="object", n_unique=3, values=("alpha", "beta", "gamma")),
        ColumnInfo(name="segment", dtype="object", n_unique=2, values=("retail", "wholesale")),
        ColumnInfo(name="year", dtype="int64", n_unique=20),
    ]
    asked = found = 0
    for example in load_examples():
        for question in example.questions:
            used = dict.fromkeys(pools, 0)
            for slot, spec in example.slots.items():
                if spec.kind in pools:
                    question = question.replace(
                        "{" + slot + "}", pools[spec.kind][used[spec.kind] % len(pools[spec.kind])]
                    )
                    used[spec.kind] += 1
                elif spec.kind == "value":
                    question = question.replace("{" + slot + "}", "North" if slot in ("a_level", "level") else "South")
            plan = fill(question, columns)
            asked += 1
            found += plan is not None and plan.example_id == example.id
    assert asked > 150 and found / asked >= 0.9, (found, asked)


def test_stated_values_and_comparisons() -> None:
    columns = [
        ColumnInfo(name="Sex", dtype="object", n_unique=3, values=("M", "F", "I")),
        ColumnInfo(name="Diameter", dtype="float64", n_unique=100),
        ColumnInfo(name="email", dtype="int64", n_unique=2, values=("0", "1")),
        ColumnInfo(name="payments", dtype="float64", n_unique=500),
    ]
    stated = fill("mean diameter of the female abalones (Sex is F)", columns)
    assert stated is not None and stated.example_id == "mean_of_column" and stated.filters == ["Sex == F"]
    compared = fill("average payments for customers who got the email versus those who did not", columns)
    assert compared is not None and compared.example_id == "mean_by_group" and compared.params["group"] == "email"
    assert compared.filters == []
    flagged = fill("average payments of customers who got the email", columns)
    assert flagged is not None and flagged.example_id == "mean_of_column" and flagged.filters == ["email == 1.0"]


def test_clipped_names_stated_numbers_years_and_shares() -> None:
    columns = [
        ColumnInfo(name="MedInc", dtype="float64", n_unique=900),
        ColumnInfo(name="MedianHouseValue", dtype="float64", n_unique=900),
        ColumnInfo(name="star_rating", dtype="float64", n_unique=9),
        ColumnInfo(name="product", dtype="object", n_unique=3, values=("A", "B", "C")),
        ColumnInfo(name="year", dtype="int64", n_unique=6, values=tuple(str(y) for y in range(2018, 2024))),
        ColumnInfo(name="revenue", dtype="float64", n_unique=600),
        ColumnInfo(name="push_delivered", dtype="int64", n_unique=2, values=("0", "1")),
    ]
    corr = fill("What's the correlation between median income and median house value?", columns)
    assert corr is not None and corr.params == {"x": "MedInc", "y": "MedianHouseValue"}
    stars = fill("How many hotels have a star rating of 5?", columns)
    assert stars is not None and stars.example_id == "row_count" and stars.filters == ["star_rating == 5.0"]
    total = fill("What is the total revenue for product B in 2020?", columns)
    assert (
        total is not None
        and total.example_id == "sum_of_column"
        and sorted(total.filters) == ["product == B", "year == 2020.0"]
    )
    share = fill("What share of users had a push delivered?", columns)
    assert share is not None and share.example_id == "proportion_of_value" and share.params["col"] == "push_delivered"
