"""Textbook statistics questions read without a model (ask/tools/textbook_questions.py): each
class on a small frame whose answer is computed here by scipy or pandas, and the words a reading
cannot place, which give no number."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from whyflow.ask.tools.plain_ops import answer_plain
from whyflow.ask.tools.plain_spec import PlainSpec
from whyflow.ask.tools.textbook_ops import answer_textbook
from whyflow.ask.tools.textbook_prompt import restated, split_prompt
from whyflow.ask.tools.textbook_questions import parse_textbook


@pytest.fixture(scope="module")
def trial() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    arm = rng.choice(["drug", "placebo", "diet"], size=300)
    cured = np.where(arm == "drug", rng.random(300) < 0.7, rng.random(300) < 0.4)
    return pd.DataFrame(
        {
            "arm": arm,
            "result": np.where(cured, "cured", "sick"),
            "smoker": rng.choice(["yes", "no"], size=300),
            "weight": rng.normal(70, 10, size=300).round(1),
            "visits": rng.integers(1, 4, size=300),
        }
    )


def _answer(text: str, df: pd.DataFrame) -> dict | None:
    parsed = parse_textbook(split_prompt(text), df)
    if parsed is None or parsed.spec is None:
        return None
    spec = parsed.spec.model_dump(mode="json")
    return answer_plain(df, spec) if isinstance(parsed.spec, PlainSpec) else answer_textbook(df, spec)


def test_prompt_splits_description_question_choices_and_rounding() -> None:
    p = split_prompt(
        'The data describe a trial.\n\nIs arm independent of result? Answer with "yes" or "no".\nChoices: yes, no'
    )
    assert (p.context, p.question, p.choices) == (
        "The data describe a trial.",
        "Is arm independent of result?",
        ("yes", "no"),
    )
    assert split_prompt("What is it? Please round to the nearest thousandth.").decimals == 3
    assert split_prompt("What is it? Please round to 4 decimal places.").decimals == 4


def test_a_description_phrase_is_placed_but_never_one_word_alone() -> None:
    context = "Patients were asked 24 hours after they received acupuncture; 30 died."
    text = "pain free 24 hours after receiving acupuncture"
    spans = restated(text, [], context)
    assert [text[s:e] for s, e in spans] == ["24 hours after", "receiving acupuncture"]
    assert restated("who died", [], context) == []


def test_variable_type(trial: pd.DataFrame) -> None:
    ask = 'Is the {} variable numerical or categorical? Answer with "numerical" or "categorical".'
    assert _answer(ask.format("result"), trial)["answer"].startswith("categorical")
    assert _answer(ask.format("weight"), trial)["answer"].startswith("numerical")
    assert _answer(ask.format("visits"), trial) is None  # three codes: the data cannot tell


def test_stated_chi_square_statistic(trial: pd.DataFrame) -> None:
    got = _answer(
        "The test statistic X2 = 7.3 follows a chi-square distribution with four degrees of freedom. Identify the p-value.",
        trial,
    )
    assert got["value"] == pytest.approx(stats.chi2.sf(7.3, 4))


def test_independence_p_value_df_and_decision(trial: pd.DataFrame) -> None:
    table = pd.crosstab(trial["arm"], trial["result"])
    expected = stats.chi2_contingency(table, correction=False)
    null = "Given the null hypothesis that result is independent of arm, conduct a chi-square test."
    assert _answer(f"{null} Identify the p-value.", trial)["value"] == pytest.approx(expected.pvalue)
    assert _answer(f"{null} How many degrees of freedom does the test have?", trial)["value"] == expected.dof
    decision = _answer(
        f'{null} Will you accept or reject the hypothesis at the 5% significance level? Answer with "accept" or "reject".',
        trial,
    )
    assert decision["answer"].startswith("reject" if expected.pvalue < 0.05 else "accept")
    assert "Pearson" in decision["answer"] and "300 rows" in decision["answer"]
    # accept / reject without a stated level is not decided for the asker
    assert _answer(f'{null} Will you accept or reject the hypothesis? Answer with "accept" or "reject".', trial) is None
    said = _answer('Is result independent of arm? Answer with "yes" or "no".', trial)["answer"]
    assert said.startswith("no" if expected.pvalue < 0.05 else "yes")


def test_goodness_of_fit_degrees_of_freedom() -> None:
    df = pd.DataFrame({"colour": ["red", "blue", "green", "red", "teal"]})
    got = _answer(
        "Given the null hypothesis that the rows are a random sample, how many degrees of freedom should be associated with the chi-square distribution?",
        df,
    )
    assert got["value"] == 3


def test_disjoint_within_a_column_and_across_columns(trial: pd.DataFrame) -> None:
    assert _answer('Are the outcomes drug, placebo and diet disjoint? Answer with "yes" or "no".', trial)[
        "answer"
    ].startswith("yes")
    both = ((trial["arm"] == "drug") & (trial["result"] == "cured")).sum()
    got = _answer('Are drug and cured mutually exclusive? Answer with "yes" or "no".', trial)["answer"]
    assert got.startswith("no" if both else "yes") and str(both) in got


def test_conditional_probability(trial: pd.DataFrame) -> None:
    drug = trial["arm"] == "drug"
    expected = (trial.loc[drug, "result"] == "cured").mean()
    got = _answer("What is the probability that a randomly chosen drug patient is cured?", trial)
    assert got["value"] == pytest.approx(expected)
    given = _answer(
        "What is the probability that a randomly selected patient is cured given that he is on drug?", trial
    )
    assert given is None or given["value"] == pytest.approx(expected)
    smokers = trial["smoker"] == "yes"
    flagged = _answer("What is the probability that a smoker patient is cured?", trial)
    assert flagged["value"] == pytest.approx((trial.loc[smokers, "result"] == "cured").mean())


def test_an_unread_word_gives_no_number_and_is_named(trial: pd.DataFrame) -> None:
    parsed = parse_textbook(
        split_prompt('Is result independent of arm among tall patients? Answer with "yes" or "no".'), trial
    )
    assert parsed is not None and parsed.spec is None and "tall" in parsed.missing
    # a value of a tested column is a filter the test does not apply: no number
    assert _answer('Is result independent of arm among drug patients? Answer with "yes" or "no".', trial) is None


def test_sample_size(trial: pd.DataFrame) -> None:
    assert _answer("How many patients were included in the study?", trial)["value"] == len(trial)
    assert _answer("How many patients were cured in the study?", trial) is None
    students = pd.DataFrame({"student": ["yes", "no", "no"], "age": [20, 40, 50]})
    assert _answer("How many students are in the data?", students) is None  # a flag's rows, not every row


def test_standard_error_and_confidence_interval_of_a_proportion(trial: pd.DataFrame) -> None:
    p, n = (trial["result"] == "cured").mean(), len(trial)
    se = np.sqrt(p * (1 - p) / n)
    assert _answer("Estimate the standard error of the proportion of cured.", trial)["value"] == pytest.approx(se)
    lower = p - stats.norm.ppf(0.975) * se
    got = _answer(
        "Construct a 95% confidence interval for the proportion of cured. Please output the lower bound of the confidence interval.",
        trial,
    )
    assert got["value"] == pytest.approx(lower) and "normal approximation" in got["answer"]
    # which proportion is not said and the frame has two two-valued columns: no number
    assert _answer("Estimate the standard error of the point estimate.", trial) is None


def test_difference_in_rates_between_the_two_groups() -> None:
    df = pd.DataFrame(
        {"arm": ["a"] * 4 + ["b"] * 6, "cured": ["yes", "no", "yes", "yes", "no", "no", "yes", "no", "no", "no"]}
    )
    got = _answer("What is the absolute value of the difference in cured rates in the two groups?", df)
    assert got["value"] == pytest.approx(abs(3 / 4 - 1 / 6))
    assert _answer("What is the difference in cured rates in the two groups?", df) is None  # which minus which: unsaid


def test_group_with_the_higher_share() -> None:
    df = pd.DataFrame(
        {"arm": ["a"] * 4 + ["b"] * 6, "cured": ["yes", "no", "yes", "yes", "no", "no", "yes", "no", "no", "no"]}
    )
    got = _answer('In which arm did a higher percentage of patients have cured? Answer with "arm a" or "arm b".', df)
    assert got["answer"].startswith("arm a") and got["value"] == pytest.approx(0.75)
    low = _answer("In which arm did a lower percentage of patients have cured?", df)
    assert low["answer"].startswith("b")


def test_a_proper_name_of_the_description_is_placed() -> None:
    context = "A poll asked New Yorkers about an Ebola quarantine."
    assert restated("from the Ebola survey", [], context) == [(9, 14)]
    assert restated("from the Zika survey", [], context) == []


def test_a_word_of_the_cited_data_file_is_placed() -> None:
    context = "The CSV file smallpox.csv holds people exposed in 1721."
    assert restated("died from smallpox", [], context) == [(10, 18)]


def test_study_design_rests_on_the_description(trial: pd.DataFrame) -> None:
    ask = 'Is this study an experiment or an observational study? Answer with "experiment" or "observational".'
    randomized = _answer(f"Patients were randomly assigned to two arms.\n\n{ask}", trial)
    assert randomized["answer"].startswith("experiment") and "randomly assigned" in randomized["answer"]
    assert _answer(f"Patients chose their arm.\n\n{ask}", trial) is None  # the description does not say


def test_a_survey_copula_reads_as_are() -> None:
    from whyflow.ask.tools.plain_questions import parse_plain

    df = pd.DataFrame({"political": ["liberal", "conservative", "conservative", "moderate"]})
    parsed = parse_plain("What proportion of voters identify themselves as conservatives?", df)
    assert parsed is not None and parsed.spec is not None
    assert answer_plain(df, parsed.spec.model_dump(mode="json"))["value"] == pytest.approx(0.5)


def test_a_stance_verb_names_its_survey_label() -> None:
    df = pd.DataFrame({"quarantine": ["favor"] * 70 + ["against"] * 30})
    got = _answer("Construct a 90% confidence interval for the proportion of adults who supported a quarantine.", df)
    assert got["value"] == pytest.approx(0.7 - stats.norm.ppf(0.95) * np.sqrt(0.7 * 0.3 / 100))
    assert "quarantine = favor" in got["answer"]


@pytest.fixture(scope="module")
def stations() -> pd.DataFrame:
    rng = np.random.default_rng(8)
    n = 60
    hot = rng.poisson(10, n)
    warm = rng.poisson(80, n)
    return pd.DataFrame(
        {
            "station": [f"ST{i:04d}" for i in range(n)],
            "hx30_1990": hot,
            "hx30_2020": hot + rng.integers(-2, 5, n),
            "hx20_1990": warm,
            "hx20_2020": warm + rng.integers(-6, 6, n),
        }
    )


_STATIONS = (
    "The file holds weather stations.\nhx30_1990: Number of days above 30 degrees in 1990.\n"
    "hx30_2020: Number of days above 30 degrees in 2020.\n\n"
)


def test_a_paired_difference_is_the_paired_t_test_of_the_pair_the_question_names(stations: pd.DataFrame) -> None:
    from statsmodels.stats.weightstats import DescrStatsW

    gap = (stations["hx30_1990"] - stations["hx30_2020"]).to_numpy()
    t, p, dof = DescrStatsW(gap).ttest_mean(0.0)
    asked = 'the hypothesis "There is no difference in average number of days exceeding 30°C in 1990 and 2020 for stations".'
    got = _answer(_STATIONS + f"Please calculate the p-value of {asked}", stations)
    assert got is not None and got["value"] == pytest.approx(p)
    assert "paired t-test" in got["answer"] and "hx30_1990 - hx30_2020" in got["answer"]
    got = _answer(_STATIONS + f"Identify the T-statistic of {asked}", stations)
    assert got is not None and got["value"] == pytest.approx(t)
    got = _answer(
        "Given the null hypothesis that there is no difference in the average hx20 in 1990 and 2020, conduct a "
        "hypothesis test. How many degrees of freedom does the test have?",
        stations,
    )
    assert got is not None and got["value"] == dof


def test_a_paired_difference_whose_pair_the_question_leaves_open_gets_no_number(stations: pd.DataFrame) -> None:
    # two pairs differ by 1990 / 2020 and the question names neither measure: no number
    text = "Given the null hypothesis that there is no difference in the average days in 1990 and 2020, conduct a hypothesis test. Identify the p-value."
    parsed = parse_textbook(split_prompt(text), stations)
    assert parsed is not None and parsed.spec is None and "days" in parsed.missing
    # a label no column holds, or a measure word neither the names nor a description give
    for text in (
        "Given the null hypothesis that there is no difference in the average hx30 in 1990 and 2010, conduct a hypothesis test. Identify the p-value.",
        "Given the null hypothesis that there is no difference in the average rainy hx30 in 1990 and 2020, conduct a hypothesis test. Identify the p-value.",
    ):
        parsed = parse_textbook(split_prompt(text), stations)
        assert parsed is None or parsed.spec is None


def test_a_quartile_is_of_the_one_numeric_column_whose_name_holds_the_words() -> None:
    rng = np.random.default_rng(11)
    df = pd.DataFrame(
        {
            "daily_aqi_value": rng.integers(5, 90, 41),
            "max_aqi_value": rng.integers(5, 90, 41),
            "pm_mean": rng.normal(10, 2, 41),
        }
    )
    values = np.sort(df["daily_aqi_value"].to_numpy())
    q1, median, q3 = np.percentile(values, [25, 50, 75], method="linear")
    for text, gold in (
        ("Estimate the median daily AQI value of this sample.", median),
        ("Estimate the first quartile (Q1) of the daily aqi value.", q1),
        ("Find the interquartile range (IQR) of the daily aqi value.", q3 - q1),
    ):
        got = _answer(text, df)
        assert got is not None and got["value"] == pytest.approx(gold), text
        assert "interpolated linearly" in got["answer"]
    # 'AQI value' is in two names, 'infant' in none: no number, the phrase's words said unread
    for text, word in (
        ("Estimate the median AQI value of this sample.", "aqi"),
        ("What is the median of infant pm?", "infant"),
    ):
        parsed = parse_textbook(split_prompt(text), df)
        assert parsed is not None and parsed.spec is None and word in parsed.missing


def test_a_difference_between_two_values_of_one_column_is_welchs_two_sample_t_test(trial: pd.DataFrame) -> None:
    from statsmodels.stats.weightstats import ttest_ind

    drug, placebo = (trial.loc[trial["arm"] == g, "weight"].to_numpy() for g in ("drug", "placebo"))
    t, p, dof = ttest_ind(drug, placebo, usevar="unequal")
    null = "Given the null hypothesis that there is no difference in the average weight between drug and placebo"
    got = _answer(f"{null}, conduct a hypothesis test. Identify the p-value.", trial)
    assert got is not None and got["value"] == pytest.approx(p)
    assert "Welch's two-sample t-test" in got["answer"] and got["n"] == len(drug) + len(placebo)
    got = _answer(f"{null}, conduct a hypothesis test. How many degrees of freedom does the test have?", trial)
    assert got is not None and got["value"] == pytest.approx(dof)
    # a measure no column holds: no number
    parsed = parse_textbook(
        split_prompt(f"{null.replace('weight', 'height')}, conduct a hypothesis test. Identify the p-value."), trial
    )
    assert parsed is not None and parsed.spec is None and "height" in parsed.missing


def test_an_opinion_not_different_between_a_flag_and_its_negation_is_the_chi_square_test() -> None:
    """'the opinion of graduates and non-graduates is not different': the flag column names its two
    values, the opinion the table's one other categorical column."""
    rng = np.random.default_rng(11)
    grad = rng.choice(["yes", "no"], size=400)
    view = np.where(grad == "yes", rng.choice(["support", "oppose", "unsure"], 400, p=[0.5, 0.3, 0.2]), "oppose")
    view = np.where(rng.random(400) < 0.5, rng.choice(["support", "oppose", "unsure"], 400), view)
    df = pd.DataFrame({"graduate": grad, "stance": view})
    expected = stats.chi2_contingency(pd.crosstab(df["graduate"], df["stance"]), correction=False)
    context = "Voters were asked whether they support the new city tax.\n\n"
    for wording in (
        "Given the null hypothesis that the opinion of graduates and non-graduates is not different on the topic "
        "of the new city tax, conduct a chi-square test. Identify the p-value.",
        "Under the null hypothesis that graduates and non-graduates do not differ in opinion, conduct a "
        "chi-square test and identify the p-value.",
        "Conduct a chi-square test of the null hypothesis that the opinion of graduates and non-graduates on the "
        "subject of the new city tax is not different. What is the p-value?",
    ):
        got = _answer(context + wording, df)
        assert got is not None, wording
        assert got["value"] == pytest.approx(expected.pvalue) and "Pearson" in got["answer"]
    # a third value no column holds is a filter the test does not apply: no number
    assert (
        _answer(
            context + "Is the opinion of graduates and non-graduates on the city tax not different among "
            "tall voters? Conduct a chi-square test. Identify the p-value.",
            df,
        )
        is None
    )
