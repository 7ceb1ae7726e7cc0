"""One seed of every truth-benchmark kind through the full recipe (notebook step removed).

The same path as ``benchmarks/bench_truth.py``: ``pipelines/causal_analysis.yaml`` run in-process
by the runner, every decision the recipe's own. Each kind must run to completion with a headline
that covers the truth, or with a critique that refuses to approve it (issue 9's "done means"),
at a smaller size than the benchmark's so the whole file stays fast.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.bench_truth import recipe_without_notebook, run_recipe
from benchmarks.truth_kinds import KINDS, make

pytestmark = pytest.mark.slow

SMALL_N = {
    "rct": 400,
    "semi_synthetic_sites": 800,
    "continuous_instrument": 800,
    "nonlinear_confounding": 1000,
    "messy_data": 600,
    "null_with_collider": 800,
    "poor_overlap": 1000,
    "linear_10k": 1500,
    "change_score": 500,
    "did_panel": 800,
    "sharp_rdd": 800,
    "many_covariates": 800,
    "small_n": 300,
}


@pytest.fixture(scope="module")
def recipe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return recipe_without_notebook(tmp_path_factory.mktemp("recipe"))


def test_every_kind_has_a_small_size() -> None:
    assert set(SMALL_N) == set(KINDS)


@pytest.mark.parametrize("kind", list(KINDS))
def test_kind_is_right_or_not_approved(kind: str, recipe: Path, tmp_path: Path) -> None:
    case = make(kind, seed=0, n=SMALL_N[kind])
    out = run_recipe(case, tmp_path, recipe)
    assert out["error"] is None, out["error"]
    assert out["estimate"] is not None, "no headline estimate"
    covered = out["lo"] <= case.effect <= out["hi"]
    assert out["hi"] - out["lo"] > 1e-6 * max(1.0, abs(out["estimate"])), "degenerate interval"
    assert covered or out["decision"] != "APPROVE", (
        f"{out['method']} {out['estimate']:.4g} [{out['lo']:.4g}, {out['hi']:.4g}] approved; truth {case.effect}"
    )
