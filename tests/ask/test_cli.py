"""`whyflow ask`: bad input in one line (exit 2), an answer printed and written, a session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from whyflow.cli.main import main
from whyflow.flows.recipes.builtin import builtin_recipe

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["ask", "--data", "no/such/file.csv", "mean price?"], "data file not found: no/such/file.csv"),
        (["ask", "--data", "{data}", "   "], "the question is empty"),
        (["ask", "--data", "{data}", "q?", "--session", "../etc"], "--session '../etc'"),
        (
            ["ask", "--data", "{data}", "q?", "--recipe", "quick_estimate"],
            "needs `state: ask`",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    argv: list[str], message: str, shop: tuple[Path, pd.DataFrame], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [a.replace("{data}", str(shop[0])) for a in argv]
    code = main(["--runs-dir", str(tmp_path / "runs"), *args])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "runs").exists()  # nothing was created for bad input


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_ask_prints_the_answer_and_writes_the_files_and_the_session(
    shop: tuple[Path, pd.DataFrame], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, frame = shop
    runs = tmp_path / "runs"
    out = tmp_path / "first"
    code = main(
        [
            "--runs-dir",
            str(runs),
            "ask",
            "--data",
            str(path),
            "What is the average price by region?",
            "--output",
            str(out),
            "--session",
            "s1",
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0, printed
    east = frame[frame.region == "east"]["price"].mean()
    assert "east" in printed and f"{east:.4g}" in printed
    answer = json.loads((out / "answer.json").read_text())
    assert answer["output_type"] == "analysis" and answer["code"] and 0 < answer["confidence"] <= 1
    assert set(answer) >= {
        "answer",
        "confidence",
        "output_type",
        "result",
        "figure",
        "code",
        "caveats",
        "reasoning_trace",
    }
    html = (out / "answer.html").read_text()
    assert "<html" in html.lower() and "east" in html and 'src="http' not in html  # self-contained
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    with get_client(sync_client=True) as client:  # the answer's table is a Prefect artifact
        tables = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["ask-table"])))
    table: Any = max(tables, key=lambda a: a.created).data  # type: ignore[arg-type, return-value]
    rows: list[dict[str, Any]] = json.loads(table) if isinstance(table, str) else table
    assert {r["region"] for r in rows} == set(frame["region"])
    session = json.loads((runs / "sessions" / "s1.json").read_text())
    assert [m["role"] for m in session] == ["user", "assistant"]

    out2 = tmp_path / "second"
    code = main(
        ["--runs-dir", str(runs), "ask", "--data", str(path), "now by year", "--output", str(out2), "--session", "s1"]
    )
    printed = capsys.readouterr().out
    assert code == 0, printed
    state = json.loads((out2 / "state.json").read_text())
    assert state["messages"][0]["content"] == "What is the average price by region?"
    y2022 = frame[frame.year == 2022]["price"].mean()
    assert "2022" in printed and f"{y2022:.4g}" in printed
    assert len(json.loads((runs / "sessions" / "s1.json").read_text())) == 4


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_status_and_resume_of_an_ask_job(
    shop: tuple[Path, pd.DataFrame], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from whyflow.flows.ask_jobs.job import AskRequest, prepare_ask_job
    from whyflow.flows.recipes.plan import load_plan

    path, frame = shop
    recipe = builtin_recipe("ask")
    folder = prepare_ask_job(
        AskRequest("What is the median quantity?", [str(path)], recipe=str(recipe), output=str(tmp_path / "job")),
        load_plan(recipe),
    )
    state = folder.load_any()
    state.mark_cancelled("Cancelled: interrupted (Ctrl-C)")  # as a Ctrl-C before the first agent leaves it
    folder.save(state)
    assert main(["status", str(folder.path)]) == 0
    assert "a question: What is the median quantity?" in capsys.readouterr().out
    assert main(["resume", str(folder.path)]) == 0
    assert f"{frame['quantity'].median():g}" in capsys.readouterr().out
    assert main(["status", str(folder.path)]) == 0
    printed = capsys.readouterr().out
    assert "Status: completed (100%)" in printed and "Answer (analysis):" in printed
