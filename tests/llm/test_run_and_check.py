"""The runner builds ctx.llm from the recipe and the environment; llm check; bad LLM settings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from benchmarks import synthetic_effects as S
from tests.llm.scripted import Scripted, ScriptedLLM
from whyflow.cli.main import main
from whyflow.flows.jobstore.jobs import RunRequest, prepare_job
from whyflow.flows.recipes.plan import load_plan
from whyflow.flows.running.progress import Reporter
from whyflow.flows.running.runner import LocalExecutor, Runner

RECIPE = {
    "name": "llm_small",
    "settings": {"llm": {"enabled": True, "max_retries": 0, "timeout_s": 5}},
    "steps": [
        {"agent": "data_profiler"},
        {"agent": "domain_knowledge"},
        {"agent": "effect_estimator", "with": {"methods": ["naive", "ols"], "bootstrap": 10}},
        {"agent": "critique"},
        {"agent": "orchestrator"},
    ],
}


def _run(tmp_path: Path, url: str) -> tuple[Path, list[dict[str, Any]]]:
    recipe = tmp_path / "llm_small.yaml"
    recipe.write_text(yaml.safe_dump(RECIPE), encoding="utf-8")
    data = tmp_path / "data.csv"
    if not data.exists():
        S.linear_confounding(n=400, seed=4)[0].to_csv(data, index=False)
    plan = load_plan(recipe)
    request = RunRequest(
        recipe=str(recipe), data=str(data), treatment="treated", outcome="outcome", output=str(tmp_path / "job")
    )
    folder = prepare_job(request, plan)
    Runner(plan, folder, folder.load(), LocalExecutor(), Reporter()).run()
    traces = [json.loads(x) for x in (folder.path / "traces.jsonl").read_text().splitlines()]
    return folder.path, traces


@pytest.mark.slow
def test_recipe_run_builds_ctx_llm_from_recipe_and_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    routes = {
        "causal role": [Scripted('{"suggestions": [{"column": "x1", "role": "confounder"}]}')],
        "You review": [Scripted('{"points": ["Check overlap."], "would_approve": false}')],
    }
    with ScriptedLLM(routes=routes, default=Scripted("no")) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url)
        job, traces = _run(tmp_path, srv.url)
        asked = len(srv.chats())
        used = {t["agent_name"]: t["outputs"]["llm_use"] for t in traces if "llm_use" in t["outputs"]}
        assert set(used) == {"domain_knowledge", "critique", "orchestrator"}
        assert used["domain_knowledge"]["used"] and used["critique"]["used"] and not used["orchestrator"]["used"]
        assert all(t["token_usage"].get("calls") for t in traces if t["agent_name"] in used)
        assert (job / "llm" / "usage.json").exists() and asked >= 3
        state = json.loads((job / "state.json").read_text())
        assert state["debate_history"][-1]["llm_review"]["points"] == ["Check overlap."]
        calls = [json.loads(x) for x in (job / "llm" / "calls.jsonl").read_text().splitlines()]
        assert len(calls) == asked and {c["step"] for c in calls} == set(used)  # one log, every prompt


def test_llm_check_one_screen(capsys: pytest.CaptureFixture[str]) -> None:
    replies = [
        Scripted("OK"),
        Scripted('{"answer": "yes", "confidence": 0.9}'),
        Scripted(None, tool_calls=[("add", '{"a": 2, "b": 3}')]),
    ]
    with ScriptedLLM(replies) as srv:
        assert main(["llm", "check", "--base-url", srv.url]) == 0
    out = capsys.readouterr().out
    assert srv.url in out and "'scripted-model' (first listed)" in out and "round trip" in out
    assert "json schema  yes" in out and "tool calls   yes: native" in out
    assert main(["llm", "check", "--base-url", "http://127.0.0.1:9/v1"]) == 1
    assert "unreachable" in capsys.readouterr().out


def test_bad_llm_environment_is_bad_input(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("WHYFLOW_LLM_MAX_RETRIES", "many")
    assert main(["run", "quick_estimate", "--data", "examples/job_training.csv"]) == 2
    assert "WHYFLOW_LLM_MAX_RETRIES" in capsys.readouterr().err
