"""Vega-Lite v5 charts: inline data only, at most 100 rows, validated against the v5 JSON schema.

Seed 004's ``create_plot`` tool takes a title and a Vega-Lite spec whose data is inline
(``data.values``); the data must be aggregated first, so a spec carrying more than
:data:`MAX_CHART_ROWS` rows is refused with a reason rather than silently thinned. The small
helpers (:func:`build_chart`) do that aggregation in pandas for the four common charts — bar,
histogram, scatter, line — and :func:`render_png` / :func:`render_svg` draw a spec offline with
``vl-convert`` for the terminal and notebooks. The schema file is vendored in ``static/``.
"""

from __future__ import annotations

import copy
import json
import math
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from whyflow.ask.tools.errors import ChartDataError, ChartRenderError, ChartSchemaError, ChartTooManyRowsError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "MAX_CHART_ROWS",
    "SCHEMA_URL",
    "CreatePlotArgs",
    "ChartArgs",
    "validate_spec",
    "create_plot",
    "build_chart",
    "render_png",
    "render_svg",
    "save_chart",
]

MAX_CHART_ROWS = 100
SCHEMA_URL = "https://vega.github.io/schema/vega-lite/v5.json"
_VL_VERSION = "5.21"  # the newest v5 line vl-convert bundles
Aggregate = Literal["count", "mean", "sum", "median", "min", "max"]


class CreatePlotArgs(BaseModel):
    """Arguments of seed 004's ``create_plot`` tool: a title and a spec with inline data."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    title: str = Field(description="Chart title shown above the plot.")
    vega_lite_spec: dict[str, Any] = Field(
        description="A Vega-Lite v5 spec with data inline as data.values (≤ 100 rows)."
    )


class ChartArgs(BaseModel):
    """A chart described by a few fields; :func:`build_chart` aggregates and writes the spec."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["bar", "histogram", "scatter", "line"]
    x: str = Field(description="Column on the x axis (the category for bar, the variable for histogram).")
    y: str | None = Field(default=None, description="Numeric column on the y axis; bar without y counts rows.")
    aggregate: Aggregate = Field(default="mean", description="How bar and line charts combine y per x value.")
    color: str | None = Field(default=None, description="Optional categorical column coloring scatter points.")
    bins: int = Field(default=20, ge=2, le=MAX_CHART_ROWS, description="Histogram bins.")
    title: str = ""
    sample: bool = Field(
        default=False,
        description="Scatter only: with more than 100 points, draw a seeded random sample of 100 (stated in the title) "
        "instead of refusing.",
    )


@lru_cache(maxsize=1)
def _validator() -> Any:
    """The compiled Draft-7 validator of the vendored Vega-Lite v5 schema (loaded once)."""
    import jsonschema

    text = resources.files("whyflow.ask.tools").joinpath("static/vega-lite-v5.schema.json").read_text(encoding="utf-8")
    schema = json.loads(text)
    return jsonschema.validators.validator_for(schema)(schema)


def validate_spec(spec: Any, max_rows: int = MAX_CHART_ROWS) -> dict[str, Any]:
    """Return a copy of ``spec`` checked to be Vega-Lite v5 with ≤ ``max_rows`` rows of inline data.

    Raises:
        ChartSchemaError: not a JSON object, data not inline (``url``), a non-v5 ``$schema``, or
            the JSON schema rejects it (the message names the failing path).
        ChartTooManyRowsError: a ``data.values`` holds more than ``max_rows`` rows.
    """
    import jsonschema

    if not isinstance(spec, dict):
        raise ChartSchemaError(f"a Vega-Lite spec must be a JSON object, not {type(spec).__name__}")
    try:
        spec = json.loads(json.dumps(spec, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise ChartSchemaError(
            f"the spec is not plain JSON (NaN, infinity or an object that is not JSON): {exc}"
        ) from exc
    declared = spec.setdefault("$schema", SCHEMA_URL)
    if not (isinstance(declared, str) and "/vega-lite/v5" in declared):
        raise ChartSchemaError(f"the spec declares $schema {declared!r}; only Vega-Lite v5 is accepted")
    datas = list(_data_blocks(spec))
    if not datas:
        raise ChartSchemaError("the spec has no data; put the aggregated rows inline as data.values")
    for where, block in datas:
        if "values" not in block or "url" in block:
            raise ChartSchemaError(f"{where} must carry its rows inline as data.values (no url or named data source)")
        values = block["values"]
        rows = len(values) if isinstance(values, list) else 1
        if rows > max_rows:
            raise ChartTooManyRowsError(rows, max_rows)
    errors = list(_validator().iter_errors(spec))
    if errors:
        best = jsonschema.exceptions.best_match(errors)
        path = "/".join(str(p) for p in best.absolute_path) or "(top level)"
        raise ChartSchemaError(f"the spec is not valid Vega-Lite v5 at {path}: {best.message[:300]}")
    return spec


def _data_blocks(node: Any, where: str = "spec") -> Any:
    """Every ``data`` object in the spec (top level, layers, concatenations), with its location."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "data" and isinstance(value, dict):
                yield f"{where}.data", value
            elif key == "datasets":
                raise ChartSchemaError("named 'datasets' are not accepted; put the rows inline as data.values")
            else:
                yield from _data_blocks(value, f"{where}.{key}")
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from _data_blocks(item, f"{where}[{index}]")


def create_plot(args: CreatePlotArgs) -> dict[str, Any]:
    """Seed 004's ``create_plot``: the validated spec with the title set (refusals raise)."""
    spec = copy.deepcopy(args.vega_lite_spec)
    spec.setdefault("title", args.title)
    return validate_spec(spec)


def build_chart(args: ChartArgs, frame: pd.DataFrame) -> dict[str, Any]:
    """Aggregate ``frame`` for the asked chart and return a validated Vega-Lite v5 spec.

    Bar: ``aggregate`` of ``y`` per ``x`` value (row count without ``y``); histogram: ``bins``
    equal-width bins of ``x``; scatter: the raw points (≤ 100, or an explicit seeded sample);
    line: ``aggregate`` of ``y`` per ``x`` value, sorted by ``x``. Missing values are dropped and
    the number dropped is stated in the spec's description.
    """
    for column in (args.x, args.y, args.color):
        if column is not None and column not in frame.columns:
            raise ChartDataError(
                f"column {column!r} is not in the data (columns: {', '.join(map(str, frame.columns))})"
            )
    builders = {"bar": _bar, "histogram": _histogram, "scatter": _scatter, "line": _line}
    spec = builders[args.kind](args, frame)
    spec["$schema"] = SCHEMA_URL
    if args.title:
        spec["title"] = args.title
    return validate_spec(spec)


def _numeric(frame: pd.DataFrame, column: str) -> pd.Series:
    """The column as numbers; raise when nothing in it is numeric."""
    import pandas as pd

    values = pd.to_numeric(frame[column], errors="coerce")
    if values.notna().sum() == 0:
        raise ChartDataError(f"column {column!r} holds no numbers, so it cannot be on a numeric axis")
    return values


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """JSON-safe row dicts (numpy scalars to Python, NaN to None, timestamps to ISO text)."""
    out = []
    for row in frame.to_dict(orient="records"):
        clean: dict[str, Any] = {}
        for key, value in row.items():
            if hasattr(value, "isoformat"):
                value = value.isoformat()
            elif hasattr(value, "item"):
                value = value.item()
            if isinstance(value, float) and not math.isfinite(value):
                value = None
            clean[str(key)] = value
        out.append(clean)
    return out


def _grouped(args: ChartArgs, frame: pd.DataFrame) -> tuple[pd.DataFrame, str, str]:
    """Rows of (x, aggregated y) for bar and line charts, and the y field name and axis title."""
    import pandas as pd

    if args.y is None or args.aggregate == "count":
        table = frame.groupby(args.x, dropna=True).size().reset_index(name="count")
        return table, "count", "count of rows"
    data = pd.DataFrame({args.x: frame[args.x], args.y: _numeric(frame, args.y)}).dropna()
    table = data.groupby(args.x)[args.y].agg(args.aggregate).reset_index()
    return table, args.y, f"{args.aggregate} of {args.y}"


def _bar(args: ChartArgs, frame: pd.DataFrame) -> dict[str, Any]:
    """Bar chart of an aggregate per category."""
    table, field, label = _grouped(args, frame)
    if len(table) > MAX_CHART_ROWS:
        raise ChartTooManyRowsError(len(table), MAX_CHART_ROWS)
    return {
        "data": {"values": _records(table)},
        "mark": "bar",
        "encoding": {
            "x": {"field": args.x, "type": "nominal", "sort": "-y"},
            "y": {"field": field, "type": "quantitative", "title": label},
        },
    }


def _histogram(args: ChartArgs, frame: pd.DataFrame) -> dict[str, Any]:
    """Histogram with bins computed here, so the spec carries ``bins`` rows, not the raw data."""
    import numpy as np
    import pandas as pd

    values = _numeric(frame, args.x).dropna().to_numpy(dtype=float)
    counts, edges = np.histogram(values, bins=args.bins)
    table = pd.DataFrame({"bin_start": edges[:-1], "bin_end": edges[1:], "count": counts})
    return {
        "description": f"{len(values)} values of {args.x} in {args.bins} equal-width bins",
        "data": {"values": _records(table)},
        "mark": "bar",
        "encoding": {
            "x": {"field": "bin_start", "type": "quantitative", "bin": {"binned": True}, "title": args.x},
            "x2": {"field": "bin_end"},
            "y": {"field": "count", "type": "quantitative", "title": "count"},
        },
    }


def _scatter(args: ChartArgs, frame: pd.DataFrame) -> dict[str, Any]:
    """Scatter of raw points; more than 100 refused unless an explicit seeded sample is asked."""
    import pandas as pd

    if args.y is None:
        raise ChartDataError("a scatter chart needs both x and y columns")
    data = pd.DataFrame({args.x: _numeric(frame, args.x), args.y: _numeric(frame, args.y)})
    if args.color:
        data[args.color] = frame[args.color].astype("string")
    data = data.dropna(subset=[args.x, args.y])
    description = f"{len(data)} points"
    if len(data) > MAX_CHART_ROWS:
        if not args.sample:
            raise ChartTooManyRowsError(len(data), MAX_CHART_ROWS)
        description = f"a random sample (seed 0) of {MAX_CHART_ROWS} of {len(data)} points"
        data = data.sample(n=MAX_CHART_ROWS, random_state=0)
    encoding: dict[str, Any] = {
        "x": {"field": args.x, "type": "quantitative", "scale": {"zero": False}},
        "y": {"field": args.y, "type": "quantitative", "scale": {"zero": False}},
    }
    if args.color:
        encoding["color"] = {"field": args.color, "type": "nominal"}
    return {"description": description, "data": {"values": _records(data)}, "mark": "point", "encoding": encoding}


def _line(args: ChartArgs, frame: pd.DataFrame) -> dict[str, Any]:
    """Line of an aggregate per x value (a time or an ordered number), sorted by x."""
    import pandas as pd

    table, field, label = _grouped(args, frame)
    if len(table) > MAX_CHART_ROWS:
        raise ChartTooManyRowsError(len(table), MAX_CHART_ROWS)
    xs = table[args.x]
    kind = "quantitative" if pd.api.types.is_numeric_dtype(xs) else "ordinal"
    if pd.api.types.is_datetime64_any_dtype(xs):
        kind = "temporal"
    table = table.sort_values(args.x)
    return {
        "data": {"values": _records(table)},
        "mark": {"type": "line", "point": True},
        "encoding": {
            "x": {"field": args.x, "type": kind},
            "y": {"field": field, "type": "quantitative", "title": label},
        },
    }


def render_svg(spec: dict[str, Any]) -> str:
    """Draw a validated spec to SVG text, offline (``vl-convert``; no network is allowed)."""
    import vl_convert

    try:
        return str(vl_convert.vegalite_to_svg(validate_spec(spec), vl_version=_VL_VERSION, allowed_base_urls=[]))
    except ValueError as exc:
        raise ChartRenderError(f"the chart could not be drawn: {exc}") from exc


def render_png(spec: dict[str, Any], scale: float = 1.0) -> bytes:
    """Draw a validated spec to PNG bytes, offline (``vl-convert``; no network is allowed)."""
    import vl_convert

    try:
        return bytes(
            vl_convert.vegalite_to_png(validate_spec(spec), vl_version=_VL_VERSION, scale=scale, allowed_base_urls=[])
        )
    except ValueError as exc:
        raise ChartRenderError(f"the chart could not be drawn: {exc}") from exc


def save_chart(spec: dict[str, Any], path: Path) -> Path:
    """Write the spec drawn as ``.png`` or ``.svg`` (by suffix) or as ``.json``; return the path."""
    suffix = path.suffix.lower()
    path.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".png":
        path.write_bytes(render_png(spec))
    elif suffix == ".svg":
        path.write_text(render_svg(spec), encoding="utf-8")
    elif suffix == ".json":
        path.write_text(json.dumps(validate_spec(spec), indent=2), encoding="utf-8")
    else:
        raise ChartRenderError(f"cannot save a chart as {suffix or 'a file without suffix'}; use .png, .svg or .json")
    return path
