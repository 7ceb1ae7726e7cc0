"""The JSON Schema of recipes, generated from RecipeSpec (editors use it for completion).

Regenerate with ``make schema`` (``python -m flows.schema > schemas/recipe.schema.json``); a
test keeps the committed file in sync with the models.
"""

from __future__ import annotations

import json
from typing import Any

from flows.recipe import RecipeSpec

__all__ = ["recipe_schema"]


def recipe_schema() -> dict[str, Any]:
    """The recipe JSON Schema, with a title and id editors show."""
    schema = RecipeSpec.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "whyflow recipe"
    return schema


if __name__ == "__main__":  # pragma: no cover
    print(json.dumps(recipe_schema(), indent=2, sort_keys=True))
