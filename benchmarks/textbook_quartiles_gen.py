"""Generated quartile questions ("estimate the median <words> of this sample", "the first
quartile (Q1) of the <words>", "the interquartile range (IQR) of <words>") on seeded frames, the
gold computed here by :func:`statistics.quantiles` (method 'inclusive', the same type-7
interpolation the answer states, never the reader's pandas call). Words two columns' names hold,
or a word no name holds, must get no number.

    from benchmarks.textbook_quartiles_gen import generate_quartiles
"""

from __future__ import annotations

import random
import statistics

import numpy as np
import pandas as pd

from benchmarks.plain_question_gen import Question

_COLUMNS = ("daily_aqi_value", "max_aqi_value", "wait_minutes", "price_usd", "inf_mort_rate", "birth_rate")
_FORMS = {
    "median": ("Estimate the median {w} of this sample.", "What is the median of the {w}?"),
    "q1": ("Estimate the first quartile (Q1) of the {w}.", "What is the first quartile of {w}?"),
    "q3": ("Compute the third quartile (Q3) of the {w} in the data.",),
    "iqr": ("Find the interquartile range (IQR) of the {w}.",),
}


def generate_quartiles(n: int, seed: int = 0) -> list[tuple[Question, pd.DataFrame, str]]:
    """``n`` seeded (question, frame, prompt) triples with their golds (None: no number)."""
    rng = random.Random(seed)
    out: list[tuple[Question, pd.DataFrame, str]] = []
    while len(out) < n:
        noise = np.random.default_rng(rng.randrange(10**6))
        size = rng.randint(9, 60)
        columns = rng.sample(_COLUMNS, 3)
        df = pd.DataFrame({c: noise.gamma(2.0, 10.0, size).round(1) for c in columns})
        df["site"] = [f"s{i}" for i in range(size)]
        column = rng.choice(columns)
        kind = rng.choice(["median", "q1", "q3", "iqr", "shared", "absent"])
        asked = kind if kind in _FORMS else "median"
        parts = column.split("_")
        said = " ".join(rng.choice([parts, parts[-2:], parts[:2]]))
        if kind == "shared":
            said = "rate" if "rate" in " ".join(columns) else "value"
        elif kind == "absent":
            said = f"{said} growth"
        text = rng.choice(_FORMS[asked]).format(w=said)
        holders = [c for c in columns if set(said.split()) <= set(c.split("_"))]
        gold: float | None = None
        if len(holders) == 1:
            q1, median, q3 = statistics.quantiles(df[holders[0]].tolist(), n=4, method="inclusive")
            gold = {"median": median, "q1": q1, "q3": q3, "iqr": q3 - q1}[asked]
        out.append((Question(dataset="generated", text=text, gold=gold, kind=f"quartile_{kind}"), df, text))
    return out
