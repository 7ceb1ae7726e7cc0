"""answer.html in a real headless Chromium: the chart draws offline and nothing injected runs.

`make install` installs Chromium where it can (root with apt-get), as it does bubblewrap;
elsewhere this test is skipped with the reason.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.tools.test_render import EVIL
from whyflow.ask.tools.render import write_answer_html

BROWSER = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
pytestmark = pytest.mark.skipif(
    BROWSER is None, reason="no Chromium on this machine (make install adds it where apt-get works)"
)


def _dom(page: Path) -> str:
    """The page's DOM after its scripts ran (no network: the vega builds are inlined)."""
    assert BROWSER is not None
    proc = subprocess.run(
        [
            BROWSER,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--virtual-time-budget=5000",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-500:]
    return proc.stdout


def test_the_chart_draws_and_injected_markup_stays_text(tmp_path: Path) -> None:
    rows = [{"region": r, "mean": v} for r, v in (("east", 20977.4), ("west", 22691.9), (EVIL, 1.0))]
    output = {
        "answer": f"West is highest. {EVIL}",
        "confidence": 0.9,
        "output_type": "visualization",
        "result": {"columns": ["region", "mean"], "rows": [[r["region"], r["mean"]] for r in rows], "row_count": 3},
        "figure": {
            "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
            "title": "Mean by region",
            "data": {"values": rows},
            "mark": "bar",
            "encoding": {"x": {"field": "region", "type": "nominal"}, "y": {"field": "mean", "type": "quantitative"}},
        },
        "code": "result = df.groupby('region')['earnings'].mean()",
        "caveats": [EVIL],
        "reasoning_trace": [],
    }
    dom = _dom(write_answer_html(output, tmp_path / "answer.html", question="Mean earnings by region?"))
    assert 'class="marks"' in dom, "vega-embed drew no chart"  # the SVG vega renders, from the inlined builds
    assert dom.count('role="graphics-symbol"') >= 3 or dom.count("<path") >= 3  # one bar per row
    markup = re.sub(r"<script\b.*?</script>", "", dom, flags=re.S)  # the vendored builds hold '<img' in their source
    assert "<img" not in markup and "<script" not in markup  # no element was injected, before or after the scripts ran
    assert markup.count("&lt;img src=x onerror=alert(1)&gt;") >= 2  # shown as text: the answer and the caveat
