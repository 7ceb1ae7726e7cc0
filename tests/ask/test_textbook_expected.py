"""Expected counts under independence read without a model (ask/tools/textbook_expected.py): the
cell's expected count, computed here by scipy's expected_freq on a generated two-way table, and
the hypothesis or a stated share that must agree with the data before any number is given."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats.contingency import expected_freq

from tests.ask.textbook_answers import textbook_answer


@pytest.fixture(scope="module")
def trial() -> pd.DataFrame:
    rng = np.random.default_rng(21)
    arm = rng.choice(["drug", "placebo", "diet"], size=301)
    cured = np.where(arm == "drug", rng.random(301) < 0.7, rng.random(301) < 0.4)
    return pd.DataFrame({"arm": arm, "result": np.where(cured, "cured", "sick")})


def _gold(df: pd.DataFrame, arm: str, result: str) -> float:
    table = pd.crosstab(df["arm"], df["result"])
    return float(pd.DataFrame(expected_freq(table), index=table.index, columns=table.columns).loc[arm, result])


@pytest.mark.parametrize(
    ("wording", "arm", "result"),
    [
        ("If arm and result were independent, how many drug patients would we expect to be cured?", "drug", "cured"),
        ("Under independence, what is the expected number of sick patients in the placebo group?", "placebo", "sick"),
        (
            "If the arms were equally effective, about how many patients on diet would you expect to be sick?",
            "diet",
            "sick",
        ),
        (
            "Assuming that result is independent of arm, what is the expected count of cured patients in the diet arm?",
            "diet",
            "cured",
        ),
    ],
)
def test_the_expected_count_of_a_cell_is_row_total_times_column_total_over_rows(
    trial: pd.DataFrame, wording: str, arm: str, result: str
) -> None:
    got = textbook_answer(wording, trial, kind="expected_count")
    assert got is not None, wording
    assert got["value"] == pytest.approx(_gold(trial, arm, result))
    assert "under independence" in got["answer"] and "301 rows" in got["answer"]


def test_a_stated_share_must_be_the_datas_own(trial: pd.DataFrame) -> None:
    share = 100 * float((trial["result"] == "cured").mean())
    ask = (
        "If the arms were equally effective, meaning about {:.2f}% of patients would be cured regardless of which "
        "arm they were in, about how many patients would we expect to be sick in the placebo group?"
    )
    got = textbook_answer(ask.format(share), trial, kind="expected_count")
    assert got is not None and got["value"] == pytest.approx(_gold(trial, "placebo", "sick"))
    assert (
        textbook_answer(ask.format(share + 3), trial, kind="expected_count") is None
    )  # another share: another question


def test_an_expected_count_without_its_hypothesis_or_cell_gets_no_number(trial: pd.DataFrame) -> None:
    assert textbook_answer("How many drug patients would we expect to be cured?", trial, kind="expected_count") is None
    assert (
        textbook_answer(
            "If arm and result were independent, how many patients would we expect to be cured?",
            trial,
            kind="expected_count",
        )
        is None
    )
    assert (
        textbook_answer(
            "If arm and result were independent, how many tall drug patients would we expect to be cured?",
            trial,
            kind="expected_count",
        )
        is None
    )


def test_the_hypothesis_and_its_regardless_clause_place_only_column_words(trial: pd.DataFrame) -> None:
    assert (
        textbook_answer(
            "If the tall arms were equally effective, how many drug patients would we expect to be cured?",
            trial,
            kind="expected_count",
        )
        is None
    )
    ask = (
        "If the arms were equally effective, meaning about {:.2f}% of patients would be cured regardless of which "
        "colour they were in, how many patients would we expect to be sick in the placebo group?"
    )
    assert textbook_answer(ask.format(100 * float((trial["result"] == "cured").mean())), trial) is None
