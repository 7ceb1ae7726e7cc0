"""The README's examples work: its recipe validates and its commands parse (and validate runs)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from whyflow.cli.main import build_parser, main
from whyflow.flows.recipes.builtin import builtin_recipes
from whyflow.flows.recipes.plan import load_plan

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def _commands() -> list[str]:
    commands = []
    for block in _blocks("console"):
        text = block.replace("\\\n", " ")
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("$ "):
                line = line[2:].split("  #")[0].strip()
                line = re.sub(r"^(\S+=\S+\s+)+", "", line)  # leading VAR=value
                if re.match(r"^(\.venv/bin/)?whyflow\b", line):
                    commands.append(line)
    return commands


def test_readme_starts_with_the_two_commands() -> None:
    first = _blocks("console")[0]
    assert "make demo" in first and "make test" in first
    assert README.index("make demo") < README.index("## ")


@pytest.mark.parametrize("command", _commands())
def test_readme_commands_parse(command: str) -> None:
    argv = shlex.split(command.replace("...", "examples/job_training.csv"))[1:]
    argv = [a.replace("JOB", "some-job") for a in argv]
    args = build_parser().parse_args(argv)
    assert args.command


def test_readme_validate_example_runs(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    recipes = [r.name for r in builtin_recipes()]
    assert main(["validate", *recipes]) == 0
    out = capsys.readouterr().out
    assert all(f"✓ {r}" in out for r in recipes)


def test_readme_recipe_example_is_valid(tmp_path: Path) -> None:
    recipe = next(b for b in _blocks("yaml") if b.startswith("name: my_analysis"))
    path = tmp_path / "my_analysis.yaml"
    path.write_text(recipe)
    plan = load_plan(path)
    assert plan.name == "my_analysis"
    assert [n.key for n in plan.agent_nodes()] == [
        "data_profiler",
        "eda_agent",
        "causal_discovery",
        "effect_estimator",
        "critique",
        "notebook_generator",
    ]
