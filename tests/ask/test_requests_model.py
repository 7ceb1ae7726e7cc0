"""A stated format the request parser reads only in part goes to the model when one is
configured; one it reads fully is answered without it (the scripted server is the only mock)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from tests.ask.test_agents import ask
from tests.llm.scripted import Scripted, ScriptedLLM
from whyflow.ask.state import AskState

PLAN = Scripted(
    content=json.dumps(
        {"needs_code": True, "needs_evaluation": False, "needs_explanation": True, "reasoning": "two statistics"}
    )
)
CODE = Scripted(content="result = {'mean_price': round(float(df['price'].mean()), 2), 'price_trend': 'flat'}\n")
PROSE = Scripted(content="Prices are flat.")


def test_a_part_the_parser_cannot_read_goes_to_the_model(
    scripted_model: Callable[..., ScriptedLLM], tmp_path: Path, shop: tuple[Path, pd.DataFrame]
) -> None:
    path, frame = shop
    srv = scripted_model(
        {"plan how to answer": [PLAN], "Write Python that answers": [CODE], "explain data-analysis": [PROSE]}
    )
    q = "Mean price and its trend?\nFormat: @mean_price[m] @price_trend[t] where m is rounded to two decimal places"
    state: AskState = ask(tmp_path, path, q)
    assert state.plan is not None and state.plan.mode == "model"
    assert any("Write Python" in json.dumps(r["messages"]) for r in srv.chats())
    assert "@price_trend[flat]" in state.final_output.answer
    assert f"@mean_price[{frame.price.mean():.2f}]" in state.final_output.answer


def test_a_fully_read_format_needs_no_model(
    scripted_model: Callable[..., ScriptedLLM], tmp_path: Path, shop: tuple[Path, pd.DataFrame]
) -> None:
    path, frame = shop
    srv = scripted_model(
        {"plan how to answer": [PLAN], "Write Python that answers": [CODE], "explain data-analysis": [PROSE]}
    )
    q = "Mean and median price?\nFormat: @mean_price[m] @median_price[d] rounded to two decimal places"
    state: AskState = ask(tmp_path, path, q)
    assert state.plan is not None and state.plan.mode == "deterministic"
    assert not any("Write Python" in json.dumps(r["messages"]) for r in srv.chats())
    assert f"@median_price[{frame.price.median():.2f}]" in state.final_output.answer
