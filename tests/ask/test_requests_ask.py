"""Questions with stated answer slots and directed causal questions through the ask recipe
(the real runner and sandbox, no model)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from whyflow.ask.state import AskState
from whyflow.flows.ask_jobs.job import AskRequest, prepare_ask_job
from whyflow.flows.recipes.builtin import builtin_recipe
from whyflow.flows.recipes.plan import load_plan
from whyflow.flows.running.progress import Reporter
from whyflow.flows.running.runner import LocalExecutor, Runner

ASK = builtin_recipe("ask")


def _ask(tmp_path: Path, frame: pd.DataFrame, question: str) -> AskState:
    data = tmp_path / "data.csv"
    frame.to_csv(data, index=False)
    plan = load_plan(ASK)
    folder = prepare_ask_job(AskRequest(question, [str(data)], recipe=str(ASK), output=str(tmp_path / "job")), plan)
    state = folder.load_any()
    assert isinstance(state, AskState)
    Runner(plan, folder, state, LocalExecutor(), Reporter()).run()
    assert state.final_output is not None
    return state


def test_every_slot_is_its_own_computation(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"price": rng.gamma(3, 7, 400), "rooms": rng.integers(1, 6, 400)})
    q = (
        "What are the mean and the median price?\nConstraints: round to two decimal places.\n"
        "Format: @mean_price[mean] @median_price[median] @price_trend[trend]"
    )
    answer = _ask(tmp_path, frame, q).final_output.answer
    assert f"@mean_price[{frame.price.mean():.2f}]" in answer
    assert f"@median_price[{frame.price.median():.2f}]" in answer
    assert "@price_trend[not computed]" in answer


def test_a_directed_causal_question_starts_with_its_number(tmp_path: Path) -> None:
    rng = np.random.default_rng(8)
    n = 800
    x = rng.normal(size=n)
    t = (rng.random(n) < 1 / (1 + np.exp(-x))).astype(int)
    frame = pd.DataFrame({"t": t, "y": 2 * x + 3 * t + rng.normal(size=n), "x": x})
    state = _ask(
        tmp_path,
        frame,
        "What is the average treatment effect on the treated of (t) on (y)? Please round to the nearest hundredth.",
    )
    first = float(state.final_output.answer.split()[0])
    assert abs(first - 3) < 0.3
    assert "ATT" in state.final_output.answer and "regression adjustment" in state.final_output.answer


def test_an_unsupported_method_is_one_clear_line(tmp_path: Path) -> None:
    frame = pd.DataFrame({"t": [0, 1] * 20, "y": np.arange(40.0)})
    state = _ask(tmp_path, frame, "Estimate the ATE of (t) on (y) with synthetic control.")
    assert state.final_output.output_type == "error"
    assert state.final_output.answer.startswith("I can't answer this: synthetic control")
    assert "\n" not in state.final_output.answer
