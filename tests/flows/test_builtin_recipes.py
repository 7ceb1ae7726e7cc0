"""Recipes by name: the shipped ones found in the package, a path that exists winning, and the
`whyflow recipes` and `whyflow init` commands as a user meets them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from whyflow.cli.main import main
from whyflow.flows.errors import RecipeNotFound
from whyflow.flows.recipes.builtin import builtin_recipe, builtin_recipes, find_recipe
from whyflow.flows.recipes.plan import load_plan

NAMES = ["ask", "ask_react", "auto_analyze", "causal_analysis", "quick_estimate"]


def test_the_shipped_recipes_are_package_data_found_by_name() -> None:
    recipes = builtin_recipes()
    assert [r.name for r in recipes] == NAMES
    assert {r.name: r.state for r in recipes}["ask"] == "ask" and recipes[3].state == "analysis"
    for recipe in recipes:
        assert recipe.path.parent.name == "recipes" and recipe.path.parent.parent.name == "whyflow"
        assert load_plan(recipe.name).name == recipe.name  # the name inside the file is the file's name
        assert recipe.description


def test_a_path_that_exists_wins_over_the_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    mine = tmp_path / "quick_estimate"
    mine.write_text((builtin_recipe("quick_estimate")).read_text().replace("name: quick_estimate", "name: mine"))
    assert find_recipe("quick_estimate") == Path("quick_estimate")
    assert load_plan("quick_estimate").name == "mine"
    assert find_recipe("causal_analysis") == builtin_recipe("causal_analysis")


def test_an_unknown_name_says_what_there_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(
        RecipeNotFound, match=r"no recipe 'causal_analyis'.*did you mean 'causal_analysis'.*built-in: ask,"
    ):
        find_recipe("causal_analyis")
    with pytest.raises(
        RecipeNotFound, match=r"pipelines/quick_estimate.yaml → recipe file not found; .*'quick_estimate'"
    ):
        find_recipe("pipelines/quick_estimate.yaml")
    assert find_recipe("elsewhere/mine.yaml") == Path("elsewhere/mine.yaml")  # the loader says it is missing


def test_the_commands_take_a_name_or_a_path(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["validate", "quick_estimate", str(builtin_recipe("ask"))]) == 0
    out = capsys.readouterr().out
    assert "✓ quick_estimate: recipe 'quick_estimate' is valid" in out and "recipe 'ask' is valid" in out
    assert main(["run", "quick_estimat", "--data", "x.csv"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("whyflow: no recipe 'quick_estimat'") and "\n" not in err


def test_whyflow_recipes_lists_each_with_how_to_run_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["recipes"]) == 0
    out = capsys.readouterr().out
    for recipe in builtin_recipes():
        assert f"  {recipe.name} " in out and recipe.description in out
    assert "whyflow run causal_analysis --data FILE --treatment T --outcome Y" in out
    assert "whyflow ask --data FILE --auto" in out and 'whyflow ask --recipe ask_react --data FILE "QUESTION"' in out


def test_init_copies_recipes_and_a_prefect_yaml_that_runs_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "project" / "sales.csv"
    data.parent.mkdir()
    data.write_text("a,b\n1,2\n")
    argv = ["init", str(tmp_path / "project"), "--recipe", "causal_analysis", "--recipe", "ask", "--data", str(data)]
    assert main([*argv, "-t", "promo", "-y", "revenue", "--question", "What is the mean of b?"]) == 0
    out = capsys.readouterr().out
    assert "causal_analysis.yaml, ask.yaml" in out and "prefect.yaml (2 deployments)" in out
    project = tmp_path / "project"
    assert (project / "causal_analysis.yaml").read_text() == builtin_recipe("causal_analysis").read_text()
    assert main(["validate", str(project / "causal_analysis.yaml"), str(project / "ask.yaml")]) == 0
    config = yaml.safe_load((project / "prefect.yaml").read_text())
    analysis, ask = config["deployments"]
    assert analysis["entrypoint"] == "whyflow.deployments:whyflow_deployment"
    assert analysis["parameters"] == {
        "recipe": "causal_analysis.yaml",
        "data": "sales.csv",
        "treatment": "promo",
        "outcome": "revenue",
    }
    assert ask["entrypoint"] == "whyflow.deployments:ask_deployment"
    assert ask["parameters"] == {"recipe": "ask.yaml", "data": "sales.csv", "question": "What is the mean of b?"}
    assert all(s["active"] is False for d in config["deployments"] for s in d["schedules"])
    assert (
        config["pull"][0]["prefect.deployments.steps.set_working_directory"]["directory"] == "{{ project-dir.stdout }}"
    )


def test_init_overwrites_nothing_unless_forced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "prefect.yaml").write_text("mine\n")
    assert main(["init", str(project)]) == 2
    err = capsys.readouterr().err
    assert "prefect.yaml already exists; nothing was written (pass --force to overwrite)" in err
    assert (project / "prefect.yaml").read_text() == "mine\n" and not (project / "causal_analysis.yaml").exists()
    assert main(["init", str(project), "--force"]) == 0
    assert (project / "causal_analysis.yaml").exists() and "whyflow_deployment" in (
        project / "prefect.yaml"
    ).read_text()
    assert main(["init", str(tmp_path / "other"), "--recipe", "quick"]) == 1
    assert "did you mean 'quick_estimate'" in capsys.readouterr().err
    assert not (tmp_path / "other").exists()


def test_the_command_says_its_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"whyflow {version('whyflow')}"
