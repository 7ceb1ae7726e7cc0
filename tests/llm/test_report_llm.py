"""What the model wrote reaches the report (marked, escaped, with what it changed); tokens in the summary."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat

from benchmarks import synthetic_effects as S
from tests.helpers import make_state
from tests.llm.scripted import Scripted, ScriptedLLM
from tests.llm.test_agents import run_with
from whyflow.causal.prompts import MODEL_MARK
from whyflow.causal.state import AnalysisState, DatasetInfo
from whyflow.core.job import AgentTrace
from whyflow.flows.jobstore.summary import job_summary, model_usage
from whyflow.flows.running.dispatch import run_single_agent

HOSTILE = "<script>alert('x')</script> see [this](http://evil.example) *now*"


def _markdown(nb_path: Path) -> list[str]:
    nb = nbformat.read(nb_path, as_version=4)
    return [str(c.source) for c in nb.cells if c.cell_type == "markdown"]


def test_model_points_and_roles_are_in_the_report_marked_and_escaped(tmp_path: Path) -> None:
    frame, _ = S.linear_confounding(n=400, seed=3)
    state = make_state(frame, tmp_path, "treated", "outcome")
    roles = {"suggestions": [{"column": "x1", "role": "confounder", "reason": "<b>age</b> | drives both"}]}
    review = {"points": [HOSTILE, "Check overlap."], "would_approve": True}
    routes = {"causal role": [Scripted(json.dumps(roles))], "You review": [Scripted(json.dumps(review))]}
    with ScriptedLLM(routes=routes, default=Scripted("no")) as srv:
        run_with("domain_knowledge", state, tmp_path, srv)
        run_single_agent("effect_estimator", state, tmp_path, {"methods": ["naive", "ols"], "bootstrap": 10})
        run_with("critique", state, tmp_path, srv)
    given = state.debate_history[-1].llm_review
    assert given is not None and given.points[0] == HOSTILE
    run_single_agent("notebook_generator", state, tmp_path, {"execute": False, "html": False})
    cells = _markdown(Path(str(state.notebook_path)))
    ident = next(c for c in cells if c.startswith("## 4."))
    crit = next(c for c in cells if c.startswith("## 8."))
    assert MODEL_MARK in ident and "| x1 | confounder |" in ident
    assert "&lt;b&gt;age&lt;/b&gt; \\| drives both" in ident and "<b>" not in ident
    assert "_What the model changed:_ nothing: the suggestions were recorded, not applied" in ident
    assert MODEL_MARK in crit and "- Check overlap." in crit
    assert "&lt;script&gt;" in crit and "<script>" not in crit and "\\[this\\]\\(http&#58;//evil.example\\)" in crit
    assert "\\*now\\*" in crit and "rule-based decision" in crit and "no estimate was touched" in crit


def test_a_rejected_review_is_said_and_shows_nothing_from_the_model(tmp_path: Path) -> None:
    frame, _ = S.linear_confounding(n=300, seed=4)
    state = make_state(frame, tmp_path, "treated", "outcome")
    run_single_agent("effect_estimator", state, tmp_path, {"methods": ["naive", "ols"], "bootstrap": 10})
    bad = json.dumps({"points": ["The effect is 123456.7."], "would_approve": True})  # a number not in the analysis
    with ScriptedLLM(default=Scripted(bad)) as srv:
        run_with("critique", state, tmp_path, srv)
    assert state.debate_history[-1].llm_review is None
    assert "llm_review" in state.debate_history[-1].model_dump()  # asked, and its answer rejected
    run_single_agent("notebook_generator", state, tmp_path, {"execute": False, "html": False})
    crit = next(c for c in _markdown(Path(str(state.notebook_path))) if c.startswith("## 8."))
    assert "answer was rejected by the checks" in crit and "123456" not in crit


def test_job_summary_prints_tokens_per_agent_only_when_the_model_was_used(tmp_path: Path) -> None:
    state = AnalysisState(job_id="j", dataset_info=DatasetInfo(url="x.csv"))
    state.add_trace(AgentTrace(agent_name="data_profiler", action="profile", reasoning=""))
    assert model_usage(state, tmp_path) == {}
    assert not any("Language model" in line for line in job_summary(state, tmp_path))
    for agent, tokens in (("domain_knowledge", 1200), ("critique", 300), ("critique", 45)):
        usage = {"calls": 1, "prompt_tokens": tokens - 5, "completion_tokens": 5, "total_tokens": tokens}
        state.add_trace(AgentTrace(agent_name=agent, action="x", reasoning="", token_usage=usage))
    line = next(x for x in job_summary(state, tmp_path) if x.startswith("Language model"))
    assert line == "Language model: 1,545 tokens in 3 call(s) (domain_knowledge 1,200, critique 345)"
    # A job folder's traces.jsonl (the full record) wins over the state's compressed copy.
    trace = AgentTrace(agent_name="orchestrator", action="x", reasoning="", token_usage={"calls": 2, "cached_calls": 2})
    (tmp_path / "traces.jsonl").write_text(
        trace.model_dump_json()
        + "\n"
        + AgentTrace(agent_name="eda_agent", action="x", reasoning="").model_dump_json()
        + "\n"
    )
    assert model_usage(state, tmp_path) == {
        "orchestrator": {"calls": 2, "cached_calls": 2, "total_tokens": 0, "prompt_tokens": 0, "completion_tokens": 0}
    }
    assert "Language model: 0 tokens in 2 call(s); 2 answered from the cache (orchestrator 0)" in job_summary(
        state, tmp_path
    )
