"""Tools for asking questions of the data: SQL, charts, worked examples, answer pages.

Plain functions with pydantic argument models, shared by the deterministic ask recipe, the
ReAct agent and the chat page. Submodules import their heavy libraries inside the functions,
so importing this package stays cheap:

- :mod:`whyflow.ask.tools.sql` — ``sql_query`` (one DuckDB SELECT over the datasets as views)
- :mod:`whyflow.ask.tools.charts` — Vega-Lite v5 specs (validated, ≤ 100 rows), PNG/SVG rendering
- :mod:`whyflow.ask.tools.library` — the worked-example library (YAML under ``examples/``)
- :mod:`whyflow.ask.tools.retrieval` — retrieval by similarity and template filling (``retrieve``, ``fill``)
- :mod:`whyflow.ask.tools.slots`, :mod:`whyflow.ask.tools.filters` — columns, numbers and row filters read from a question
- :mod:`whyflow.ask.tools.answers` — the answer in the form the question asks for (rounding, units, ``@name[value]``)
- :mod:`whyflow.ask.tools.render` — a self-contained ``answer.html`` (and seed 004's ``output_table``)
- :mod:`whyflow.ask.tools.errors` — one exception class per refusal or failure, each with a ``reason``
"""

from __future__ import annotations
