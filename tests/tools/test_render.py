"""answer.html: self-contained, everything from a model or a dataset escaped."""

from __future__ import annotations

import json
import re
from pathlib import Path

from whyflow.ask.tools.render import render_answer_html, table_from_result, write_answer_html

EVIL = "</script><script>alert('x')</script><img src=x onerror=alert(1)>"


def page(**extra: object) -> str:
    output = {
        "answer": f"The mean is 3. {EVIL}",
        "confidence": 0.9,
        "output_type": "analysis",
        "result": {"columns": ["group", EVIL], "rows": [["a", 1.5], [EVIL, 2]], "row_count": 2},
        "figure": {
            "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
            "title": EVIL,
            "data": {"values": [{"k": EVIL, "v": 1}]},
            "mark": "bar",
            "encoding": {"x": {"field": "k", "type": "nominal"}, "y": {"field": "v", "type": "quantitative"}},
        },
        "code": f"result = '{EVIL}'",
        "caveats": [EVIL],
        "reasoning_trace": [EVIL],
        **extra,
    }
    return render_answer_html(output, question=f"Why? {EVIL}")


def without_vendored_js(html: str) -> str:
    """The page minus the inlined vega builds (whose own source holds strings such as '<img')."""
    return re.sub(r"<script>/\* vega[\w.-]*\.min\.js.*?</script>", "", html, flags=re.S)


def test_nothing_from_the_model_or_data_becomes_markup() -> None:
    html = without_vendored_js(page())
    assert "<script>alert" not in html and "<img" not in html and "onerror=alert(1)>" not in html
    assert html.count("&lt;/script&gt;&lt;script&gt;alert") >= 5  # question, answer, table, caveat, code, trace
    # the spec travels as JSON with no raw angle brackets and still parses to the original title
    block = re.search(r'<script type="application/json" id="spec-0">(.*?)</script>', html, re.S)
    assert block is not None and "<" not in block.group(1)
    assert json.loads(block.group(1))["title"] == EVIL


def test_page_is_self_contained() -> None:
    html = page()
    assert "Content-Security-Policy" in html and "connect-src 'none'" in html
    assert "<script src" not in html and "<link" not in html
    assert "vegaEmbed(" in html and "vega-lite" in html
    assert "sourceMappingURL" not in html


def test_tables_from_sandbox_results_and_records() -> None:
    table = table_from_result({"columns": ["a"], "rows": [[1]] * 500, "row_count": 900})
    assert table is not None and len(table.rows) == 200 and table.total_rows == 900
    records = table_from_result([{"a": 1, "b": 2}, {"a": 3}])
    assert records is not None and records.headers == ["a", "b"] and records.rows == [[1, 2], [3, None]]
    assert "showing 200 of 900 rows" in render_answer_html(
        {"answer": "x", "result": {"columns": ["a"], "rows": [[1]] * 500, "row_count": 900}}
    )


def test_write_creates_the_file(tmp_path: Path) -> None:
    path = write_answer_html({"answer": "ok", "output_type": "explanation"}, tmp_path / "run" / "answer.html")
    text = path.read_text()
    assert text.startswith("<!DOCTYPE html>") and "vegaEmbed" not in text  # no chart, no scripts
