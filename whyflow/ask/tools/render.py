"""A self-contained ``answer.html``: the answer, its tables, its Vega-Lite charts, code and caveats.

The page needs no network at view time: vega, vega-lite and vega-embed (minified builds from
npm, BSD-3-Clause, see ``static/LICENSES.txt``) are inlined, and a Content-Security-Policy
forbids every fetch. Everything that came from a model or a dataset — the question, the answer,
table cells, column names, code, caveats — is HTML-escaped; chart specs travel as JSON inside a
``<script type="application/json">`` block with ``<``, ``>`` and ``&`` escaped, so a value such
as ``</script><script>alert(1)</script>`` stays text.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "TableBlock",
    "OutputTableArgs",
    "output_table",
    "table_from_result",
    "render_answer_html",
    "write_answer_html",
]

MAX_TABLE_ROWS = 200
_CSP = (
    "default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; "
    "img-src data: blob:; connect-src 'none'; font-src 'none'; form-action 'none'; base-uri 'none'"
)
_STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1d232b}
h1{font-size:1.3rem}h2{font-size:1.05rem;margin-top:1.6rem;color:#394452}
.answer{font-size:1.1rem;background:#f3f6fa;border-left:4px solid #3a6ea5;padding:.8rem 1rem;white-space:pre-wrap}
table{border-collapse:collapse;margin:.5rem 0;font-size:.9rem}th,td{border:1px solid #cfd6de;padding:.25rem .6rem;text-align:left}
th{background:#eef2f6}td.num{text-align:right;font-variant-numeric:tabular-nums}
pre{background:#f6f8fa;padding:.8rem;overflow-x:auto;font-size:.85rem}.meta{color:#5b6775;font-size:.85rem}
.note{color:#5b6775;font-size:.85rem}ul{padding-left:1.2rem}
"""


class TableBlock(BaseModel):
    """A table to show: seed 004's ``output_table`` payload (title, headers, rows)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    title: str = ""
    headers: list[str]
    rows: list[list[Any]]
    total_rows: int | None = Field(default=None, description="Rows before truncation, when the table was cut.")


class OutputTableArgs(TableBlock):
    """Arguments of seed 004's ``output_table`` tool."""


def output_table(args: OutputTableArgs) -> TableBlock:
    """Seed 004's ``output_table``: the table as it will be shown (at most 200 rows, total kept)."""
    rows = [list(r) for r in args.rows]
    total = args.total_rows if args.total_rows is not None else len(rows)
    return TableBlock(title=args.title, headers=list(args.headers), rows=rows[:MAX_TABLE_ROWS], total_rows=total)


def table_from_result(result: Any, title: str = "") -> TableBlock | None:
    """A table from a sandbox result that is one: ``{columns, rows}``, ``{columns, data}``, records."""
    if isinstance(result, Mapping) and "columns" in result and ("rows" in result or "data" in result):
        rows = result.get("rows", result.get("data")) or []
        headers = [str(c) for c in result["columns"]]
        total = result.get("row_count") or result.get("total_rows") or len(rows)
        return TableBlock(
            title=title, headers=headers, rows=[list(r) for r in rows][:MAX_TABLE_ROWS], total_rows=int(total)
        )
    if isinstance(result, list) and result and all(isinstance(r, Mapping) for r in result):
        headers = list(dict.fromkeys(str(k) for r in result for k in r))
        rows = [[r.get(h) for h in headers] for r in result]
        return TableBlock(title=title, headers=headers, rows=rows[:MAX_TABLE_ROWS], total_rows=len(rows))
    return None


@lru_cache(maxsize=1)
def _scripts() -> str:
    """The vendored vega, vega-lite and vega-embed builds, inlined (source-map comments dropped)."""
    folder = resources.files("whyflow.ask.tools").joinpath("static")
    parts = []
    for name in ("vega.min.js", "vega-lite.min.js", "vega-embed.min.js"):
        text = folder.joinpath(name).read_text(encoding="utf-8")
        text = re.sub(r"//# sourceMappingURL=\S+\s*$", "", text)
        parts.append(
            f"<script>/* {name}: see whyflow/ask/tools/static/LICENSES.txt (BSD-3-Clause) */\n{text}\n</script>"
        )
    return "\n".join(parts)


def _json_for_script(value: Any) -> str:
    """JSON safe to sit inside a <script> element (no '<', '>' or '&' characters left)."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _esc(value: Any) -> str:
    """HTML-escape any value as text."""
    return html.escape("" if value is None else str(value), quote=True)


def _cell(value: Any) -> str:
    """A table cell, right-aligned when numeric."""
    if isinstance(value, bool) or value is None:
        return f"<td>{_esc(value)}</td>"
    if isinstance(value, int | float):
        text = f"{value:.6g}" if isinstance(value, float) else str(value)
        return f'<td class="num">{_esc(text)}</td>'
    return f"<td>{_esc(value)}</td>"


def _table_html(table: TableBlock) -> str:
    """One table, with a note when it was truncated."""
    head = "".join(f"<th>{_esc(h)}</th>" for h in table.headers)
    body = "".join("<tr>" + "".join(_cell(v) for v in row) + "</tr>" for row in table.rows)
    parts = [f"<h2>{_esc(table.title)}</h2>" if table.title else ""]
    parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
    if table.total_rows is not None and table.total_rows > len(table.rows):
        parts.append(f'<p class="note">showing {len(table.rows)} of {table.total_rows} rows</p>')
    return "".join(parts)


def _figures(output: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Vega-Lite specs in the output's ``figure`` (a spec or a list of specs) and ``charts``."""
    found: list[dict[str, Any]] = []
    for key in ("figure", "figures", "charts"):
        value = output.get(key)
        if isinstance(value, Mapping):
            found.append(dict(value))
        elif isinstance(value, Sequence) and not isinstance(value, str):
            found.extend(dict(v) for v in value if isinstance(v, Mapping))
    return found


def _charts_html(specs: Sequence[dict[str, Any]]) -> str:
    """Chart containers, their specs as JSON data blocks, and the one script that embeds them."""
    if not specs:
        return ""
    parts = ["<h2>Chart</h2>" if len(specs) == 1 else "<h2>Charts</h2>"]
    for i, spec in enumerate(specs):
        parts.append(f'<div class="chart" id="chart-{i}"></div>')
        parts.append(f'<script type="application/json" id="spec-{i}">{_json_for_script(spec)}</script>')
    parts.append(_scripts())
    parts.append(
        "<script>document.querySelectorAll('script[id^=\"spec-\"]').forEach(function(el){"
        "var id=el.id.replace('spec-','chart-');var spec=JSON.parse(el.textContent);"
        "vegaEmbed('#'+id,spec,{actions:false,renderer:'svg'}).catch(function(e){"
        "document.getElementById(id).textContent='chart could not be drawn: '+e;});});</script>"
    )
    return "\n".join(parts)


def render_answer_html(output: Mapping[str, Any] | BaseModel, question: str | None = None) -> str:
    """The answer page for a FinalOutput (seed 002's fields: answer, confidence, output_type,
    result, figure, code, caveats, reasoning_trace; optionally question and tables)."""
    data: Mapping[str, Any] = output.model_dump() if isinstance(output, BaseModel) else output
    asked = question if question is not None else data.get("question", "")
    tables = [TableBlock.model_validate(t) if not isinstance(t, TableBlock) else t for t in data.get("tables") or []]
    if not tables:
        from_result = table_from_result(data.get("result"), title="Result")
        tables = [from_result] if from_result else []
    meta = [f"output: {data.get('output_type', '')}"]
    if data.get("confidence") is not None:
        meta.append(f"confidence: {data.get('confidence')}")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
        f"<title>{_esc(asked or 'answer')}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{_esc(asked)}</h1>" if asked else "<h1>Answer</h1>",
        f'<div class="answer">{_esc(data.get("answer", ""))}</div>',
        f'<p class="meta">{_esc(" · ".join(meta))}</p>',
        *(_table_html(t) for t in tables),
        _charts_html(_figures(data)),
    ]
    caveats = data.get("caveats") or []
    if caveats:
        parts.append("<h2>Caveats</h2><ul>" + "".join(f"<li>{_esc(c)}</li>" for c in caveats) + "</ul>")
    if data.get("code"):
        parts.append(f"<h2>Code that ran</h2><pre><code>{_esc(data['code'])}</code></pre>")
    trace = data.get("reasoning_trace") or []
    if trace:
        parts.append("<h2>Steps</h2><ol>" + "".join(f"<li>{_esc(s)}</li>" for s in trace) + "</ol>")
    parts.append("</body></html>")
    return "\n".join(p for p in parts if p)


def write_answer_html(output: Mapping[str, Any] | BaseModel, path: Path, question: str | None = None) -> Path:
    """Write :func:`render_answer_html` to ``path`` (folders created) and return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_answer_html(output, question), encoding="utf-8")
    return path
