"""Every published study of ``../shared/datasets/realcases`` through the full recipe (notebook step removed).

The studies nobody here wrote, each with its own file and its design flags as a user states them
(``cases.json``'s ``hints``, read by the command line's own parser): the run must finish, no estimate
in its state may be a broken number (non-finite, or an interval of zero width), and an approved
headline must cover the published effect. ``benchmarks/bench_realcases.py`` runs the same cases as
``whyflow run`` subprocesses and prints the table; this test is its floor, in-process and quicker.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.bench_realcases import CASES, SHARED
from benchmarks.bench_truth import recipe_without_notebook, run_recipe
from benchmarks.truth_kinds import Case
from whyflow.causal.state import StudyDesign

STUDIES = {c["id"]: c for c in json.loads(CASES.read_text(encoding="utf-8"))} if CASES.exists() else {}

pytestmark = pytest.mark.skipif(not STUDIES, reason=f"{CASES} not found (the shared datasets sit beside the checkout)")


@pytest.fixture(scope="module")
def recipe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return recipe_without_notebook(tmp_path_factory.mktemp("recipe"))


def _design(study: dict) -> StudyDesign:
    """The study's flags as ``whyflow run`` reads them."""
    from whyflow.cli.args import design_from_args
    from whyflow.cli.main import build_parser

    argv = ["run", "causal_analysis", "--data", study["data"], "--treatment", study["treatment"]]
    args = build_parser().parse_args([*argv, "--outcome", study["outcome"], *study["hints"]])
    return design_from_args(args)


@pytest.mark.slow
@pytest.mark.parametrize("study_id", list(STUDIES))
def test_a_published_study_gets_no_broken_number_and_no_wrong_approval(
    study_id: str, recipe: Path, tmp_path: Path
) -> None:
    study = STUDIES[study_id]
    args = {"treatment": study["treatment"], "outcome": study["outcome"]}
    case = Case(None, study["published_effect"], args)  # type: ignore[arg-type]  # the study's own file is read
    data = SHARED / "datasets" / "realcases" / study["data"]
    out = run_recipe(case, tmp_path, recipe, data=data, design=_design(study))
    assert out["error"] is None, out["error"]
    assert out["broken"] == [], out["broken"]
    if out["decision"] == "APPROVE":
        assert out["lo"] <= study["published_effect"] <= out["hi"], (
            f"{out['method']} {out['estimate']:.4g} [{out['lo']:.4g}, {out['hi']:.4g}] approved; "
            f"published {study['published_effect']}"
        )
