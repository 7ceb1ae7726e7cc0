"""effect_estimator_react: the deterministic policy, recorded steps, and the LLM fallback."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from benchmarks import synthetic_effects as S
from tests.helpers import make_state
from whyflow.causal.estimation.effect_estimator_react import TOOLS, EffectEstimatorReActAgent, _Loop, llm_choose, policy
from whyflow.causal.estimation.pair_analysis import run_method
from whyflow.core.agent import AgentContext
from whyflow.flows.running.dispatch import run_single_agent


def test_policy_headline_covers_truth_and_steps_recorded(tmp_path: Path) -> None:
    frame, truth = S.linear_confounding(n=2000, seed=21)
    state = make_state(frame, tmp_path, "treated", "outcome")
    result = run_single_agent(
        "effect_estimator_react", state, tmp_path, {"methods": ["naive", "ols", "ipw", "aipw"], "bootstrap": 30}
    )
    heads = [e for e in state.treatment_effects if e.details.headline]
    assert len(heads) == 1 and heads[0].ci_lower <= truth["effect"] <= heads[0].ci_upper
    steps = result.outputs["steps"]["treated->outcome"]
    actions = [s["action"] for s in steps]
    assert actions[:2] == ["check_overlap", "check_balance"] and actions[-2:] == ["compare_estimates", "finish"]
    assert {"estimate(ols)", "estimate(aipw)"} <= set(actions)
    assert all(s["thought"] and s["observation"] for s in steps)
    assert "[1]" in result.reasoning and "check_overlap" in result.reasoning
    naive = next(e for e in state.treatment_effects if e.details.is_naive)
    assert not naive.ci_lower <= truth["effect"] <= naive.ci_upper


class _FakeCompletions:
    """An OpenAI-compatible client stand-in returning fixed message contents (the LLM is external)."""

    def __init__(self, contents: list[str]) -> None:
        self.contents = contents

    def create(self, **_: object) -> SimpleNamespace:
        content = self.contents.pop(0) if self.contents else "not json"
        return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content=content))])


def _client(contents: list[str]) -> SimpleNamespace:
    return SimpleNamespace(chat=SimpleNamespace(completions=_FakeCompletions(contents)))


def test_llm_answers_validated_and_junk_falls_back(tmp_path: Path) -> None:
    frame, truth = S.linear_confounding(n=1200, seed=5)
    state = make_state(frame, tmp_path, "treated", "outcome")
    answers = [
        json.dumps({"thought": "look at overlap", "tool": "check_overlap", "method": None}),
        json.dumps({"thought": "go", "tool": "estimate", "method": "aipw"}),
        json.dumps({"thought": "bad", "tool": "delete_data"}),  # not a tool: policy takes over
        "{broken",
        json.dumps({"thought": "x", "tool": "estimate", "method": "magic"}),  # not an allowed method
    ]
    ctx = AgentContext(job_dir=tmp_path, step="effect_estimator_react", seed=0, llm=_client(answers))
    from whyflow.flows.running.dispatch import apply_result, dispatch

    result = dispatch(EffectEstimatorReActAgent, state, {"methods": ["naive", "ols", "aipw"], "bootstrap": 20}, ctx)
    apply_result(state, EffectEstimatorReActAgent, result)
    steps = result.outputs["steps"]["treated->outcome"]
    assert steps[0]["thought"] == "look at overlap" and steps[1]["action"] == "estimate(aipw)"
    assert all(s["action"].split("(")[0] in TOOLS for s in steps)
    assert steps[-1]["action"] == "finish" and result.outputs["llm"] is True
    heads = [e for e in state.treatment_effects if e.details.headline]
    assert len(heads) == 1 and heads[0].ci_lower <= truth["effect"] <= heads[0].ci_upper


def test_policy_refits_propensity_when_balance_is_poor(tmp_path: Path) -> None:
    from whyflow.causal.estimation.common import setup_for_pair
    from whyflow.core.view import StateView

    frame, _ = S.nonlinear_heterogeneous(n=1500, seed=3)
    frame["x2sq"] = 0.0  # harmless constant column (excluded as constant)
    state = make_state(frame, tmp_path, "treated", "outcome")
    view = StateView(state, "effect_estimator_react", EffectEstimatorReActAgent.reads())
    setup = setup_for_pair(view, frame, "treated", "outcome", [], "logistic", 0, 20)
    loop = _Loop(setup, [], ["naive", "ols"])
    loop.act("t", "check_overlap", None)
    loop.seen["balance"] = [("logistic", 0.3)]  # as if weighting had left an imbalance
    thought, tool, _ = policy(loop)
    assert tool == "refit_propensity"
    loop.act(thought, tool, None)
    assert setup.ps_model == "gbm" and policy(loop)[1] == "check_balance"
    assert run_method(setup, "naive").details["naive"]
    assert llm_choose(object(), loop) is None  # a client that cannot answer falls back
