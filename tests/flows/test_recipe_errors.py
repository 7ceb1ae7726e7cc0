"""Every recipe failure mode, one fixture file each: the error text itself is tested."""

from __future__ import annotations

from pathlib import Path

import pytest

from whyflow.flows.errors import RecipeSyntaxError, RecipeValidationError
from whyflow.flows.recipes.plan import load_plan

RECIPES = Path(__file__).resolve().parents[1] / "fixtures" / "recipes"

CASES = [
    (
        "unknown_agent.yaml",
        4,
        "step 'toy_estimater' → agent: unknown agent 'toy_estimater' (did you mean 'toy_estimator'?)",
    ),
    ("unknown_param.yaml", 6, "step 'toy_estimator' → with.slep: unknown key (did you mean 'sleep'?)"),
    ("bad_param_type.yaml", 5, "step 'toy_estimator' → with.sleep: Input should be a valid number"),
    (
        "missing_read.yaml",
        3,
        "requires 'data_profile', which no earlier step writes and no input provides; add a step with agent 'data_profiler'",
    ),
    ("parallel_clash.yaml", 6, "writes 'treatment_effects', which parallel sibling 'toy_estimator' also writes"),
    (
        "parallel_reads_sibling.yaml",
        5,
        "requires 'data_profile', which parallel sibling 'toy_profiler' writes at the same time",
    ),
    ("loop_without_critique.yaml", 4, "critique_loop: has no critique agent"),
    ("zero_iterations.yaml", 5, "step 'critique_loop' → max_iterations: must be ≥ 1 (got 0)"),
    ("unknown_key.yaml", 2, "step: unknown key (did you mean 'steps'?)"),
    (
        "writes_outside_contract.yaml",
        5,
        "writes: 'recommendations' is not in agent 'toy_estimator' WRITES_STATE_FIELDS",
    ),
    ("duplicate_step_name.yaml", 5, "step name 'toy_estimator' is used twice; give one of them a distinct 'name:'"),
    ("phase_order.yaml", 5, "runs in phase EXPLORATORY_ANALYSIS after a step in phase ESTIMATING_EFFECTS"),
    ("not_a_mapping.yaml", 1, "a recipe must be a YAML mapping"),
]


@pytest.mark.parametrize(("name", "line", "message"), CASES, ids=[c[0] for c in CASES])
def test_invalid_recipe_names_file_line_and_field(name: str, line: int, message: str) -> None:
    path = RECIPES / name
    with pytest.raises(RecipeValidationError) as caught:
        load_plan(path)
    matching = [i for i in caught.value.issues if message in str(i)]
    assert matching, f"expected {message!r} in:\n{caught.value}"
    assert matching[0].line == line
    assert str(matching[0]).startswith(f"{path}:{line}:")


def test_all_errors_are_reported_at_once() -> None:
    with pytest.raises(RecipeValidationError) as caught:
        load_plan(RECIPES / "many_errors.yaml")
    text = str(caught.value)
    assert text.startswith(f"3 errors in {RECIPES / 'many_errors.yaml'}:")
    assert "task_runner: must be one of 'threads', 'dask' or 'sequential' (got 'kubernetes')" in text
    assert "unknown agent 'toy_profilr' (did you mean 'toy_profiler'?)" in text
    assert "with.sleep: Input should be a valid number" in text


@pytest.mark.parametrize(
    ("name", "line", "message"),
    [
        ("duplicate_key.yaml", 4, "duplicate key 'max_iterations' (first defined on line 3)"),
        ("syntax_error.yaml", 5, "expected ',' or '}'"),
    ],
)
def test_yaml_errors_show_the_line(name: str, line: int, message: str) -> None:
    with pytest.raises(RecipeSyntaxError) as caught:
        load_plan(RECIPES / name)
    assert caught.value.line == line
    assert message in str(caught.value)
    assert f">    {line} |" in str(caught.value)


def test_missing_recipe_file() -> None:
    with pytest.raises(RecipeSyntaxError, match="recipe file not found"):
        load_plan(RECIPES / "does_not_exist.yaml")


def test_valid_recipe_resolves_into_plan() -> None:
    plan = load_plan(RECIPES / "valid_toy.yaml")
    assert [n.key for n in plan.agent_nodes()] == [
        "toy_profiler",
        "toy_recommender",
        "toy_watcher",
        "toy_estimator",
        "toy_critique",
    ]
    assert plan.steps[2].max_iterations == 3  # type: ignore[union-attr]


def test_overrides_set_settings_and_params() -> None:
    plan = load_plan(RECIPES / "valid_toy.yaml", {"max_iterations": "5", "toy_estimator.sleep": "0.5"})
    assert plan.settings.max_iterations == 5
    estimator = next(n for n in plan.agent_nodes() if n.key == "toy_estimator")
    assert estimator.params.sleep == 0.5  # type: ignore[attr-defined]


def test_unknown_override_is_an_error() -> None:
    with pytest.raises(
        RecipeValidationError,
        match=r"--set toy_estimatr.sleep → not a setting or STEP.PARAM of this recipe \(did you mean 'toy_estimator'\?\)",
    ):
        load_plan(RECIPES / "valid_toy.yaml", {"toy_estimatr.sleep": "1"})


def test_bad_override_value_is_reported_on_the_step() -> None:
    with pytest.raises(RecipeValidationError, match=r"with.sleep: Input should be a valid number"):
        load_plan(RECIPES / "valid_toy.yaml", {"toy_estimator.sleep": "slow"})
