"""The built-in recipes listed (`whyflow recipes`) and a project folder to edit (`whyflow init DIR`).

`whyflow init DIR` copies built-in recipes into ``DIR`` and writes a ``prefect.yaml`` whose
deployments run those copies, so a user who wants to change a recipe, or schedule one on their
own data, starts from files that already validate and deploy. The deployments' entry points are
import paths (``whyflow.deployments:whyflow_deployment``): they load from the installed package,
wherever the folder is. Nothing is overwritten without ``--force``, and nothing is written when
any target is refused.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from whyflow.flows.recipes.builtin import BuiltinRecipe, builtin_recipe, builtin_recipes

__all__ = ["add_parsers", "cmd_init", "cmd_recipes", "prefect_yaml"]

_ENTRYPOINT = {"analysis": "whyflow.deployments:whyflow_deployment", "ask": "whyflow.deployments:ask_deployment"}
_HEADER = """\
# Prefect deployments of the recipes in this folder, written by `whyflow init`.
#
#   prefect server start --host 127.0.0.1 --port 4200          # terminal 1
#   export PREFECT_API_URL=http://127.0.0.1:4200/api            # terminals 2 and 3
#   prefect work-pool create local-pool --type process
#   prefect --no-prompt deploy --all                            # from this folder
#   prefect worker start --pool local-pool --type process       # terminal 3
#   prefect deployment run 'FLOW/DEPLOYMENT'                    # or "Run" in the UI
#
# Each deployment runs a recipe file of this folder (edit it; `whyflow validate FILE` checks it)
# on the data its parameters name, relative to this folder. Schedules are created paused.
"""


def add_parsers(sub: Any) -> None:
    """The ``recipes`` and ``init`` subcommands (called from :func:`whyflow.cli.main.build_parser`)."""
    sub.add_parser("recipes", help="list the built-in recipes (run one by name: whyflow run causal_analysis ...)")
    p = sub.add_parser("init", help="copy built-in recipes and a prefect.yaml into a folder, to edit and deploy")
    p.add_argument("folder", metavar="DIR", help="the project folder (made if missing)")
    p.add_argument(
        "--recipe",
        action="append",
        metavar="NAME",
        help="a built-in recipe to copy (repeatable; default causal_analysis)",
    )
    p.add_argument("--data", help="the data file or URL the deployments run on (default: data.csv in DIR)")
    p.add_argument("--treatment", "-t", help="treatment column of the analysis deployments")
    p.add_argument("--outcome", "-y", help="outcome column of the analysis deployments")
    p.add_argument("--question", help="the question of the ask deployments")
    p.add_argument("--force", action="store_true", help="overwrite files DIR already has")


def cmd_recipes(args: argparse.Namespace) -> int:
    """Print every built-in recipe with what it does and how to run it."""
    recipes = builtin_recipes()
    width = max(len(r.name) for r in recipes)
    print("Built-in recipes (a recipe file of your own works wherever a name does):")
    for recipe in recipes:
        print(f"  {recipe.name:<{width}}  {recipe.description}")
        print(f"  {'':<{width}}  {_how_to_run(recipe)}")
    print("Copy one to edit, with a prefect.yaml to deploy it: whyflow init DIR --recipe NAME")
    return 0


def _how_to_run(recipe: BuiltinRecipe) -> str:
    if recipe.state != "ask":
        return f"whyflow run {recipe.name} --data FILE --treatment T --outcome Y"
    if recipe.name == "auto_analyze":
        return "whyflow ask --data FILE --auto"
    return f'whyflow ask --recipe {recipe.name} --data FILE "QUESTION"'


def cmd_init(args: argparse.Namespace) -> int:
    """Copy the chosen built-in recipes and a matching prefect.yaml into ``args.folder``."""
    folder = Path(args.folder).expanduser()
    names = list(dict.fromkeys(args.recipe or ["causal_analysis"]))
    by_name = {r.name: r for r in builtin_recipes()}
    chosen = [by_name[name] for name in names if builtin_recipe(name)]  # an unknown name: RecipeNotFound
    targets = {folder / f"{r.name}.yaml": r.path.read_text(encoding="utf-8") for r in chosen}
    data = _data_reference(args.data, folder)
    targets[folder / "prefect.yaml"] = prefect_yaml(folder.resolve().name, chosen, data, args)
    if folder.exists() and not folder.is_dir():
        print(f"whyflow: error: {folder} is a file, not a folder", file=sys.stderr)
        return 2
    taken = [p for p in targets if p.exists()]
    if taken and not args.force:
        print(
            f"whyflow: error: {', '.join(map(str, taken))} already exist{'s' if len(taken) == 1 else ''}; "
            "nothing was written (pass --force to overwrite)",
            file=sys.stderr,
        )
        return 2
    folder.mkdir(parents=True, exist_ok=True)
    for path, text in targets.items():
        path.write_text(text, encoding="utf-8")
    copies = ", ".join(f"{r.name}.yaml" for r in chosen)
    count = f"{len(chosen)} deployment" + ("s" if len(chosen) != 1 else "")
    print(f"wrote {folder}/: {copies} (copies of the built-in recipes) and prefect.yaml ({count})")
    first = chosen[0]
    print(f"check: whyflow validate {folder / (first.name + '.yaml')}")
    if first.state != "ask":
        print(f"run:   whyflow run {folder / (first.name + '.yaml')} --data FILE --treatment T --outcome Y")
    print(f"deploy: cd {folder} && prefect --no-prompt deploy --all   (see the comments at the top of prefect.yaml)")
    return 0


def _data_reference(data: str | None, folder: Path) -> str:
    """The data as the deployments name it: relative to the folder when inside it, else absolute."""
    if data is None:
        return "data.csv"
    from whyflow.cli.args import resolve_path

    resolved = resolve_path(data)
    try:
        return str(Path(resolved).relative_to(folder.resolve()))
    except ValueError:
        return resolved


def prefect_yaml(project: str, recipes: list[BuiltinRecipe], data: str, args: argparse.Namespace) -> str:
    """The text of a prefect.yaml with one deployment per recipe copy, each running from this folder."""
    import prefect
    import yaml

    document: dict[str, Any] = {
        "name": project,
        "prefect-version": prefect.__version__,
        # `pwd` runs where `prefect deploy` runs (this folder); the worker changes into it before
        # it loads the flow, so the recipe and data paths below are relative to this folder.
        "build": [
            {
                "prefect.deployments.steps.run_shell_script": {
                    "id": "project-dir",
                    "script": "pwd",
                    "stream_output": False,
                }
            }
        ],
        "push": None,
        "pull": [{"prefect.deployments.steps.set_working_directory": {"directory": "{{ project-dir.stdout }}"}}],
        "deployments": [_deployment(r, data, args) for r in recipes],
    }
    return _HEADER + yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)


def _deployment(recipe: BuiltinRecipe, data: str, args: argparse.Namespace) -> dict[str, Any]:
    parameters: dict[str, Any] = {"recipe": f"{recipe.name}.yaml", "data": data}
    if recipe.state == "ask":
        question = args.question or ("Give a first analysis of this dataset" if recipe.name == "auto_analyze" else "")
        parameters["question"] = question or "What is the average of each numeric column?"
    else:
        parameters.update(treatment=args.treatment, outcome=args.outcome)
    return {
        "name": recipe.name.replace("_", "-"),
        "description": recipe.description,
        "entrypoint": _ENTRYPOINT["ask" if recipe.state == "ask" else "analysis"],
        "tags": ["whyflow", recipe.name],
        "parameters": parameters,
        "work_pool": {"name": "local-pool", "work_queue_name": "default", "job_variables": {}},
        "schedules": [{"cron": "0 6 * * *", "timezone": "UTC", "active": False}],
    }
