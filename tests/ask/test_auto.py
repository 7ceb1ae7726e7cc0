"""Seed 004's first analysis (whyflow/recipes/auto_analyze.yaml, `whyflow ask --data FILE --auto`) and
`whyflow ask --recipe ask_react`: real reader, runner, DuckDB and Prefect."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from tests.ask.test_agents import ask
from tests.llm.scripted import Scripted, ScriptedLLM
from whyflow.ask.tools.column_report import HEADERS, column_report, dataset_summary, session_title
from whyflow.cli.main import main
from whyflow.flows.recipes.builtin import builtin_recipe
from whyflow.runtime.data import read_table

ROOT = Path(__file__).resolve().parents[2]
AUTO = builtin_recipe("auto_analyze")
PUBLIC = Path("/work/shared/datasets/public")


def _call(name: str, **arguments: object) -> Scripted:
    return Scripted(content="", tool_calls=[(name, json.dumps(arguments))])


def test_every_public_csv_gets_a_row_per_column_a_summary_and_a_title() -> None:
    files = sorted(PUBLIC.rglob("*.csv"))
    if not files:
        pytest.skip("the shared public datasets are not on this machine")
    for path in files:
        frame = read_table(path)
        rows = column_report(frame)
        assert [r.column for r in rows] == [str(c) for c in frame.columns], path
        for r in rows:
            assert len(r.cells()) == len(HEADERS) and r.non_null <= len(frame) and r.cells()[-1], (path, r)
        summary = dataset_summary(path.stem, frame, rows)
        sentences = re.split(r"(?<=\.)\s+(?=[A-Z0-9'])", summary)
        assert 3 <= len(sentences) <= 5, (path, sentences)
        assert session_title(path.stem, frame)


def test_the_issues_column_flags_what_004_asks(tmp_path: Path) -> None:
    n = 200
    frame = pd.DataFrame(
        {
            "id": [f"c{i}" for i in range(n)],
            "mostly_missing": [1.0 if i % 4 == 0 else None for i in range(n)],
            "constant": ["x"] * n,
            "spend": [10.0 + 0.5 * (i % 37) for i in range(n - 2)] + [5000.0, 9000.0],
            "mixed": [str(i) if i % 2 else f"v{i}" for i in range(n)],
            "revenue": [f"{1000 + 37 * i:,}" for i in range(n)],
            "signup": [f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}" for i in range(n)],
        }
    )
    issues = {r.column: "; ".join(r.issues) for r in column_report(frame)}
    assert "high null rate (75% missing)" in issues["mostly_missing"]
    assert "constant column" in issues["constant"]
    assert "2 suspicious outliers" in issues["spend"]
    assert "mixed types" in issues["mixed"]
    assert "numbers stored as text" in issues["revenue"]
    assert "dates stored as text" in issues["signup"]
    assert issues["id"] == ""


def test_the_recipe_without_a_model(tmp_path: Path, shop: tuple[Path, pd.DataFrame]) -> None:
    path, frame = shop
    state = ask(tmp_path, path, "first look", recipe=AUTO)
    final = state.final_output
    assert final is not None and final.output_type == "analysis" and final.result["columns"] == HEADERS
    assert [row[0] for row in final.result["rows"]] == list(frame.columns)
    assert state.session_title and "300 rows" in state.session_title
    assert state.runtime is not None and [t.target for t in state.runtime.transitions] == ["presenting", "completed"]


@pytest.fixture
def scripted(scripted_model: Callable[..., ScriptedLLM]) -> Callable[..., ScriptedLLM]:
    return scripted_model


def test_with_a_model_it_explores_then_finalizes_with_a_title(
    scripted, tmp_path: Path, shop: tuple[Path, pd.DataFrame]
) -> None:  # type: ignore[no-untyped-def]
    path, frame = shop
    count = "SELECT region, COUNT(*) AS n FROM data GROUP BY region ORDER BY region"
    scripted(
        [
            _call("sql_query", query=count, description="orders per region"),
            _call("sql_query", query=count, description="orders per region"),
            _call("output_text", text="These are 300 orders across four regions. West orders cost 99999 on average."),
            _call("finalize", session_title="Regional Orders"),
        ]
    )
    state = ask(tmp_path, path, "first look", recipe=AUTO)
    final, rt = state.final_output, state.runtime
    assert final is not None and rt is not None and rt.mode == "model"
    assert final.answer == "These are 300 orders across four regions."  # the unqueried number was dropped
    assert state.session_title == "Regional Orders" and len(final.result["rows"]) == frame.shape[1]
    assert rt.counters.duplicate_tool_call_skipped == 1 and rt.intents and "orders per region" in rt.intents[0]


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_the_cli_runs_auto_and_the_react_recipe(
    shop: tuple[Path, pd.DataFrame], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, frame = shop
    runs = tmp_path / "runs"
    assert (
        main(["--runs-dir", str(runs), "ask", "--data", str(path), "--auto", "--output", str(tmp_path / "auto")]) == 0
    )
    printed = capsys.readouterr().out
    assert "title: Orders (300 rows × 4 columns)" in printed and "Non-Null Count" in printed and "runtime:" in printed
    assert json.loads((tmp_path / "auto" / "answer.json").read_text())["result"]["columns"] == HEADERS
    code = main(
        [
            "--runs-dir",
            str(runs),
            "ask",
            "--data",
            str(path),
            "--recipe",
            "ask_react",
            "What is the average price by region?",
            "--output",
            str(tmp_path / "react"),
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0, printed
    east = frame[frame.region == "east"]["price"].mean()
    assert f"{east:.4g}" in printed and "runtime: deterministic" in printed

    from whyflow.deployments import ask_deployment  # the auto-analyze deployment of prefect.yaml

    done = ask_deployment(
        question="first look", data=str(path), recipe="auto_analyze", output=str(tmp_path / "deployed")
    )
    assert done["status"] == "completed" and done["answer"].startswith("'orders' holds 300 rows")
