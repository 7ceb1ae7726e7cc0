"""Every LLM test starts from a clean slate: no LLM environment, no shared runs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from whyflow.runtime.llm import reset_runs

_VARS = (
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "WHYFLOW_LLM",
    "WHYFLOW_LLM_BASE_URL",
    "WHYFLOW_LLM_MODEL",
    "WHYFLOW_LLM_API_KEY",
    "WHYFLOW_LLM_TEMPERATURE",
    "WHYFLOW_LLM_TIMEOUT_S",
    "WHYFLOW_LLM_MAX_RETRIES",
    "WHYFLOW_LLM_MAX_TOKENS_PER_RUN",
    "WHYFLOW_LLM_CACHE",
)


@pytest.fixture(autouse=True)
def _clean_llm_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for var in _VARS:
        monkeypatch.delenv(var, raising=False)
    reset_runs()
    yield
    reset_runs()
