"""A stated-format question whose rows are named by a value the data does not hold gets no number
for all the rows instead: the population is a clause the parse could not place."""

from __future__ import annotations

import numpy as np
import pandas as pd

from whyflow.ask.tools.requests import parse_requests


def _offences() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame(
        {"Category": rng.choice(["Burglary", "Fraud"], 200), "Age": rng.integers(18, 70, 200).astype(float)}
    )


def test_a_population_named_by_an_unheld_value_is_not_computed() -> None:
    question = (
        "What is the mean age of offenders in 'Assault' category?\n"
        'Format: @mean_age[mean] where "mean" is rounded to two decimal places.'
    )
    spec = parse_requests(question, _offences())
    assert spec is not None and [r.op for r in spec.requests] == ["unknown"]
    assert "Assault" in (spec.requests[0].reason or "")


def test_a_held_value_still_filters() -> None:
    frame = _offences()
    question = (
        "What is the mean age of offenders in 'Fraud' category?\n"
        'Format: @mean_age[mean] where "mean" is rounded to two decimal places.'
    )
    spec = parse_requests(question, frame)
    assert spec is not None and spec.requests[0].op == "mean"
    assert any(s.get("kind") == "filter" and s.get("value") == "Fraud" for s in spec.steps)
