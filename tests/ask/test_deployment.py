"""The ``ask`` deployment's flow: the answer artifact and a repeated question's history with drift."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from whyflow.cli.main import main

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_harness")]


def _artifacts(key: str) -> list[Any]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    with get_client(sync_client=True) as client:
        found = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])))
    return sorted(found, key=lambda a: a.created)


def test_a_scheduled_question_records_its_answers_over_time(
    shop: tuple[Path, pd.DataFrame], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from whyflow.deployments import ask_deployment

    _, frame = shop
    data = tmp_path / "orders.csv"
    frame.to_csv(data, index=False)
    runs = tmp_path / "runs"
    question = "What is the mean price?"
    first = ask_deployment(question=question, data=str(data), output=str(runs / "b"))
    assert first["status"] == "completed" and first["output_type"] == "analysis" and not first["drift_flags"]
    assert (runs / "b" / "answer.json").exists() and (runs / "b" / "answer.html").exists()
    answer_md = _artifacts("ask-answer")[-1].data  # type: ignore[attr-defined]
    assert question in answer_md and "```python" in answer_md
    frame.assign(price=frame["price"] * 2).to_csv(data, index=False)  # the data is refreshed
    again = ask_deployment(question=question, data=str(data), output=str(runs / "c"))
    assert again["drift_flags"] and "estimate moved 100%" in again["drift_flags"][0]

    assert main(["--runs-dir", str(runs), "history", "ask", "--data", str(data)]) == 0
    printed = capsys.readouterr().out
    assert f"{frame['price'].mean():.4g}" in printed and f"{2 * frame['price'].mean():.4g}" in printed
