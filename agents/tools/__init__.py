"""Tools for asking questions of the data: SQL, charts, worked examples, answer pages.

Plain functions with pydantic argument models, shared by the deterministic ask recipe, the
ReAct agent and the chat page. Submodules import their heavy libraries inside the functions,
so importing this package stays cheap:

- :mod:`agents.tools.sql` — ``sql_query`` (one DuckDB SELECT over the datasets as views)
- :mod:`agents.tools.charts` — Vega-Lite v5 specs (validated, ≤ 100 rows), PNG/SVG rendering
- :mod:`agents.tools.library` — the worked-example library (YAML under ``examples/``)
- :mod:`agents.tools.retrieval` — retrieval by similarity, template filling, answer formatting
- :mod:`agents.tools.render` — a self-contained ``answer.html``
"""

from __future__ import annotations
