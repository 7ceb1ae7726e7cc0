"""The ``ask`` deployment's flow: answer, table and chart artifacts; a repeated question's history."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from flows.cli import main

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_harness")]


def _artifacts(key: str) -> list[object]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    with get_client(sync_client=True) as client:
        return list(client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key]))))


def test_a_scheduled_question_records_its_answers_over_time(
    shop: tuple[Path, pd.DataFrame], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from flows.deployments import ask_deployment

    _, frame = shop
    data = tmp_path / "orders.csv"
    frame.to_csv(data, index=False)
    runs = tmp_path / "runs"
    first = ask_deployment(question="What is the average price by region?", data=str(data), output=str(runs / "a"))
    assert first["status"] == "completed" and first["output_type"] == "analysis"
    assert (runs / "a" / "answer.json").exists() and (runs / "a" / "answer.html").exists()
    answer_md = _artifacts("ask-answer")[-1].data  # type: ignore[attr-defined]
    assert "What is the average price by region?" in answer_md and "```python" in answer_md
    table = _artifacts("ask-table")[-1].data  # type: ignore[attr-defined]
    rows = json.loads(table) if isinstance(table, str) else table
    assert {r["region"] for r in rows} == set(frame["region"])

    question = "What is the mean price?"
    ask_deployment(question=question, data=str(data), output=str(runs / "b"))
    frame.assign(price=frame["price"] * 2).to_csv(data, index=False)  # the data is refreshed
    again = ask_deployment(question=question, data=str(data), output=str(runs / "c"))
    assert again["drift_flags"] and "estimate moved 100%" in again["drift_flags"][0]

    assert main(["--runs-dir", str(runs), "history", "pipelines/ask.yaml", "--data", str(data)]) == 0
    printed = capsys.readouterr().out
    assert f"{frame['price'].mean():.4g}" in printed and f"{2 * frame['price'].mean():.4g}" in printed
