"""Generated questions on one column's distribution, one proportion, independent draws and
expected counts (a z-score, a fitted distribution's parameter, the one-sample z-test of a
proportion, the binomial probability of k draws, a cell's expected count under independence) on
seeded frames, the gold computed here by scipy and statsmodels (never the reader's own call).
A column word no name holds, a stated distribution, more hits than draws or an expected count
without its hypothesis must get no number.

    from benchmarks.textbook_distributions_gen import generate_distributions
"""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
from scipy import stats
from scipy.stats.contingency import expected_freq
from statsmodels.stats.proportion import proportions_ztest

from benchmarks.plain_question_gen import Question

_COUNTS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}


def _frame(noise: np.random.Generator, size: int) -> pd.DataFrame:
    arm = noise.choice(["drug", "placebo", "diet"], size)
    cured = np.where(arm == "drug", noise.random(size) < 0.65, noise.random(size) < 0.4)
    return pd.DataFrame(
        {
            "height": noise.normal(170, 9, size).round(1),
            "wait_minutes": noise.exponential(11.0, size).round(2),
            "visits": noise.poisson(2.5, size),
            "arm": arm,
            "result": np.where(cured, "cured", "sick"),
        }
    )


def _z_score(rng: random.Random, df: pd.DataFrame) -> tuple[str, float | None, str]:
    x = rng.choice([150, 165, 180, 188])
    form = rng.choice(
        [
            "What is the z-score of a height of {x} cm?",
            "Compute the standardized value for height {x}.",
            "How many standard deviations above the mean is a height of {x} cm?",
        ]
    )
    if rng.random() < 0.25:
        return form.replace("height", "shoe size").format(x=x), None, "z_absent"
    return form.format(x=x), float((x - df["height"].mean()) / df["height"].std(ddof=1)), "z_score"


def _fit(rng: random.Random, df: pd.DataFrame) -> tuple[str, float | None, str]:
    loc, scale = stats.norm.fit(df["height"])
    _, exp_scale = stats.expon.fit(df["wait_minutes"], floc=0)
    cases = [
        ("Fit an exponential distribution to wait_minutes. What is its rate?", 1 / exp_scale),
        ("If the wait minutes follow an exponential distribution, estimate the rate parameter.", 1 / exp_scale),
        ("Fit a normal distribution to height: what is its standard deviation?", scale),
        ("Suppose height is normally distributed. Estimate the mean of the fitted distribution.", loc),
        ("If visits follow a Poisson distribution, what is the estimated rate?", float(df["visits"].mean())),
        ("If height is normally distributed with mean 170 and sd 9, what is the mean?", None),
    ]
    text, gold = rng.choice(cases)
    return text, None if gold is None else float(gold), "fit" if gold is not None else "fit_stated"


def _one_proportion(rng: random.Random, df: pd.DataFrame) -> tuple[str, float | None, str]:
    k, n = int((df["result"] == "cured").sum()), len(df)
    p0 = rng.choice([0.4, 0.5, 0.55])
    side, rel = rng.choice([("two-sided", "is"), ("larger", "is greater than"), ("smaller", "is less than")])
    z, p = proportions_ztest(k, n, value=p0, alternative=side, prop_var=p0)
    if rng.random() < 0.5:
        text = (
            f"Given the null hypothesis that the proportion of cured {rel} {p0}, conduct a test. Identify the p-value."
        )
        return text, float(p), "one_proportion"
    text = f"Test the hypothesis that the proportion of cured {rel} {p0:.0%}. What is the z-statistic?"
    return text, float(z), "one_proportion"


def _draws(rng: random.Random, df: pd.DataFrame) -> tuple[str, float | None, str]:
    k = rng.randint(2, 5)
    p = float((df["result"] == "cured").mean())
    which = rng.choice(["all", "none", "exactly", "at least", "too many"])
    lead = rng.choice(
        [
            f"{_COUNTS[k].capitalize()} patients are randomly selected.",
            f"Suppose we randomly select {_COUNTS[k]} patients.",
            f"{_COUNTS[k].capitalize()} patients are chosen at random.",
        ]
    )
    if which == "all":
        return f"{lead} What is the probability that all {_COUNTS[k]} are cured?", float(p**k), "draws"
    if which == "none":
        return f"{lead} What is the probability that none of them are cured?", float((1 - p) ** k), "draws"
    j = rng.randint(1, k)
    if which == "exactly":
        gold = float(stats.binom.pmf(j, k, p))
        return f"{lead} What is the probability that exactly {_COUNTS[j]} of them are cured?", gold, "draws"
    if which == "at least":
        gold = float(stats.binom.sf(j - 1, k, p))
        return f"{lead} What is the probability that at least {_COUNTS[j]} of them are cured?", gold, "draws"
    return f"{lead} What is the probability that exactly {_COUNTS[k + 1]} of them are cured?", None, "draws_too_many"


def _expected(rng: random.Random, df: pd.DataFrame) -> tuple[str, float | None, str]:
    table = pd.crosstab(df["arm"], df["result"])
    expected = pd.DataFrame(expected_freq(table), index=table.index, columns=table.columns)
    arm, result = rng.choice(list(table.index)), rng.choice(list(table.columns))
    gold = float(expected.loc[arm, result])
    forms = [
        f"If arm and result were independent, how many {arm} patients would we expect to be {result}?",
        f"Under independence, what is the expected number of {result} patients in the {arm} group?",
        f"If the arms were equally effective, about how many patients on {arm} would you expect to be {result}?",
    ]
    if rng.random() < 0.2:
        return f"How many {arm} patients would we expect to be {result}?", None, "expected_no_hypothesis"
    return rng.choice(forms), gold, "expected_count"


_KINDS = (_z_score, _fit, _one_proportion, _draws, _expected)


def generate_distributions(n: int, seed: int = 0) -> list[tuple[Question, pd.DataFrame, str]]:
    """``n`` seeded (question, frame, prompt) triples with their golds (None: no number)."""
    rng = random.Random(seed)
    out: list[tuple[Question, pd.DataFrame, str]] = []
    while len(out) < n:
        df = _frame(np.random.default_rng(rng.randrange(10**6)), rng.randint(80, 400))
        text, gold, kind = rng.choice(_KINDS)(rng, df)
        out.append((Question(dataset="generated", text=text, gold=gold, kind=kind), df, text))
    return out
