"""Recurring analyses of refreshed data: history, drift flags and reuse of unchanged data."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmarks.synthetic import linear_confounding
from whyflow.cli.main import main

pytestmark = pytest.mark.usefixtures("prefect_harness")

RECIPE = """\
name: drifty
settings: {seed: 0}
steps:
  - agent: toy_profiler
  - agent: eda_agent
  - critique_loop:
      max_iterations: 2
      steps:
        - agent: toy_estimator
        - agent: toy_critique
          with: {approve_at: 1}
"""


@pytest.fixture()
def recipe(tmp_path: Path) -> Path:
    path = tmp_path / "drifty.yaml"
    path.write_text(RECIPE)
    return path


def _clean(seed: int = 1) -> pd.DataFrame:
    frame, _ = linear_confounding(500, effect=2.0, seed=seed)
    return frame


def _degraded(frame: pd.DataFrame) -> pd.DataFrame:
    """The same study, but the effect tripled and the data much dirtier."""
    rng = np.random.default_rng(3)
    out = frame.copy()
    out.loc[out["treated"] == 1, "outcome"] += 4.0
    for col in ("x1", "x2", "x3"):
        out.loc[rng.random(len(out)) < 0.2, col] = np.nan
        out.loc[out.sample(8, random_state=1).index, col] = 1e4
    return pd.concat([out, out.head(40)], ignore_index=True)


def _run(recipe: Path, data: Path, runs: Path) -> dict:
    code = main(["--runs-dir", str(runs), "run", str(recipe), "--data", str(data), "-t", "treated", "-y", "outcome"])
    assert code == 0
    newest = max(runs.glob("*/run.json"), key=lambda p: json.loads(p.read_text())["created_at"])
    return json.loads(newest.read_text())


def test_refreshed_data_flags_drift_and_history_shows_every_run(
    recipe: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, runs = tmp_path / "study.csv", tmp_path / "runs"
    _clean().to_csv(data, index=False)
    first = _run(recipe, data, runs)
    assert first["drift"]["flags"] == [] and first["drift"]["previous_job"] is None

    _degraded(_clean()).to_csv(data, index=False)  # refreshed in place: same source, new content
    second = _run(recipe, data, runs)
    flags = second["drift"]["flags"]
    assert second["drift"]["previous_job"] == first["job_id"]
    assert any(f.startswith("estimate moved") for f in flags), flags
    assert any(f.startswith("data quality dropped") for f in flags), flags
    assert not any("schema" in f for f in flags), flags

    refreshed = _degraded(_clean())
    refreshed["x4"] = np.random.default_rng(9).normal(size=len(refreshed))
    refreshed.to_csv(data, index=False)
    third = _run(recipe, data, runs)
    assert third["drift"]["previous_job"] == second["job_id"]
    assert third["drift"]["flags"] == ["data schema changed (added: x4)"], third["drift"]

    capsys.readouterr()
    assert main(["--runs-dir", str(runs), "history", str(recipe), "--data", str(data)]) == 0
    out = capsys.readouterr().out.splitlines()
    rows = [line for line in out if line.strip().startswith(tuple(r["job_id"] for r in (first, second, third)))]
    assert [row.split()[0] for row in rows] == [first["job_id"], second["job_id"], third["job_id"]]
    for row, run in zip(rows, (first, second, third), strict=True):
        assert f"{run['fingerprint']['rows']}×{run['fingerprint']['columns']}" in row
        assert run["data_sha256"][:10] in row and "APPROVE" in row
    assert "estimate moved" in rows[1] and "data schema changed" in rows[2] and rows[0].rstrip().endswith("-")
    # by recipe name too, and nothing for another data source
    assert main(["--runs-dir", str(runs), "history", "drifty", "--data", str(data)]) == 0
    assert len([line for line in capsys.readouterr().out.splitlines() if first["job_id"] in line]) == 1
    assert main(["--runs-dir", str(runs), "history", "drifty", "--data", str(tmp_path / "other.csv")]) == 0
    assert "no runs of recipe 'drifty'" in capsys.readouterr().out

    from prefect import get_client

    with get_client(sync_client=True) as client:
        history = client.read_latest_artifacts()
    table = next(a for a in history if a.key == "drifty-history").data
    assert all(r["job_id"] in table for r in (first, second, third))


def test_unchanged_data_reuses_the_completed_job_unless_forced(
    recipe: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from whyflow.deployments import whyflow_deployment

    runs = tmp_path / "runs"
    monkeypatch.setenv("WHYFLOW_RUNS_DIR", str(runs))
    data = tmp_path / "study.csv"
    _clean(seed=2).to_csv(data, index=False)
    args = {"recipe": str(recipe), "data": str(data), "treatment": "treated", "outcome": "outcome", "metadata": None}

    first = whyflow_deployment(**args)
    assert first["reused"] is False and first["status"] == "completed"
    second = whyflow_deployment(**args)
    assert second == {"job_id": first["job_id"], "job_dir": first["job_dir"], "status": "completed", "reused": True}
    assert [p.name for p in runs.iterdir()] == [first["job_id"]]

    # a different question is not the same analysis
    other = whyflow_deployment(**{**args, "estimand": "ATT"})
    assert other["reused"] is False
    forced = whyflow_deployment(**args, force=True)
    assert forced["reused"] is False and forced["job_id"] not in (first["job_id"], other["job_id"])
    assert forced["drift_flags"] == []

    _degraded(_clean(seed=2)).to_csv(data, index=False)
    refreshed = whyflow_deployment(**args)
    assert refreshed["reused"] is False and any(f.startswith("estimate moved") for f in refreshed["drift_flags"])
