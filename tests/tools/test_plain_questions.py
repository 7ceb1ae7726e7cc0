"""Plain questions read word by word: the issue's known answers on the shipped example, values by
label, comparatives, and no number for a question with a word the parse cannot place."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from whyflow.ask.planning import plan_question
from whyflow.ask.tools.plain_ops import answer_plain
from whyflow.ask.tools.plain_questions import parse_plain

ROOT = Path(__file__).resolve().parents[2]
TITANIC = ROOT.parent / "shared" / "datasets" / "public" / "dabench" / "titanic.csv"


@pytest.fixture(scope="module")
def jobs() -> pd.DataFrame:
    return pd.read_csv(ROOT / "examples" / "job_training.csv")


def _value(question: str, frame: pd.DataFrame) -> tuple[float, str]:
    parsed = parse_plain(question, frame)
    assert parsed is not None and parsed.spec is not None, (question, parsed)
    out = answer_plain(frame, parsed.spec.model_dump(mode="json"))
    return out["value"], out["answer"]


def test_the_untrained_average_age_keeps_its_filter(jobs: pd.DataFrame) -> None:
    value, sentence = _value("What is the average age of people who did not train?", jobs)
    assert value == pytest.approx(jobs.loc[jobs.training == 0, "age"].mean())
    assert round(value, 2) == 41.37
    assert "training = 0" in sentence and f"{int((jobs.training == 0).sum())} rows" in sentence


def test_a_share_of_a_population_is_conditional_on_it(jobs: pd.DataFrame) -> None:
    value, sentence = _value("What percentage of married people took the training?", jobs)
    assert value == pytest.approx(jobs.loc[jobs.married == 1, "training"].mean())
    assert round(value, 3) == 0.330
    assert "married = 1" in sentence and "training = 1" in sentence
    other, _ = _value("What percentage of trainees are married?", jobs)
    assert other == pytest.approx(jobs.loc[jobs.training == 1, "married"].mean())


def test_how_much_more_is_the_difference_of_the_two_means(jobs: pd.DataFrame) -> None:
    value, sentence = _value("How much more do trainees earn than non-trainees on average?", jobs)
    gold = jobs.loc[jobs.training == 1, "earnings"].mean() - jobs.loc[jobs.training == 0, "earnings"].mean()
    assert value == pytest.approx(gold) and round(gold) == -1131
    assert "training = 1" in sentence and "training = 0" in sentence
    less, _ = _value("How much less do trainees earn than non-trainees on average?", jobs)
    assert less == pytest.approx(-gold)
    between, _ = _value("What is the difference in average earnings between trainees and non-trainees?", jobs)
    assert between == pytest.approx(gold)


def test_comparatives_values_and_negations_combine(jobs: pd.DataFrame) -> None:
    value, _ = _value("How many unmarried people in the south region are older than 50?", jobs)
    assert value == ((jobs.married == 0) & (jobs.region == "south") & (jobs.age > 50)).sum()
    value, _ = _value("What is the median earnings of people with at least 12 years of education?", jobs)
    assert value == pytest.approx(jobs.loc[jobs.education_years >= 12, "earnings"].median())
    value, _ = _value("What is the total prior earnings of people aged between 30 and 40?", jobs)
    assert value == pytest.approx(jobs.loc[jobs.age.between(30, 40), "prior_earnings"].sum())


@pytest.mark.skipif(not TITANIC.exists(), reason="the shared datasets are not beside this checkout")
def test_values_by_label_and_ordinal_classes() -> None:
    titanic = pd.read_csv(TITANIC)
    value, sentence = _value("What proportion of women in third class survived?", titanic)
    keep = (titanic.Sex == "female") & (titanic.Pclass == 3)
    assert value == pytest.approx(titanic.loc[keep, "Survived"].mean())
    assert "Sex = female" in sentence and "Pclass = 3" in sentence
    value, _ = _value("What is the average fare of the survivors?", titanic)
    assert value == pytest.approx(titanic.loc[titanic.Survived == 1, "Fare"].mean())


@pytest.mark.parametrize(
    "question",
    [
        "What is the average age of people who live far away?",
        "What is the average age of people who did not finish school?",
        "What is the average age of people who are not in the north region?",
        "What is the average earnings of people in the north or south region?",
    ],
)
def test_a_word_the_parse_cannot_place_gets_no_number(jobs: pd.DataFrame, question: str) -> None:
    parsed = parse_plain(question, jobs)
    assert parsed is None or parsed.spec is None
    plan, _ = plan_question(question, [], jobs)
    assert plan.route == "unanswerable" or (plan.filled is not None and plan.filled.kind != "plain")
    if plan.route == "unanswerable" and parsed is not None and parsed.missing:
        assert "but not" in plan.reasoning and parsed.missing[0] in plan.reasoning


def test_the_reply_names_the_words_it_could_not_read(jobs: pd.DataFrame) -> None:
    plan, _ = plan_question("What is the average age of people who live far away?", [], jobs)
    assert plan.route == "unanswerable"
    assert plan.reasoning == "I understood 'average age' but not 'live far away'"


@pytest.mark.skipif(not TITANIC.exists(), reason="the shared datasets are not beside this checkout")
def test_rates_and_ages_people_leave_implicit() -> None:
    titanic = pd.read_csv(TITANIC)
    value, _ = _value("What is the survival rate of women?", titanic)
    assert value == pytest.approx(titanic.loc[titanic.Sex == "female", "Survived"].mean())
    value, _ = _value("What share of passengers under 10 survived?", titanic)  # 'under 10' is the age, not 'survived'
    assert value == pytest.approx(titanic.loc[titanic.Age < 10, "Survived"].mean())
    value, _ = _value("What is the average fare of passengers over 50 years?", titanic)
    assert value == pytest.approx(titanic.loc[titanic.Age > 50, "Fare"].mean())


def test_the_number_of_a_column_is_the_column(jobs: pd.DataFrame) -> None:
    value, _ = _value("What is the average number of education years of trainees?", jobs)
    assert value == pytest.approx(jobs.loc[jobs.training == 1, "education_years"].mean())
    count, _ = _value("What is the number of trainees?", jobs)
    assert count == (jobs.training == 1).sum()
