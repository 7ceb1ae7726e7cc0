"""Textbook questions on unions of events, two-sample tests of proportions and a variable written
twice (ask/tools/textbook_events.py, textbook_proportions.py, textbook_reader.recodes): on
generated frames whose answers are computed here by pandas and statsmodels, several seeds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from whyflow.ask.tools.textbook_ops import answer_textbook
from whyflow.ask.tools.textbook_prompt import split_prompt
from whyflow.ask.tools.textbook_questions import parse_textbook
from whyflow.ask.tools.textbook_spec import TextbookSpec


def _parse(text: str, df: pd.DataFrame):
    parsed = parse_textbook(split_prompt(text), df)
    assert parsed is not None, text
    return parsed


def _answer(text: str, df: pd.DataFrame) -> dict | None:
    parsed = _parse(text, df)
    if parsed.spec is None:
        return None
    assert isinstance(parsed.spec, TextbookSpec)
    return answer_textbook(df, parsed.spec.model_dump(mode="json"))


def _loans(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = 400
    home = rng.choice(["RENT", "MORTGAGE", "OWN"], size=n, p=rng.dirichlet([2, 2, 2]))
    home = pd.Series(home).where(rng.random(n) > 0.05)  # some unknown
    return pd.DataFrame({"homeownership": home, "grade": rng.choice(list("ABC"), size=n), "amount": rng.random(n)})


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_probability_of_one_value_or_another_is_the_share_holding_either(seed: int) -> None:
    df = _loans(seed)
    known = df["homeownership"].dropna()
    gold = known.isin(["MORTGAGE", "OWN"]).mean()
    got = _answer(
        "Compute the probability a randomly selected loan from the data set is for someone who has a mortgage or "
        "owns her home. Please round to the nearest hundredth.",
        df,
    )
    assert got is not None and got["value"] == pytest.approx(gold) and got["n"] == len(known)
    assert got["answer"].startswith(f"{gold:.2f}:") and "homeownership = OWN" in got["answer"]
    across = _answer("What is the probability that a randomly chosen loan is rent or grade b?", df)
    both = df.dropna(subset=["homeownership"])
    assert across is not None
    assert across["value"] == pytest.approx(((both["homeownership"] == "RENT") | (both["grade"] == "B")).mean())


def test_a_union_with_a_word_it_cannot_place_or_a_condition_gives_no_number() -> None:
    df = _loans(4)
    for text in (
        "Compute the probability a randomly selected loan is for someone who has a large mortgage or owns her home.",
        "Compute the probability a randomly selected loan is for someone who does not rent or owns her home.",
    ):
        parsed = _parse(text, df)
        assert parsed.spec is None, text
    # 'and' / 'given': a joint or conditional probability, not a union: not read as one
    parsed = parse_textbook(
        split_prompt("What is the probability that a randomly chosen loan is grade b given that it is rent or own?"), df
    )
    assert parsed is None or parsed.spec is None or parsed.spec.kind != "union"


@pytest.mark.parametrize("seed", [0, 5])
def test_a_variable_written_twice_counts_once_beside_the_outcome(seed: int) -> None:
    from scipy import stats

    rng = np.random.default_rng(seed)
    cls = rng.choice(["general", "positive", "negative"], size=200)
    wording = {"general": "What about it?", "positive": "No problems, right?", "negative": "What problems?"}
    df = pd.DataFrame(
        {"question_class": cls, "question": [wording[c] for c in cls], "response": rng.choice(["hide", "tell"], 200)}
    )
    text = (
        "Given the null hypothesis that the questions had no impact on the sellers in the experiment, how many "
        "degrees of freedom should be associated with the chi-square distribution used for X2?"
    )
    got = _answer(text, df)
    dof = stats.chi2_contingency(pd.crosstab(df["question"], df["response"])).dof
    assert got is not None and got["value"] == dof == 2
    # two different variables beside the one named: which is the outcome is open, no number
    df["other"] = rng.choice(["x", "y"], 200)
    assert _parse(text, df).spec is None


def _survey(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = 500
    grad = rng.choice(["yes", "no"], size=n)
    share = np.where(grad == "yes", 0.3 + 0.1 * seed, 0.35)
    position = np.where(rng.random(n) < share, "support", rng.choice(["oppose", "do_not_know"], size=n))
    return pd.DataFrame({"position": position, "college_grad": grad})


_EQUAL = (
    "Given the hypothesis that the proportion of college graduates who support off-shore drilling is equal to that "
    "of non-college graduates, "
)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_equal_proportions_is_the_pooled_two_sample_z_test(seed: int) -> None:
    from statsmodels.stats.proportion import proportions_ztest

    df = _survey(seed)
    support = df["position"] == "support"
    counts = [int((support & (df["college_grad"] == g)).sum()) for g in ("yes", "no")]
    sizes = [int((df["college_grad"] == g).sum()) for g in ("yes", "no")]
    z, p = proportions_ztest(counts, sizes)
    context = "A survey asked voters whether they support off-shore drilling.\n\n"
    got = _answer(context + _EQUAL + "identify the p-value.", df)
    assert got is not None and got["value"] == pytest.approx(p) and got["n"] == len(df)
    assert "pooled" in got["answer"] and "college_grad = yes" in got["answer"]
    got = _answer(
        context
        + _EQUAL
        + 'will you accept or reject the hypothesis with a significance level of 5%? Answer with "accept" '
        'or "reject".',
        df,
    )
    assert got is not None and got["answer"].startswith("reject" if p < 0.05 else "accept")
    # accept / reject without a stated level, or an event word no value holds: no number
    assert (
        _answer(context + _EQUAL + 'will you accept or reject the hypothesis? Answer with "accept" or "reject".', df)
        is None
    )
    assert _answer(_EQUAL.replace("support", "strongly support") + "identify the p-value.", df) is None


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_skew_direction_is_the_sign_of_scipys_skewness_beyond_twice_its_error(seed: int) -> None:
    from scipy import stats

    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "income_k": rng.lognormal(3, 0.8, 300),
            "exam_score": 100 - rng.lognormal(2, 0.7, 300),
            "height_cm": rng.normal(170, 8, 300),
        }
    )
    ask = 'Is the distribution of {} left-skewed, right-skewed or symmetric? Answer with "left-skewed", "right-skewed" or "symmetric".'
    for column, word in (("income_k", "right-skewed"), ("exam_score", "left-skewed")):
        got = _answer(ask.format(column.replace("_", " ")), df)
        assert got is not None and got["value"] == pytest.approx(stats.skew(df[column], bias=False))
        assert got["answer"].startswith(word) and "300 known values" in got["answer"]
    n = 300
    band = 2 * np.sqrt(6 * n * (n - 1) / ((n - 2) * (n + 1) * (n + 3)))
    normal = _answer(ask.format("height cm"), df)
    assert normal is not None
    sign = stats.skew(df["height_cm"], bias=False)
    expected = "symmetric" if abs(sign) <= band else "right-skewed" if sign > 0 else "left-skewed"
    assert normal["answer"].startswith(expected)
    # a phrase no numeric name holds: no number
    assert _parse(ask.format("weekly income"), df).spec is None
