"""An imputed confounder end to end: the estimate adjusts for it where it was measured, and says so.

Data repair fills a quarter of ``income`` with its median and adds ``income_missing``; adjusting for
the filled column and its flag leaves the filled rows confounded (about 2.15 against a true 2). The
backdoor estimators use the complete cases instead: the summary names them, the executed notebook
reproduces the headline on the same rows, and the user's file is not changed.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from benchmarks.truth_kinds import make
from whyflow.cli.main import main


@pytest.mark.slow
def test_an_imputed_confounder_is_adjusted_for_on_its_complete_cases(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    case = make("imputed_confounder", seed=1, n=1500)
    data = tmp_path / "study.csv"
    case.frame.to_csv(data, index=False)
    before = hashlib.sha256(data.read_bytes()).hexdigest()
    out = tmp_path / "job"
    args = ["run", "causal_analysis", "--data", str(data), "-t", "treated", "-y", "outcome", "-o", str(out)]
    assert main([*args, "--set", "notebook_generator.html=false"]) == 0
    printed = capsys.readouterr().out
    state = json.loads((out / "state.json").read_text())
    head = next(e for e in state["treatment_effects"] if e["details"].get("headline"))
    measured = int(case.frame["income"].notna().sum())
    assert head["details"]["n_used"] == measured
    assert head["details"]["extras"]["complete_cases"]["income"]["n_complete"] == measured
    assert "income_missing" not in head["details"]["adjustment_set"]
    assert head["ci_lower"] <= case.effect <= head["ci_upper"]
    assert f"{measured:,} rows where income was measured" in printed
    cells = json.loads((out / "report.ipynb").read_text())["cells"]
    check = next(c for c in cells if "headline-check" in c.get("metadata", {}).get("tags", []))
    outputs = "".join("".join(o.get("text", "")) for o in check["outputs"])
    assert "Reproduced: the estimate matches the run." in outputs, outputs
    assert hashlib.sha256(data.read_bytes()).hexdigest() == before
