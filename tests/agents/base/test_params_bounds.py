"""Every agent option is checked when the recipe loads: bounded numbers, known method keys.

A new numeric option without a bound, or an option without a description, fails here; so does a
recipe option the agent would have rejected (or silently mishandled) only when it ran.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from whyflow.causal.estimation.effect_estimator import EffectEstimatorAgent, EffectEstimatorParams
from whyflow.causal.estimation.effect_estimator_react import EffectEstimatorReActAgent
from whyflow.causal.estimation.menu import METHODS
from whyflow.causal.state import AnalysisState
from whyflow.cli.main import main
from whyflow.core.agent import Agent, AgentParams, AgentResult, check_contract, params_model_of
from whyflow.core.errors import AgentRegistrationError
from whyflow.core.status import JobStatus
from whyflow.flows.errors import RecipeValidationError
from whyflow.flows.recipes.builtin import builtin_recipes
from whyflow.flows.recipes.plan import load_plan
from whyflow.registry import BUILTIN_AGENTS, default_registry

ROOT = Path(__file__).resolve().parents[3]
BAD = ROOT / "tests" / "fixtures" / "recipes" / "bad_options.yaml"
REGISTRY = default_registry()
AGENTS = REGISTRY.names()  # the built-ins and the test plug-ins
BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


def _numbers(node: Any, path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every integer/number schema under ``node`` (through unions, lists and tuples)."""
    if not isinstance(node, dict):
        return
    if node.get("type") in ("integer", "number"):
        yield path, node
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for i, sub in enumerate(node.get(key, [])):
            yield from _numbers(sub, f"{path}[{i}]" if key == "prefixItems" else path)
    if "items" in node:
        yield from _numbers(node["items"], f"{path}[]")


@pytest.mark.parametrize("name", AGENTS)
def test_every_numeric_option_has_a_bound(name: str) -> None:
    schema = REGISTRY.get(name).Params.model_json_schema()
    unbounded = [
        path
        for field, prop in schema.get("properties", {}).items()
        for path, node in _numbers(prop, field)
        if not any(b in node for b in BOUNDS)
    ]
    assert not unbounded, f"{name}: numeric options without a bound (Field(ge=..., le=...)): {unbounded}"


@pytest.mark.parametrize("name", AGENTS)
def test_every_option_is_described_and_its_default_is_in_range(name: str) -> None:
    params = REGISTRY.get(name).Params
    undescribed = [f for f, info in params.model_fields.items() if not info.description]
    assert not undescribed, f"{name}: options without Field(description=...): {undescribed}"
    defaults = params()
    assert params.model_validate(defaults.model_dump()) == defaults  # pydantic does not check defaults itself


@pytest.mark.parametrize("name", sorted(BUILTIN_AGENTS))
def test_builtin_agents_are_generic_over_their_params(name: str) -> None:
    cls = REGISTRY.get(name)
    assert params_model_of(cls) is cls.Params


def test_a_plain_agent_plugin_still_registers() -> None:
    class Plain(Agent):
        STATE_MODEL = AnalysisState
        NAME = "plain"
        WRITES_STATE_FIELDS = ("recommendations",)
        JOB_STATUS = JobStatus.CRITIQUE_REVIEW

        class Params(AgentParams):
            limit: int = 3

        def run(self, view, params, ctx):  # type: ignore[no-untyped-def]
            return AgentResult(updates={"recommendations": []})

    assert params_model_of(Plain) is None
    check_contract(Plain)


def test_params_other_than_the_generic_model_is_a_registration_error() -> None:
    class Mine(AgentParams):
        limit: int = 3

    class Forgot(Agent[Mine]):
        STATE_MODEL = AnalysisState
        NAME = "forgot"
        WRITES_STATE_FIELDS = ("recommendations",)
        JOB_STATUS = JobStatus.CRITIQUE_REVIEW

    with pytest.raises(AgentRegistrationError, match=r"Params is AgentParams but the class is Agent\[Mine\]"):
        check_contract(Forgot)


# ---- method keys ---------------------------------------------------------------------------
@pytest.mark.parametrize("agent", [EffectEstimatorAgent, EffectEstimatorReActAgent])
def test_a_misspelt_method_suggests_the_closest_key(agent: type[Agent[Any]]) -> None:
    with pytest.raises(ValidationError) as caught:
        agent.Params.model_validate({"methods": ["ols", "aipww", "magic"]})
    errors = caught.value.errors()
    assert [e["loc"] for e in errors] == [("methods", 1), ("methods", 2)]
    assert "unknown method 'aipww' (did you mean 'aipw'?); choose from naive, ols" in errors[0]["msg"]
    assert "did you mean" not in errors[1]["msg"]


def test_every_method_key_is_accepted() -> None:
    assert EffectEstimatorParams(methods=list(METHODS)).methods == list(METHODS)
    assert EffectEstimatorParams().methods is None


# ---- what the user sees --------------------------------------------------------------------
EXPECTED = [  # line, option, the bound as pydantic or the recipe loader words it
    (8, "with.alpha", r"(less than|<) 1\b"),
    (8, "with.bootstrap", r"(≥|greater than or equal to) 0\b"),
    (12, "with.methods", r"unknown method 'aipww' \(did you mean 'aipw'\?\)"),
    (13, "with.bootstrap", r"(≥|greater than or equal to) 10\b"),
    (16, "with.flip_probabilities[1]", r"(≤|less than or equal to) 1\b"),
    (17, "with.gamma_max", r"(>|greater than) 1\b"),
]


def test_every_bad_option_is_reported_at_once_with_its_line() -> None:
    with pytest.raises(RecipeValidationError) as caught:
        load_plan(BAD)
    issues = caught.value.issues
    assert len(issues) == len(EXPECTED), str(caught.value)
    for line, option, bound in EXPECTED:
        found = [i for i in issues if i.line == line and f"{option}:" in str(i) and re.search(bound, str(i))]
        assert found, f"line {line}: {option} {bound!r} not in:\n{caught.value}"


def test_validate_command_prints_one_line_per_bad_option(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(BAD)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [ln.strip() for ln in err.splitlines() if ln.strip().startswith(str(BAD))]
    assert len(lines) == len(EXPECTED), err
    for (line, option, _), text in zip(EXPECTED, lines, strict=True):
        assert text.startswith(f"{BAD}:{line}:") and option in text
    assert "step 'causal_discovery' → with.alpha" in err
    assert "step 'effect_estimator' → with.methods: unknown method 'aipww' (did you mean 'aipw'?)" in err
    # Every bound in the user's terms, the list position of a bad item named.
    assert "with.alpha: must be < 1.0 (got 3)" in err and "with.gamma_max: must be > 1.0 (got 1)" in err
    assert "with.flip_probabilities[1]: must be ≤ 1.0 (got 1.5)" in err


@pytest.mark.parametrize("recipe", [r.path for r in builtin_recipes()], ids=lambda p: p.name)
def test_shipped_recipes_still_validate(recipe: Path) -> None:
    load_plan(recipe)
