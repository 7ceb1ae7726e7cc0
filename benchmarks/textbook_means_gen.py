"""Generated paired-difference questions ("the null hypothesis that there is no difference in the
average <measure> in <A> and <B>"), each on its own seeded frame with two measures taken twice
on the same rows, the gold computed here by statsmodels (the one-sample t-test of the row
differences, never the reader's scipy call). A question that names the labels but not which of
the two measures ('the average value'), or a measure the frame lacks, must get no number.

The same wording over two groups of one column ("between drug and placebo") is Welch's
two-sample t-test, its gold by statsmodels' ``ttest_ind(usevar='unequal')``.

    from benchmarks.textbook_means_gen import generate_paired, generate_two_sample
"""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
from statsmodels.stats.weightstats import DescrStatsW, ttest_ind

from benchmarks.plain_question_gen import Question

_LABELS = (("before", "after"), ("2019", "2020"), ("morning", "evening"), ("left", "right"))
_MEASURES = ("price", "score", "weight", "visits", "sales", "temperature")
_ASKED = {
    "p": "Identify the p-value.",
    "t": "Identify the test statistic.",
    "df": "How many degrees of freedom does the test have?",
}


def _frame(rng: random.Random, measures: list[str], labels: tuple[str, str]) -> pd.DataFrame:
    noise = np.random.default_rng(rng.randrange(10**6))
    n = rng.randint(15, 80)
    data: dict[str, object] = {"site": [f"S{i:03d}" for i in range(n)]}
    for m in measures:
        base = noise.normal(50, 10, n)
        data[f"{m}_{labels[0]}"] = base.round(2)
        data[f"{m}_{labels[1]}"] = (base + noise.normal(rng.choice([0.0, 1.5, 4.0]), 5, n)).round(2)
    return pd.DataFrame(data)


def generate_paired(n: int, seed: int = 0) -> list[tuple[Question, pd.DataFrame, str]]:
    """``n`` seeded (question, frame, prompt) triples with their golds (None: no number)."""
    rng = random.Random(seed)
    out: list[tuple[Question, pd.DataFrame, str]] = []
    while len(out) < n:
        labels = rng.choice(_LABELS)
        measures = rng.sample(_MEASURES, rng.choice([1, 2]))
        df = _frame(rng, measures, labels)
        kind = rng.choice(["p", "t", "df", "ambiguous", "absent"])
        asked = _ASKED["p" if kind in ("ambiguous", "absent") else kind]
        said = rng.choice(measures)
        if kind == "ambiguous":
            said = "value" if len(measures) == 2 else said
        elif kind == "absent":
            said = next(m for m in _MEASURES if m not in measures)
        form = rng.choice(["in {a} and {b}", "between {a} and {b}"])
        text = (
            f"Given the null hypothesis that there is no difference in the average {said} "
            f"{form.format(a=labels[0], b=labels[1])}, conduct a hypothesis test. {asked}"
        )
        gold: float | None = None
        if kind in ("p", "t", "df") or (kind == "ambiguous" and len(measures) == 1):
            gap = df[f"{said}_{labels[0]}"] - df[f"{said}_{labels[1]}"]
            t, p, dof = DescrStatsW(gap.to_numpy()).ttest_mean(0.0)
            gold = float({"p": p, "t": t, "df": dof}["p" if kind == "ambiguous" else kind])
        out.append((Question(dataset="generated", text=text, gold=gold, kind=f"paired_{kind}"), df, text))
    return out


_GROUPS = (("drug", "placebo"), ("urban", "rural"), ("north", "south"))


def generate_two_sample(n: int, seed: int = 0) -> list[tuple[Question, pd.DataFrame, str]]:
    """``n`` seeded two-group questions; a measure the frame lacks, or a group no row holds, gets
    gold None (no number)."""
    rng = random.Random(seed)
    out: list[tuple[Question, pd.DataFrame, str]] = []
    while len(out) < n:
        noise = np.random.default_rng(rng.randrange(10**6))
        groups = rng.choice(_GROUPS)
        size = rng.randint(20, 90)
        measures = rng.sample(_MEASURES, 2)
        third = rng.random() < 0.3
        labels = list(groups) + (["other"] if third else [])
        df = pd.DataFrame({"arm": [rng.choice(labels) for _ in range(size)]})
        for m in measures:
            df[m] = (noise.normal(50, 10, size) + np.where(df["arm"] == groups[0], rng.choice([0, 3]), 0)).round(2)
        kind = rng.choice(["p", "t", "df", "absent"])
        said = rng.choice(measures) if kind != "absent" else next(m for m in _MEASURES if m not in measures)
        asked = _ASKED["p" if kind == "absent" else kind]
        text = (
            f"Given the null hypothesis that there is no difference in the average {said} between {groups[0]} and "
            f"{groups[1]}, conduct a hypothesis test. {asked}"
        )
        gold: float | None = None
        x, y = (df.loc[df["arm"] == g, said].to_numpy() for g in groups) if said in df else ((), ())
        if kind != "absent" and len(x) > 1 and len(y) > 1:
            t, p, dof = ttest_ind(x, y, usevar="unequal")
            gold = float({"p": p, "t": t, "df": dof}[kind])
        out.append((Question(dataset="generated", text=text, gold=gold, kind=f"two_sample_{kind}"), df, text))
    return out
