"""Tools for asking questions of the data: SQL, charts, worked examples, answer pages.

Plain functions with pydantic argument models, shared by the deterministic ask recipe, the
ReAct agent and the chat page. Submodules import their heavy libraries inside the functions,
so importing this package stays cheap:

- :mod:`agents.ask.tools.sql` — ``sql_query`` (one DuckDB SELECT over the datasets as views)
- :mod:`agents.ask.tools.charts` — Vega-Lite v5 specs (validated, ≤ 100 rows), PNG/SVG rendering
- :mod:`agents.ask.tools.library` — the worked-example library (YAML under ``examples/``)
- :mod:`agents.ask.tools.retrieval` — retrieval by similarity and template filling (``retrieve``, ``fill``)
- :mod:`agents.ask.tools.slots`, :mod:`agents.ask.tools.filters` — columns, numbers and row filters read from a question
- :mod:`agents.ask.tools.answers` — the answer in the form the question asks for (rounding, units, ``@name[value]``)
- :mod:`agents.ask.tools.render` — a self-contained ``answer.html`` (and seed 004's ``output_table``)
- :mod:`agents.ask.tools.errors` — one exception class per refusal or failure, each with a ``reason``
"""

from __future__ import annotations
