"""The recipes shipped inside the package, found by name: ``whyflow run causal_analysis``.

They are package data (``whyflow/recipes/*.yaml``) read through :mod:`importlib.resources`, so
an installed wheel finds them wherever it lives. A reference to a recipe is a path or a name: a
path that exists wins; a bare name (no folder, no ``.yaml``) is a built-in recipe; anything
else is left to the YAML loader, which says the file is not there.
"""

from __future__ import annotations

import atexit
import contextlib
import difflib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

from whyflow.flows.errors import RecipeNotFound

__all__ = ["BuiltinRecipe", "builtin_recipes", "builtin_recipe", "find_recipe"]

_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class BuiltinRecipe:
    """One shipped recipe: its name, its file, its ``description`` and the state it runs on."""

    name: str
    path: Path
    description: str
    state: str


@cache
def _folder() -> Path:
    """The shipped recipes' folder as a real path (extracted once if the package is zipped)."""
    folder = resources.files("whyflow").joinpath("recipes")
    if isinstance(folder, Path):
        return folder
    stack = contextlib.ExitStack()  # a zipped install: extract for the life of the process
    atexit.register(stack.close)
    return Path(stack.enter_context(resources.as_file(folder)))


def _read(path: Path) -> BuiltinRecipe:
    import yaml

    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    document = document if isinstance(document, dict) else {}
    description = " ".join(str(document.get("description", "")).split())
    return BuiltinRecipe(path.stem, path, description, str(document.get("state", "analysis")))


@cache
def builtin_recipes() -> tuple[BuiltinRecipe, ...]:
    """Every shipped recipe, sorted by name."""
    return tuple(_read(p) for p in sorted(_folder().iterdir()) if p.suffix in _SUFFIXES)


def _names() -> list[str]:
    return [r.name for r in builtin_recipes()]


def builtin_recipe(name: str) -> Path:
    """The file of the shipped recipe ``name``, or :class:`RecipeNotFound` with a did-you-mean."""
    for recipe in builtin_recipes():
        if recipe.name == name:
            return recipe.path
    close = difflib.get_close_matches(name, _names(), n=1) or [n for n in _names() if name and name in n][:1]
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    raise RecipeNotFound(
        name, f"no recipe '{name}': not a file, and not a built-in recipe{hint}; built-in: {', '.join(_names())}"
    )


def _looks_like_path(ref: str) -> bool:
    return "/" in ref or "\\" in ref or ref.endswith((*_SUFFIXES, ".json")) or ref.startswith(".")


def find_recipe(ref: str | Path) -> Path:
    """The recipe file ``ref`` stands for: an existing path, else the built-in recipe of that name.

    A path that does not exist is returned as it is (the loader reports it with its file name),
    unless its file name is a built-in recipe's, when the error says to use the name.
    """
    text = str(ref)
    path = Path(text).expanduser()
    if path.is_file():
        return path
    if not _looks_like_path(text):
        return builtin_recipe(text)
    if not path.exists() and path.stem in _names() and path.suffix in _SUFFIXES:
        raise RecipeNotFound(
            text,
            f"{text} → recipe file not found; the built-in recipe of that name is used by its name: '{path.stem}' "
            f"(`whyflow recipes` lists them; `whyflow init DIR` copies one to edit)",
        )
    return path
