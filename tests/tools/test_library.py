"""The worked-example library: enough examples, strict schema, templates that fill and compile."""

from __future__ import annotations

import string
import warnings

import pytest

from whyflow.ask.tools.library import COLUMN_SLOTS, Example, load_examples


def test_at_least_40_code_examples_covering_the_issue_kinds() -> None:
    examples = load_examples()
    assert sum(e.needs_code for e in examples) >= 40
    kinds = {e.kind for e in examples}
    assert {
        "statistic",
        "counts",
        "groupby",
        "test",
        "correlation",
        "chart",
        "outliers",
        "regression",
        "trend",
    } <= kinds
    ids = {e.id for e in examples}
    for wanted in (
        "ttest_two_groups",
        "mann_whitney",
        "chi_square",
        "anova_oneway",
        "normality_shapiro",
        "outliers_iqr",
        "outliers_zscore",
        "histogram_chart",
        "bar_chart_mean",
        "scatter_chart",
        "line_chart_trend",
        "top_k_rows",
        "simple_regression",
        "trend_over_time",
        "missing_per_column",
    ):
        assert wanted in ids


@pytest.mark.parametrize("example", [e for e in load_examples() if e.needs_code], ids=lambda e: e.id)
def test_every_template_fills_and_compiles(example: Example) -> None:
    dummy = {}
    for name, slot in example.slots.items():
        dummy[name] = (
            "col_" + name if slot.kind in COLUMN_SLOTS else (3 if slot.kind in ("integer", "number") else "lvl")
        )
    code = string.Template(example.code).substitute({k: repr(v) for k, v in dummy.items()})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. "'x' is not None" on a filled literal
        compile(code, example.id, "exec")
    assert "result" in code
    if example.kind == "chart":
        assert "figure" in code and '"$schema"' in code


def test_unknown_keys_and_undeclared_slots_are_errors() -> None:
    base = {
        "id": "x",
        "kind": "statistic",
        "title": "t",
        "description": "d",
        "questions": ["a", "b"],
        "output": "scalar",
        "answer": "{result}",
        "code": "result = $value",
    }
    with pytest.raises(ValueError, match="undeclared slots: value"):
        Example.model_validate(base)
    with pytest.raises(ValueError, match="extra"):
        Example.model_validate({**base, "slots": {"value": {"kind": "numeric", "description": "v"}}, "colour": 1})


def test_fixed_answers_hold_no_digits() -> None:
    """Concept answers are fixed text: a digit there would be a number no code computed."""
    for example in load_examples():
        if not example.needs_code:
            assert not any(ch.isdigit() for ch in example.answer), example.id
