"""Legitimate designs end to end through whyflow/recipes/causal_analysis.yaml (issue 9): no crash, the truth covered.

A randomised experiment with covariates, a continuous treatment with a declared instrument, and
data with nothing to adjust for; each on generated data with a known effect, through the CLI and
Prefect like a user's run (notebook not executed, discovery without bootstrap, to stay fast).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from whyflow.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.usefixtures("prefect_harness"), pytest.mark.slow]
FAST = [
    "--set",
    "notebook_generator.execute=false",
    "--set",
    "causal_discovery.bootstrap=0",
    "--set",
    "effect_estimator.bootstrap=30",
]


def _run(frame: pd.DataFrame, tmp_path: Path, treatment: str, outcome: str, *flags: str) -> tuple[dict, str]:
    data = tmp_path / "study.csv"
    frame.to_csv(data, index=False)
    out = tmp_path / "job"
    argv = ["run", "causal_analysis", "--data", str(data), "-t", treatment]
    code = main([*argv, "-y", outcome, *flags, "-o", str(out), *FAST])
    assert code == 0
    state = json.loads((out / "state.json").read_text())
    assert state["status"] == "completed"
    return state, (out / "state.json").read_text()


def _headline(state: dict) -> dict:
    heads = [e for e in state["treatment_effects"] if e["details"].get("headline")]
    assert len(heads) == 1
    return heads[-1]


def test_randomised_experiment(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(11)
    n = 1200
    age, score = rng.normal(40, 10, n), rng.normal(size=n)
    treated = rng.binomial(1, 0.5, n)
    outcome = 1.5 * treated + 0.05 * age + 1.2 * score + rng.normal(size=n)
    frame = pd.DataFrame({"age": age, "score": score, "treated": treated, "outcome": outcome})
    state, _ = _run(frame, tmp_path, "treated", "outcome")
    head = _headline(state)
    assert head["ci_lower"] <= 1.5 <= head["ci_upper"], head
    assert state["critique_history"][-1]["decision"] == "APPROVE"
    assert "Headline:" in capsys.readouterr().out


def test_continuous_treatment_with_an_instrument(tmp_path: Path) -> None:
    rng = np.random.default_rng(12)
    n = 3000
    ability, region = rng.normal(size=n), rng.normal(size=n)
    near_college = rng.binomial(1, 0.5, n)
    educ = 12 + 1.5 * near_college + ability + 0.5 * region + rng.normal(size=n)
    wage = 0.08 * educ + 0.3 * ability + 0.1 * region + rng.normal(0, 0.3, n)
    frame = pd.DataFrame({"region": region, "near_college": near_college, "educ": educ, "wage": wage})
    state, _ = _run(frame, tmp_path, "educ", "wage", "--instrument", "near_college")
    head = _headline(state)
    assert "2SLS" in head["method"] and head["ci_lower"] <= 0.08 <= head["ci_upper"], head
    assert "instrument" in state["ps_diagnostics"]["skipped"]
    assert state["critique_history"][-1]["decision"] != "REJECT"


def test_nothing_to_adjust_for(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(13)
    n = 800
    treated = rng.binomial(1, 0.4, n)
    frame = pd.DataFrame({"treated": treated, "outcome": 2.0 * treated + rng.normal(0, 2, n)})
    state, _ = _run(frame, tmp_path, "treated", "outcome")
    head = _headline(state)
    assert head["details"]["method_key"] == "diff_means" and head["ci_lower"] <= 2.0 <= head["ci_upper"], head
    assert "adjustment set is empty" in head["details"]["skipped_methods"]["aipw"]
    printed = capsys.readouterr().out
    assert "Skipped:" in printed and "Difference in means" in printed
