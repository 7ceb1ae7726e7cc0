"""The committed recipe JSON Schema matches the models, and shipped recipes satisfy it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from flows.recipe import RecipeSpec
from flows.schema import recipe_schema

ROOT = Path(__file__).resolve().parents[2]


def test_committed_schema_is_in_sync() -> None:
    committed = json.loads((ROOT / "schemas" / "recipe.schema.json").read_text())
    assert committed == json.loads(json.dumps(recipe_schema())), "run `make schema` and commit the result"


@pytest.mark.parametrize("recipe", sorted((ROOT / "pipelines").glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_recipes_round_trip_through_the_spec(recipe: Path) -> None:
    spec = RecipeSpec.model_validate(yaml.safe_load(recipe.read_text()))
    dumped = spec.model_dump(by_alias=True, exclude_none=True)
    again = RecipeSpec.model_validate(yaml.safe_load(yaml.safe_dump(dumped)))
    assert again == spec
