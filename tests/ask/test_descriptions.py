"""A dataset's description read into column phrases, and the slot matcher linking a question's words
to a column through them (and never through a phrase two columns share)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from whyflow.ask.tools.descriptions import column_aliases, merge_aliases, metadata_aliases
from whyflow.ask.tools.plain_ops import answer_plain
from whyflow.ask.tools.plain_questions import parse_plain
from whyflow.ask.tools.slots import describe_columns, find_columns

COLUMNS = ["treat", "age", "educ", "re74", "re75", "re78", "married", "No. of cases"]


# ---- reading the description --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "re78: earnings in 1978\ntreat: whether the person joined the programme",
            {"re78": ("earnings in 1978",), "treat": ("whether the person joined the programme",)},
            id="name-colon",
        ),
        pytest.param(
            "- re74 — earnings in 1974\n* **re75** - earnings in 1975\n1. `re78` = earnings in 1978",
            {"re74": ("earnings in 1974",), "re75": ("earnings in 1975",), "re78": ("earnings in 1978",)},
            id="bullets-dashes-bold",
        ),
        pytest.param(
            "Columns: re74: earnings in 1974; re75: earnings in 1975, re78: real earnings in 1978.",
            {"re74": ("earnings in 1974",), "re75": ("earnings in 1975",), "re78": ("real earnings in 1978",)},
            id="items-in-one-line",
        ),
        pytest.param(
            "The file has 'treat', representing whether the person joined the programme, and 're78', "
            "representing the earnings in 1978.",
            {"treat": ("whether the person joined the programme",), "re78": ("earnings in 1978",)},
            id="quoted-representing",
        ),
        pytest.param(
            "The variable educ, which indicates the years of schooling, and 'married' is 1 for a married person.",
            {"educ": ("years of schooling",), "married": ("1 for a married person",)},
            id="which-indicates-and-quoted-is",
        ),
        pytest.param(
            "The data records the earnings in 1978 (`re78`) and whether the person joined the programme (treat).",
            {"re78": ("earnings in 1978",), "treat": ("whether the person joined the programme",)},
            id="phrase-before-brackets",
        ),
        pytest.param(
            "married: Married at enrolment (1 = yes). Everyone was surveyed.",
            {"married": ("Married at enrolment",)},
            id="bracketed-remark-and-next-sentence-off",
        ),
        pytest.param(
            "No. of cases: confirmed cases reported that week",
            {"No. of cases": ("confirmed cases reported that week",)},
            id="name-with-punctuation",
        ),
    ],
)
def test_each_way_of_describing_a_column_is_read(text: str, expected: dict[str, tuple[str, ...]]) -> None:
    assert column_aliases(text, COLUMNS) == expected


def test_words_that_are_no_column_bare_prose_and_structured_values_give_nothing() -> None:
    text = "income: what people earn. The age is in years; treatment was randomised (see the appendix)."
    assert column_aliases(text, COLUMNS) == {}
    assert column_aliases("columns:\n  re78: {description: Earnings in 1978}\n  age: [years]", COLUMNS) == {}


def test_metadata_column_descriptions_match_case_blind_and_merge_without_repeats() -> None:
    notes = {"RE78": "Earnings in 1978 (USD)", "region": "Region of residence", "treat": "Joined the programme"}
    got = metadata_aliases(notes, COLUMNS)
    assert got == {"re78": ("Earnings in 1978",), "treat": ("Joined the programme",)}
    merged = merge_aliases(got, {"re78": ("earnings in 1978", "wages in 1978")})
    assert merged["re78"] == ("Earnings in 1978", "wages in 1978")


# ---- linking a question's words through the phrases -------------------------------------------
@pytest.fixture(scope="module")
def jobs() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    n = 400
    return pd.DataFrame(
        {
            "treat": rng.integers(0, 2, n),
            "age": rng.integers(18, 55, n),
            "re74": rng.gamma(2, 3000, n).round(2),
            "re75": rng.gamma(2, 3000, n).round(2),
            "re78": rng.gamma(2, 4000, n).round(2),
        }
    )


DESCRIBED = {
    "re74": ("earnings in 1974",),
    "re75": ("earnings in 1975",),
    "re78": ("earnings in 1978",),
    "treat": ("whether the person joined the programme",),
}


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What is the average earnings in 1978?", ["re78"]),
        ("Mean earnings in 1975 of those in the programme", ["re75", "treat"]),
        ("How old is the average person?", ["age"]),
    ],
)
def test_a_question_reaches_a_column_through_its_phrase(jobs: pd.DataFrame, question: str, expected: list[str]) -> None:
    infos = describe_columns(jobs, aliases=DESCRIBED)
    assert [m.column for m in find_columns(question, infos)] == expected


@pytest.mark.parametrize(
    "question",
    [
        "What are the mean earnings?",  # three columns are 'earnings in 19..': none is picked
        "How many persons are there?",  # 'person' names the rows, not the column treat
        "What is the average in 1978?",  # a year alone is no column's word
    ],
)
def test_a_word_the_phrases_share_or_a_row_noun_names_no_column(jobs: pd.DataFrame, question: str) -> None:
    infos = describe_columns(jobs, aliases=DESCRIBED)
    assert [m for m in find_columns(question, infos) if m.via == "alias"] == []


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("How many people took the exam?", []),  # 'failed' is left out: the run would turn it around
        ("How many people have a high-school degree?", []),  # so is the negation of 'no high-school degree'
        ("How many people have no high-school degree?", ["nodegree"]),
        ("What is the average test score?", []),  # a content word before the run ('skills') is left out
        ("What is the average skills test score?", ["skills_score"]),  # a qualifier after it may be
    ],
)
def test_a_run_never_leaves_out_a_word_that_changes_the_phrase(question: str, expected: list[str]) -> None:
    frame = pd.DataFrame({"failed": [0, 1], "nodegree": [1, 0], "skills_score": [40.0, 60.0]})
    described = {
        "failed": ("failed the exam",),
        "nodegree": ("no high-school degree",),
        "skills_score": ("skills test score at the end of the programme",),
    }
    infos = describe_columns(frame, aliases=described)
    assert [m.column for m in find_columns(question, infos) if m.via == "alias"] == expected


def test_a_phrase_shared_with_another_columns_name_links_neither() -> None:
    frame = pd.DataFrame({"earnings": [1.0, 2.0], "re78": [3.0, 4.0]})
    infos = describe_columns(frame, aliases={"re78": ("earnings",)})
    assert [(m.column, m.via) for m in find_columns("average earnings", infos)] == [("earnings", "name")]


@pytest.mark.parametrize(
    ("question", "gold"),
    [
        ("What is the average earnings in 1978 of people who joined the programme?", "treated_mean"),
        ("How many people did not join the programme?", "control_count"),
    ],
)
def test_the_plain_reader_answers_through_the_phrases_and_declines_without(
    jobs: pd.DataFrame, question: str, gold: str
) -> None:
    truth = {
        "treated_mean": float(jobs.loc[jobs.treat == 1, "re78"].mean()),
        "control_count": float((jobs.treat == 0).sum()),
    }[gold]
    bare = parse_plain(question, jobs)
    assert bare is not None and bare.spec is None and bare.missing  # the words name no column without them
    read = parse_plain(question, jobs, columns=describe_columns(jobs, aliases=DESCRIBED))
    assert read is not None and read.spec is not None, read
    got = answer_plain(jobs, read.spec.model_dump(mode="json"))["value"]
    assert float(got) == pytest.approx(truth)


# ---- causal questions ---------------------------------------------------------------------------
TRIAL_DESCRIPTION = {"arm": ("1 if the patient got the new drug",), "recovery_days": ("recovery time in days",)}


@pytest.mark.parametrize(
    "question",
    [
        "What is the effect of the new drug on recovery time?",
        "Does the new drug affect recovery time in days?",
    ],
)
def test_a_causal_question_in_the_descriptions_words_runs_the_recipe_on_those_columns(question: str) -> None:
    from whyflow.ask.planning import plan_question

    rng = np.random.default_rng(0)
    trial = pd.DataFrame({"arm": rng.integers(0, 2, 200), "age": rng.integers(20, 80, 200)})
    trial["recovery_days"] = 10 - 2 * trial["arm"] + rng.normal(size=200)
    bare, _ = plan_question(question, [], trial)
    assert bare.route != "causal"  # 'the new drug' names no column without the description
    plan, _ = plan_question(question, [], trial, aliases=TRIAL_DESCRIPTION)
    assert (plan.route, plan.treatment, plan.outcome) == ("causal", "arm", "recovery_days")


@pytest.mark.parametrize(
    "question",
    [
        "What is the effect of the new drug on recovery time for older patients?",  # says more than the phrase
        "What is the effect of the drug on recovery?",  # leaves out words that make the phrase
    ],
)
def test_a_causal_side_that_is_not_a_described_phrase_names_no_column(question: str) -> None:
    from whyflow.ask._shared import causal_pair

    assert causal_pair(question, ["arm", "age", "recovery_days"], TRIAL_DESCRIPTION) is None


def test_an_effect_whose_sides_name_no_column_says_which_words_and_how_to_name_them() -> None:
    from whyflow.ask.planning import plan_question

    rng = np.random.default_rng(1)
    trial = pd.DataFrame({"arm": rng.integers(0, 2, 100), "recovery_days": rng.normal(10, 2, 100)})
    both, _ = plan_question("What is the effect of the new drug on recovery time?", [], trial)
    assert both.route == "unanswerable" and both.parameters["unread"]
    assert "neither 'new drug' nor 'recovery time' names a column of the data (arm, recovery_days)" in both.reasoning
    one, _ = plan_question("What is the effect of arm on recovery time?", [], trial)
    assert "but 'recovery time' names no column" in one.reasoning and "--describe" in one.reasoning
