"""The JSON Schema of recipes, generated from RecipeSpec and each agent's Params (editors use it).

An agent step is one branch per built-in agent: ``agent:`` is that agent's name (a ``const``)
and ``with:`` is its ``Params`` model's own JSON Schema (types, enums, ``ge``/``le`` bounds,
unknown options forbidden), so an editor completes agent names and their options and flags a
misspelt option or an out-of-range value as it is typed. A last branch accepts any other agent
name with any options, for agents that plug-in packages register; ``whyflow validate`` checks
those against the installed registry.

Only the built-in agents are used (never the entry points installed where it runs), so the
file is the same on every machine. Regenerate with ``make schema`` (``python -m whyflow.flows.recipes.schema >
schemas/recipe.schema.json``); a test keeps the committed file in sync with the models.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from whyflow.flows.recipes.recipe import RecipeSpec
from whyflow.registry import Registry

__all__ = ["recipe_schema", "agent_step_schemas"]

_STEP = "AgentStepSpec"


def recipe_schema(registry: Registry | None = None) -> dict[str, Any]:
    """The recipe JSON Schema, with a title and id editors show.

    Args:
        registry: whose agents get a branch; default the built-ins alone (no entry points).
    """
    schema = RecipeSpec.model_json_schema(by_alias=True)
    defs: dict[str, Any] = schema["$defs"]
    generic = defs[_STEP]
    registry = registry or Registry(use_entry_points=False)
    branches = agent_step_schemas(generic, registry)
    clash = sorted(set(branches) & set(defs))
    if clash:
        raise RuntimeError(f"agent schema names clash with the recipe's: {', '.join(clash)}")
    defs.update(branches)
    defs[_STEP] = {
        "description": generic["description"],
        "oneOf": [{"$ref": f"#/$defs/{name}_step"} for name in registry.names()]
        + [_plugin_step(generic, registry.names())],
    }
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "whyflow recipe"
    return schema


def agent_step_schemas(generic: dict[str, Any], registry: Registry) -> dict[str, Any]:
    """``$defs`` entries for every agent: ``<name>_step`` and its options ``<name>_params[_<Model>]``."""
    out: dict[str, Any] = {}
    for name in registry.names():
        cls = registry.get(name)
        prefix = f"{name}_params"
        params = cls.Params.model_json_schema(ref_template=f"#/$defs/{prefix}_{{model}}")
        for model, sub in params.pop("$defs", {}).items():
            out[f"{prefix}_{model}"] = sub
        params["title"] = f"{name} options"
        out[prefix] = params
        step = copy.deepcopy(generic)
        step["title"] = f"{name} step"
        step["description"] = cls.DESCRIPTION or generic["description"]
        step["properties"]["agent"] = {"const": name, "description": cls.DESCRIPTION or name}
        step["properties"]["with"] = {"$ref": f"#/$defs/{prefix}"}
        out[f"{name}_step"] = step
    return out


def _plugin_step(generic: dict[str, Any], builtin: list[str]) -> dict[str, Any]:
    """Any agent name that is not built in, with any options (a plug-in's; checked by validate)."""
    step = copy.deepcopy(generic)
    step["title"] = "plug-in agent step"
    step["properties"]["agent"] = {
        "type": "string",
        "not": {"enum": builtin},
        "description": "an agent registered by a plug-in package (whyflow.agents entry point)",
    }
    return step


if __name__ == "__main__":  # pragma: no cover
    print(json.dumps(recipe_schema(), indent=2, sort_keys=True))
