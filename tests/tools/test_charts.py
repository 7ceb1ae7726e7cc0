"""Vega-Lite charts: schema-validated, inline data, at most 100 rows, rendered offline."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from whyflow.ask.tools.charts import (
    ChartArgs,
    CreatePlotArgs,
    build_chart,
    create_plot,
    render_png,
    render_svg,
    save_chart,
    validate_spec,
)
from whyflow.ask.tools.errors import ChartDataError, ChartRenderError, ChartSchemaError, ChartTooManyRowsError


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(1)
    return pd.DataFrame(
        {
            "x": rng.normal(size=300),
            "y": rng.normal(size=300),
            "g": rng.choice(["a", "b", "c"], 300),
            "t": np.arange(300) % 30,
            "id": np.arange(300),
        }
    )


def bar(rows: int) -> dict[str, Any]:
    return {
        "data": {"values": [{"k": str(i), "v": i} for i in range(rows)]},
        "mark": "bar",
        "encoding": {"x": {"field": "k", "type": "nominal"}, "y": {"field": "v", "type": "quantitative"}},
    }


def test_100_rows_pass_and_101_are_refused_with_a_reason() -> None:
    assert len(validate_spec(bar(100))["data"]["values"]) == 100
    with pytest.raises(ChartTooManyRowsError) as info:
        create_plot(CreatePlotArgs(title="too many", vega_lite_spec=bar(101)))
    assert info.value.rows == 101 and "aggregate first" in info.value.reason


def test_rows_in_layers_count_too() -> None:
    spec = {"layer": [bar(3), bar(101)]}
    with pytest.raises(ChartTooManyRowsError):
        validate_spec(spec)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"data": {"url": "https://example.org/x.csv"}, "mark": "bar"}, "inline"),
        ({"mark": "bar", "encoding": {}}, "no data"),
        ({**bar(2), "mark": "barz"}, "mark"),
        ({**bar(2), "encoding": {"x": {"field": "k", "type": "quantitativ"}}}, "encoding/x/type"),
        ({**bar(2), "$schema": "https://vega.github.io/schema/vega-lite/v4.json"}, "v5"),
        ({**bar(2), "datasets": {"d": []}}, "datasets"),
        ([1, 2], "JSON object"),
    ],
)
def test_invalid_specs_are_refused(spec: Any, message: str) -> None:
    with pytest.raises(ChartSchemaError, match=message):
        validate_spec(spec)


def test_non_json_values_are_refused() -> None:
    spec = bar(2)
    spec["data"]["values"][0]["v"] = float("nan")
    with pytest.raises(ChartSchemaError, match="NaN"):
        validate_spec(spec)


def test_helpers_aggregate_to_valid_specs(frame: pd.DataFrame) -> None:
    bars = build_chart(ChartArgs(kind="bar", x="g", y="x", aggregate="mean"), frame)
    means = frame.groupby("g")["x"].mean()
    assert {r["g"]: r["x"] for r in bars["data"]["values"]} == pytest.approx(means.to_dict())
    hist = build_chart(ChartArgs(kind="histogram", x="x", bins=15), frame)
    assert len(hist["data"]["values"]) == 15 and sum(r["count"] for r in hist["data"]["values"]) == 300
    line = build_chart(ChartArgs(kind="line", x="t", y="y"), frame)
    assert [r["t"] for r in line["data"]["values"]] == list(range(30))
    counts = build_chart(ChartArgs(kind="bar", x="g"), frame)
    assert sum(r["count"] for r in counts["data"]["values"]) == 300


def test_scatter_over_100_points_refuses_unless_sampling_is_asked(frame: pd.DataFrame) -> None:
    with pytest.raises(ChartTooManyRowsError):
        build_chart(ChartArgs(kind="scatter", x="x", y="y"), frame)
    spec = build_chart(ChartArgs(kind="scatter", x="x", y="y", sample=True), frame)
    assert len(spec["data"]["values"]) == 100 and "sample" in spec["description"]


def test_a_bar_of_300_categories_is_refused(frame: pd.DataFrame) -> None:
    with pytest.raises(ChartTooManyRowsError):
        build_chart(ChartArgs(kind="bar", x="id"), frame)


def test_helpers_name_a_missing_or_non_numeric_column(frame: pd.DataFrame) -> None:
    with pytest.raises(ChartDataError, match="nope"):
        build_chart(ChartArgs(kind="histogram", x="nope"), frame)
    with pytest.raises(ChartDataError, match="no numbers"):
        build_chart(ChartArgs(kind="histogram", x="g"), frame)


def test_rendering_offline(tmp_path: Any) -> None:
    spec = bar(3)
    assert render_svg(spec).lstrip().startswith("<svg")
    assert render_png(spec)[:8] == b"\x89PNG\r\n\x1a\n"
    assert save_chart(spec, tmp_path / "c.png").stat().st_size > 100
    with pytest.raises(ChartRenderError):
        save_chart(spec, tmp_path / "c.gif")
