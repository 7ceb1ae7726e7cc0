"""The shipped example without its metadata file, as a first-time user runs it (README).

``examples/job_training.csv`` has a true effect of 1,500 (``benchmarks.synthetic.job_training``,
n = 2000, seed 7). Its strongest confounder is ``prior_earnings``, a baseline of the outcome; the
graph learnt from these rows orients its edge from the treatment, and leaving it out gave an
approved -339. Through ``whyflow run`` and through the README's causal ``whyflow ask`` question,
the approved interval must hold 1,500, or the answer must not be approved.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from whyflow.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
DATA = str(ROOT / "examples" / "job_training.csv")
TRUTH = 1500.0
FAST = ("--set", "notebook_generator.execute=false", "--set", "notebook_generator.html=false")


def _headline(state: dict) -> dict:  # type: ignore[type-arg]
    return next(e for e in state["treatment_effects"] if e["details"].get("headline"))


def _right_or_not_approved(state: dict) -> None:  # type: ignore[type-arg]
    head = _headline(state)
    decision = state["critique_history"][-1]["decision"]
    assert decision != "APPROVE" or head["ci_lower"] <= TRUTH <= head["ci_upper"], (head, decision)
    assert "prior_earnings" in state["confounder_discovery"]["adjustment_set"]


@pytest.mark.slow
def test_run_without_metadata_is_right_or_not_approved(tmp_path: Path) -> None:
    out = tmp_path / "job"
    code = main(["run", "causal_analysis", "--data", DATA, "-t", "training", "-y", "earnings", "-o", str(out), *FAST])
    assert code == 0
    _right_or_not_approved(json.loads((out / "state.json").read_text()))


@pytest.mark.slow
def test_the_readme_causal_question_is_right_or_not_approved(tmp_path: Path) -> None:
    out = tmp_path / "ask"
    question = "What is the effect of training on earnings?"
    assert main(["ask", "--data", DATA, question, "-o", str(out), "--engine", "local", "--llm", "off"]) == 0
    _right_or_not_approved(json.loads((out / "causal" / "state.json").read_text()))
    answer = json.loads((out / "answer.json").read_text())
    assert (
        answer["result"]["estimate"] == _headline(json.loads((out / "causal" / "state.json").read_text()))["estimate"]
    )


@pytest.mark.slow
def test_a_trimmed_subgroup_estimate_is_reproduced_by_its_notebook(tmp_path: Path) -> None:
    """Under ``--where "age >= 25"`` the critique switches to a gbm propensity and trims to common
    support; a gbm refitted in the notebook scores rows near the bounds differently, so the check
    cell reads back the rows the run kept rather than refitting, and must reproduce the estimate."""
    out = tmp_path / "job"
    args = ["run", "causal_analysis", "--data", DATA, "-t", "training", "-y", "earnings", "-o", str(out)]
    assert main([*args, "--where", "age >= 25", "--set", "notebook_generator.html=false"]) == 0
    state = json.loads((out / "state.json").read_text())
    cells = json.loads((out / "report.ipynb").read_text())["cells"]
    check = next(c for c in cells if "headline-check" in c.get("metadata", {}).get("tags", []))
    source = "".join(check["source"])
    index = int(source.split('STATE["treatment_effects"][')[1].split("]")[0])
    assert state["treatment_effects"][index]["details"]["trimmed"] is not None  # the trimmed path is the one tested
    outputs = "".join("".join(o.get("text", "")) for o in check["outputs"])
    assert not [o for o in check["outputs"] if o.get("output_type") == "error"], outputs
    assert "Reproduced: the estimate matches the run." in outputs
