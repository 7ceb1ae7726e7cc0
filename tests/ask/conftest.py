"""Generated data with a known truth for the ask tests, and a scripted model on loopback."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tests.llm.scripted import Scripted, ScriptedLLM
from whyflow.runtime.llm import reset_runs


@pytest.fixture(scope="session")
def shop(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    """300 orders: region (4 levels), year (3), price with region-specific means, and quantity."""
    rng = np.random.default_rng(11)
    n = 300
    region = rng.choice(["north", "south", "east", "west"], size=n)
    base = {"north": 20.0, "south": 35.0, "east": 50.0, "west": 65.0}
    price = np.array([base[r] for r in region]) + rng.normal(0, 4, size=n)
    frame = pd.DataFrame(
        {
            "region": region,
            "year": rng.choice([2021, 2022, 2023], size=n),
            "price": price.round(2),
            "quantity": rng.integers(1, 10, size=n),
        }
    )
    path = tmp_path_factory.mktemp("shop") / "orders.csv"
    frame.to_csv(path, index=False)
    return path, frame


@pytest.fixture
def scripted_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., ScriptedLLM]]:
    """Start a scripted OpenAI-compatible server and switch the model on for the run.

    ``start(script, retries=0)``: ``script`` is a list of replies in order, or a dict from a
    prompt's words to its replies. The only thing mocked is the remote service.
    """
    servers: list[ScriptedLLM] = []

    def start(script: list[Scripted] | dict[str, list[Scripted]], retries: int = 0) -> ScriptedLLM:
        kwargs: dict[str, Any] = {"routes": script} if isinstance(script, dict) else {"replies": script}
        srv = ScriptedLLM(**kwargs).__enter__()
        monkeypatch.setenv("WHYFLOW_LLM", "on")
        monkeypatch.setenv("WHYFLOW_LLM_BASE_URL", srv.url)
        monkeypatch.setenv("WHYFLOW_LLM_MAX_RETRIES", str(retries))
        monkeypatch.setenv("WHYFLOW_LLM_TIMEOUT_S", "5")
        servers.append(srv)
        return srv

    reset_runs()
    yield start
    for srv in servers:
        srv.__exit__(None, None, None)
    reset_runs()
