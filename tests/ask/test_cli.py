"""`whyflow ask`: bad input in one line (exit 2), an answer printed and written, a session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
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
        (
            ["ask", "--data", "{data}", "q?", "--describe", "no/such/notes.md"],
            "description file not found: no/such/notes.md",
        ),
        (["ask", "--data", "{data}", "q?", "--describe", "columns.txt"], "description file not found: columns.txt"),
        (["ask", "--data", "{data}", "q?", "--describe", "{folder}"], ": is a folder, not a text file"),
        (
            ["ask", "--data", "{data}", "q?", "--metadata", "no/such/meta.yaml"],
            "metadata file not found: no/such/meta.yaml",
        ),
        (["ask", "--data", "{data}", "q?", "--metadata", "{bad_meta}"], "unknown metadata key 'colums'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    argv: list[str], message: str, shop: tuple[Path, pd.DataFrame], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad_meta = tmp_path / "bad.meta.yaml"
    bad_meta.write_text("colums:\n  price: what was paid\n", encoding="utf-8")
    args = [
        a.replace("{data}", str(shop[0])).replace("{bad_meta}", str(bad_meta)).replace("{folder}", str(tmp_path))
        for a in argv
    ]
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


@pytest.fixture(scope="module")
def trial(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    """A job-training trial whose columns have coded names: treat (0/1), age, re74, re75, re78."""
    rng = np.random.default_rng(5)
    n = 300
    frame = pd.DataFrame(
        {
            "treat": rng.integers(0, 2, n),
            "age": rng.integers(18, 55, n),
            "re74": rng.gamma(2, 3000, n).round(2),
            "re75": rng.gamma(2, 3000, n).round(2),
            "re78": rng.gamma(2, 4000, n).round(2),
        }
    )
    path = tmp_path_factory.mktemp("trial") / "trial.csv"
    frame.to_csv(path, index=False)
    return path, frame


def test_describe_lets_the_question_reach_coded_columns(
    trial: tuple[Path, pd.DataFrame], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, frame = trial
    question = "What is the average earnings in 1978 of people who joined the programme?"
    notes = tmp_path / "trial.md"
    notes.write_text(
        "# The trial\n\n- re74: earnings in 1974\n- re75: earnings in 1975\n- re78: earnings in 1978\n"
        "- treat: whether the person joined the programme\n",
        encoding="utf-8",
    )
    before = notes.read_bytes()
    ask = ["--runs-dir", str(tmp_path / "runs"), "ask", "--engine", "local", "--data", str(path), question]
    assert main([*ask, "--output", str(tmp_path / "bare")]) == 1  # the coded names alone: declined
    assert "I can't answer" in capsys.readouterr().out
    gold = frame.loc[frame.treat == 1, "re78"].mean()
    sentence = "re78: earnings in 1978; treat: whether the person joined the programme"
    long = sentence + "; " + " ".join(["the trial ran in 1976 and 1977"] * 20)  # longer than any file name
    for i, describe in enumerate((str(notes), sentence, long)):
        out = tmp_path / f"described{i}"
        assert main([*ask, "--describe", describe, "--output", str(out)]) == 0
        printed = capsys.readouterr().out
        assert f"{gold:.2f}" in printed and f"{int((frame.treat == 1).sum())} rows" in printed, printed
        state = json.loads((out / "state.json").read_text())
        assert state["datasets"]["data"]["aliases"]["re78"] == ["earnings in 1978"]
        assert "whether the person joined the programme" in state["data_summary"]  # the model reads it too
    assert notes.read_bytes() == before


def test_metadata_describes_the_columns_as_for_whyflow_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, meta = ROOT / "examples" / "job_training.csv", ROOT / "examples" / "job_training.meta.yaml"
    frame = pd.read_csv(data)
    question = "What is the average earnings of people who enrolled in the programme?"
    ask = ["--runs-dir", str(tmp_path / "runs"), "ask", "--engine", "local", "--data", str(data), question]
    assert main([*ask, "--output", str(tmp_path / "bare")]) == 1
    capsys.readouterr()
    assert main([*ask, "--metadata", str(meta), "--output", str(tmp_path / "described")]) == 0
    gold = frame.loc[frame.training == 1, "earnings"].mean()
    assert f"{gold:.2f}" in capsys.readouterr().out
