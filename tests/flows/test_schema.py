"""The committed recipe JSON Schema matches the models (one branch per agent), and shipped recipes satisfy it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import jsonschema
import pytest
import yaml
from pydantic import Field

from whyflow.causal.state import AnalysisState
from whyflow.core.agent import Agent, AgentParams
from whyflow.core.status import JobStatus
from whyflow.flows.recipes.builtin import builtin_recipes
from whyflow.flows.recipes.recipe import RecipeSpec
from whyflow.flows.recipes.schema import recipe_schema
from whyflow.registry import BUILTIN_AGENTS, Registry

ROOT = Path(__file__).resolve().parents[2]


def test_committed_schema_is_in_sync() -> None:
    committed = json.loads((ROOT / "schemas" / "recipe.schema.json").read_text())
    assert committed == json.loads(json.dumps(recipe_schema())), "run `make schema` and commit the result"


@pytest.mark.parametrize("recipe", [r.path for r in builtin_recipes()], ids=lambda p: p.name)
def test_shipped_recipes_round_trip_through_the_spec(recipe: Path) -> None:
    spec = RecipeSpec.model_validate(yaml.safe_load(recipe.read_text()))
    dumped = spec.model_dump(by_alias=True, exclude_none=True)
    again = RecipeSpec.model_validate(yaml.safe_load(yaml.safe_dump(dumped)))
    assert again == spec


# ---- one branch per agent: editors complete agent names and check their options ----------------
def _validator(schema: dict[str, Any]) -> Any:
    return jsonschema.validators.validator_for(schema)(schema)


def _recipe(step: dict[str, Any]) -> dict[str, Any]:
    return {"name": "r", "steps": [{"agent": "data_profiler"}, step]}


@pytest.fixture(scope="module")
def committed() -> Any:
    schema = json.loads((ROOT / "schemas" / "recipe.schema.json").read_text())
    return _validator(schema)


def _options(schema: dict[str, Any], agent: str) -> dict[str, Any]:
    return schema["$defs"][f"{agent}_params"]["properties"]


def test_every_builtin_agent_has_a_branch_with_its_params(committed: Any) -> None:
    defs = committed.schema["$defs"]
    branches = [b["$ref"].rsplit("/", 1)[-1] for b in defs["AgentStepSpec"]["oneOf"] if "$ref" in b]
    assert branches == [f"{name}_step" for name in sorted(BUILTIN_AGENTS)]
    for name in BUILTIN_AGENTS:
        step = defs[f"{name}_step"]
        assert step["properties"]["agent"]["const"] == name and step["additionalProperties"] is False
        params = defs[f"{name}_params"]
        assert params["additionalProperties"] is False


@pytest.mark.parametrize("recipe", [r.path for r in builtin_recipes()], ids=lambda p: p.name)
def test_shipped_recipes_satisfy_the_schema(committed: Any, recipe: Path) -> None:
    committed.validate(yaml.safe_load(recipe.read_text()))


def test_schema_rejects_a_misspelt_option_and_a_value_off_the_menu(committed: Any) -> None:
    committed.validate(_recipe({"agent": "effect_estimator", "with": {"bootstrap": 50, "propensity_model": "gbm"}}))
    assert not committed.is_valid(_recipe({"agent": "effect_estimator", "with": {"bootstap": 50}}))
    assert not committed.is_valid(_recipe({"agent": "effect_estimator", "with": {"propensity_model": "magic"}}))
    # A plug-in agent (a name no built-in has) may carry any options; validate checks it later.
    assert committed.is_valid(_recipe({"agent": "my_plugin_agent", "with": {"anything": 1}}))


def test_schema_rejects_every_builtin_bound_crossed(committed: Any) -> None:
    """Each ge/le (minimum/maximum) a built-in Params declares: the value just past it is rejected."""
    crossed = 0
    for agent in BUILTIN_AGENTS:
        for option, prop in _options(committed.schema, agent).items():
            for branch in prop.get("anyOf", [prop]):
                for bound, step in (("minimum", -1), ("maximum", 1), ("exclusiveMinimum", 0), ("exclusiveMaximum", 0)):
                    if bound in branch:
                        bad = _recipe({"agent": agent, "with": {option: branch[bound] + step}})
                        assert not committed.is_valid(bad), (agent, option, bound)
                        crossed += 1
    assert crossed, "no built-in Params declares a bound: this test checks nothing"


class _Bounded(Agent):
    """An agent whose options have bounds and a menu, as a plug-in could declare."""

    STATE_MODEL = AnalysisState
    NAME = "bounded"
    DESCRIPTION = "Test agent with bounded options"
    REQUIRED_STATE_FIELDS = ("dataset_info",)
    WRITES_STATE_FIELDS = ("data_profile",)
    JOB_STATUS = JobStatus.PROFILING

    class Params(AgentParams):
        rounds: int = Field(2, ge=1, le=5)
        share: float = Field(0.5, gt=0, lt=1)
        mode: Literal["fast", "slow"] = "fast"

    def run(self, view: Any, params: Any, ctx: Any) -> Any:  # pragma: no cover - never run
        raise NotImplementedError


def test_branches_are_generated_from_the_params_models() -> None:
    registry = Registry({}, use_entry_points=False)
    registry.register(_Bounded)
    schema = recipe_schema(registry)
    assert schema["$defs"]["bounded_params"]["properties"]["rounds"] == {
        "default": 2,
        "maximum": 5,
        "minimum": 1,
        "title": "Rounds",
        "type": "integer",
    }
    check = _validator(schema)
    assert check.is_valid({"name": "r", "steps": [{"agent": "bounded", "with": {"rounds": 5, "mode": "slow"}}]})
    for bad in ({"rounds": 6}, {"rounds": 0}, {"share": 1.0}, {"mode": "medium"}, {"round": 2}):
        assert not check.is_valid({"name": "r", "steps": [{"agent": "bounded", "with": bad}]}), bad
