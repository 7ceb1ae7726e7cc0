"""A directed causal question runs the estimand and the method it names, and says what ran."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from whyflow.ask.tools.causal_designs import DesignRequestError
from whyflow.ask.tools.causal_requests import CausalRequestError, parse_causal
from whyflow.ask.tools.request_spec import request_code


@pytest.fixture()
def frame() -> pd.DataFrame:
    """Confounded treatment with an effect of 2 + 3*x1: the ATT and the ATC differ."""
    rng = np.random.default_rng(11)
    n = 2000
    x1, x2 = rng.normal(size=n), rng.normal(size=n)
    t = (rng.random(n) < 1 / (1 + np.exp(-(1.2 * x1 - 0.5 * x2)))).astype(int)
    y = 1 + x1 + 0.5 * x2 + t * (2 + 3 * x1) + rng.normal(scale=0.5, size=n)
    return pd.DataFrame({"t": t, "y": y, "x1": x1, "x2": x2})


def _run(question: str, frame: pd.DataFrame) -> dict:
    parsed = parse_causal(question, frame)
    assert parsed is not None
    scope: dict = {"df": frame}
    exec(request_code(parsed[0]), scope)  # noqa: S102 - the code the sandbox would run
    return scope["result"]


@pytest.mark.parametrize("words, estimand", [("on the treated", "att"), ("on the control", "atc"), ("", "ate")])
def test_the_named_estimand_is_estimated(frame: pd.DataFrame, words: str, estimand: str) -> None:
    q = (
        f"The study evaluates the effect of the programme (t) on earnings (y). What is the average treatment effect "
        f"{words} of the dataset? Please round to the nearest hundredth."
    )
    got = _run(q, frame)
    group = {"att": frame.t == 1, "atc": frame.t == 0, "ate": frame.t >= 0}[estimand]
    truth = float((2 + 3 * frame.x1)[group].mean())
    est = got["effect"]["estimate"]
    assert abs(est - truth) < 3 * got["effect"]["se"] + 0.05
    assert got["answer"].startswith(f"{est:.2f} is the average treatment effect")
    assert "regression adjustment" in got["answer"] and "standard error" in got["answer"]


def test_a_named_method_is_the_one_run(frame: pd.DataFrame) -> None:
    q = "Estimate the ATT of (t) on (y) using inverse probability weighting with a logistic propensity score."
    got = _run(q, frame)
    truth = float((2 + 3 * frame.x1)[frame.t == 1].mean())
    assert "inverse probability weighting" in got["answer"]
    assert abs(got["effect"]["estimate"] - truth) < 4 * got["effect"]["se"] + 0.1


def test_open_questions_and_unsupported_methods(frame: pd.DataFrame) -> None:
    assert parse_causal("What is the effect of t on y?", frame) is None  # left to the causal recipe
    with pytest.raises(DesignRequestError, match="difference in differences needs the unit, the time"):
        parse_causal("Estimate the ATE of (t) on (y) by difference in differences.", frame)
    with pytest.raises(CausalRequestError, match="names no treatment"):
        parse_causal("What is the ATE?", frame.rename(columns={"t": "group"}).assign(group=lambda d: d.group + 5))
