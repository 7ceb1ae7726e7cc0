"""The data scientist's tool calls as seed 004's events (no server): what each tool shows, and stop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.web.conftest import JOB_TRAINING
from whyflow.ask.toolbox import Toolbox
from whyflow.ask.tools import analysis as T
from whyflow.ask.tools.charts import CreatePlotArgs
from whyflow.flows.errors import CancelRequested
from whyflow.web import runs
from whyflow.web.store import ChatStore


@pytest.fixture
def turn_box(tmp_path: Path) -> Any:
    store = ChatStore(tmp_path / "chat.sqlite3")
    store.create_session("s1", "jobs", str(JOB_TRAINING), "job_training.csv")
    events: list[dict[str, Any]] = []
    turn = runs.Turn(store, "s1", events.append)
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    runs.install_tool_hook()
    runs._turns[str(job_dir.resolve())] = turn
    box = Toolbox(question="q", frame=pd.read_csv(JOB_TRAINING), datasets={"data": str(JOB_TRAINING)}, job_dir=job_dir)
    try:
        yield store, turn, box, events
    finally:
        box.close()
        runs._turns.pop(str(job_dir.resolve()), None)


def test_each_tool_call_is_a_status_then_what_it_showed(turn_box: Any) -> None:
    store, turn, box, events = turn_box
    box.call(
        "sql_query",
        T.SqlQueryCall(
            query="SELECT region, AVG(earnings) AS mean FROM data GROUP BY region ORDER BY region",
            description="mean earnings by region",
        ),
    )
    box.call("sql_query", T.SqlQueryCall(query="SELECT nope FROM data", description="a column that is not there"))
    spec = {
        "data": {"values": [{"region": "east", "mean": 1.0}, {"region": "west", "mean": 2.0}]},
        "mark": "bar",
        "encoding": {"x": {"field": "region", "type": "nominal"}, "y": {"field": "mean", "type": "quantitative"}},
    }
    box.call("create_plot", CreatePlotArgs(title="Mean by region", vega_lite_spec=spec))
    box.call("output_text", T.OutputTextArgs(text="West earns most. <b>not markup</b>"))
    box.call("output_text", T.OutputTextArgs(text="West earns most. <b>not markup</b>"))  # an equivalent artifact
    types = [e["type"] for e in events]
    assert types == ["status", "query_result", "status", "query_result", "status", "plot", "status", "text", "status"]
    assert events[0] == {"type": "status", "message": "Querying the data: mean earnings by region"}
    ok, failed = events[1], events[3]
    assert ok["columns"] == ["region", "mean"] and ok["row_count"] == 4 and not ok["is_error"]
    assert [r[0] for r in ok["rows"]] == ["east", "north", "south", "west"]
    assert ok["query"].startswith("SELECT region") and ok["description"] == "mean earnings by region"
    assert failed["is_error"] and failed["rows"] == [] and "nope" in failed["error"]
    assert events[5]["title"] == "Mean by region" and events[5]["vega_lite_spec"]["mark"] in ("bar", {"type": "bar"})
    rows = [(m.role, m.type, m.text) for m in store.messages("s1")]
    assert rows == [
        ("assistant", "query_result", "mean earnings by region"),
        ("assistant", "query_result", "a column that is not there"),
        ("assistant", "plot", "Mean by region"),
        ("assistant", "text", "West earns most. <b>not markup</b>"),
    ]
    assert store.messages("s1")[0].data["columns"] == ["region", "mean"]


def test_stop_raises_the_runners_cancel_after_the_tool_call(turn_box: Any) -> None:
    store, turn, box, events = turn_box
    turn.stop.set()
    with pytest.raises(CancelRequested):
        box.call("output_text", T.OutputTextArgs(text="the last thing shown"))
    assert [e["type"] for e in events] == ["status", "text"]  # the call under way finished and was shown
