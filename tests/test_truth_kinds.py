"""One seed of every truth-benchmark kind through the full recipe (notebook step removed).

The same path as ``benchmarks/bench_truth.py``: ``whyflow/recipes/causal_analysis.yaml`` run in-process
by the runner, every decision the recipe's own. Each kind must run to completion with a headline
that covers the truth, or with a critique that refuses to approve it (issue 9's "done means"),
at a smaller size than the benchmark's so the whole file stays fast.

The kinds that state a specification (``--controls``, ``--cluster``, ``--where``) must keep it.
The kinds with a tempting column (``TEMPTING``: a row index, the outcome's level, its parts, a
later outcome, treatment copies, a post-treatment survey) must also name it as left out, and the
kinds with a confounder that a name rule could mistake (``MUST_ADJUST``: a baseline of the
outcome) must adjust for it.

Every kind also has an oracle (``benchmarks/truth_oracles.py``), the correctly specified
estimator the benchmark compares the recipe with: it must give a finite 95% interval around its
estimate, and on seed 0 cover the truth wherever it does (the miss is named, and marginal).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from benchmarks.bench_truth import recipe_without_notebook, run_recipe
from benchmarks.truth_kinds import KINDS, MUST_ADJUST, TEMPTING, make, messy_clean
from benchmarks.truth_oracles import ORACLE_NOTES, ORACLES, oracle

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
    "row_index": 600,
    "log_outcome": 600,
    "outcome_parts": 600,
    "followup_outcome": 600,
    "treatment_copies": 600,
    "rct_post_treatment": 600,
    "survey_score": 600,
    "rct_outcome_report": 600,
    "iv_treatment_copy": 1000,  # seed 0 at 800 rows is a 1-in-1000 sample: the oracle 2SLS misses by z = 3.4
    "imputed_confounder": 1000,
    "did_one_treated": 240,
    "trial_attrition": 600,
    "outcome_baseline": 1000,
    "stated_controls": 600,
    "clustered_trial": 800,
    "subgroup_effect": 800,
    "did_repeated_cross_section": 800,
    "fuzzy_rdd": 2000,  # seed 0 at 1500 rows is in the 5% tail (3.07 [2.36, 4.15]); 38 of 40 seeds cover there
    "two_instruments": 1000,
    "invalid_instrument": 1000,
    "staggered_did": 800,
    "treatment_aliases": 600,
    "dummies_beside_categorical": 800,
    "ratio_outcome": 600,
    "numeric_identifier": 600,
    "unit_rows_repeated": 640,
}


@pytest.fixture(scope="module")
def recipe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return recipe_without_notebook(tmp_path_factory.mktemp("recipe"))


def test_every_kind_has_a_small_size() -> None:
    assert set(SMALL_N) == set(KINDS)


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(KINDS))
def test_kind_is_right_or_not_approved(kind: str, recipe: Path, tmp_path: Path) -> None:
    case = make(kind, seed=0, n=SMALL_N[kind])
    out = run_recipe(case, tmp_path, recipe)
    assert out["error"] is None, out["error"]
    assert out["estimate"] is not None, "no headline estimate"
    covered = out["lo"] <= case.effect <= out["hi"]
    assert out["hi"] - out["lo"] > 1e-6 * max(1.0, abs(out["estimate"])), "degenerate interval"
    assert out["broken"] == [], out["broken"]  # no estimate in the state, headline or not, is a broken number
    assert covered or out["decision"] != "APPROVE", (
        f"{out['method']} {out['estimate']:.4g} [{out['lo']:.4g}, {out['hi']:.4g}] approved; truth {case.effect}"
    )
    tempting = set(TEMPTING.get(kind, ()))
    assert tempting <= set(out["left_out"]), f"not named as left out: {tempting - set(out['left_out'])}"
    assert not tempting & set(out["adjustment_set"])
    needed = {c for c in MUST_ADJUST.get(kind, ()) if c in case.frame.columns}
    assert needed <= set(out["adjustment_set"]), f"confounders not adjusted for: {needed - set(out['adjustment_set'])}"
    _kept_the_specification(case.args, out)


@pytest.mark.slow
def test_staggered_adoption_covers_the_truth_on_most_seeds(recipe: Path, tmp_path: Path) -> None:
    """The staggered_did kind on six more seeds at 40 firms: the two-stage headline covers the ATT on at least
    five (a 95% interval misses one of six about one time in thirty) and a miss is never approved."""
    misses, approved_misses = [], []
    for seed in range(1, 7):
        case = make("staggered_did", seed=seed, n=400)
        out = run_recipe(case, tmp_path / f"seed{seed}", recipe)
        assert out["error"] is None, out["error"]
        assert "two-stage" in out["method"], out["method"]
        if not out["lo"] <= case.effect <= out["hi"]:
            misses.append(f"seed {seed}: {out['estimate']:.4g} [{out['lo']:.4g}, {out['hi']:.4g}], truth {case.effect}")
            if out["decision"] == "APPROVE":
                approved_misses.append(seed)
    assert len(misses) <= 1, misses
    assert approved_misses == [], misses


@pytest.mark.slow
def test_the_job_training_study_is_not_approved_on_its_mediator(recipe: Path, tmp_path: Path) -> None:
    """outcome_baseline seed 8 (the shipped example's study, drawn again, no metadata): the learned graph puts
    skills_score after the training on a weakly supported path, so the recipe keeps it, and the effect with it
    (712) and without it (1,218) differ by 2.7 standard errors. That answer (998 [560, 1,435], truth 1,500)
    was approved; an answer resting on the mediator's timing must not be."""
    case = make("outcome_baseline", seed=8)
    out = run_recipe(case, tmp_path, recipe)
    assert out["error"] is None, out["error"]
    covered = out["lo"] <= case.effect <= out["hi"]
    assert covered or out["decision"] != "APPROVE", (out["estimate"], out["lo"], out["hi"], out["adjustment_set"])


def _kept_the_specification(args: dict, out: dict) -> None:
    """A stated specification (issue 36) is what the run used: the controls exactly (the recipe's own choice
    beside them), the cluster on the headline's errors, the subgroup's rows."""
    if args.get("controls") is not None:
        assert out["headline_adjustment_set"] == args["controls"]
        assert out["recipe_adjustment_set"] is not None and out["recipe_adjustment_set"] != args["controls"]
    if args.get("cluster"):
        assert out["clustered_by"] == args["cluster"]
    if args.get("where"):
        assert out["subgroup"].startswith(f"subgroup {args['where']}:")


# Seed 0 at the benchmark's size: the one kind whose correctly specified interval misses the truth
# (z = +2.13, a sample in the 5% tail; the recipe's AIPW covers it). Any other miss is a bug.
ORACLE_MISSES_SEED_0 = {"many_covariates"}


def test_every_kind_has_an_oracle() -> None:
    assert set(ORACLES) == set(KINDS)
    assert all(ORACLE_NOTES[k] for k in KINDS)


@pytest.mark.parametrize("kind", list(KINDS))
def test_oracle_interval_on_seed_0(kind: str) -> None:
    truth = make(kind, seed=0).effect
    est, lo, hi = oracle(kind, seed=0)
    assert all(map(math.isfinite, (est, lo, hi)))
    assert lo < est < hi
    z = (est - truth) / ((hi - lo) / (2 * 1.96))
    if kind in ORACLE_MISSES_SEED_0:
        assert not lo <= truth <= hi
        assert abs(z) < 3, f"{kind}: the oracle misses by z = {z:+.2f}, more than sampling noise"
    else:
        assert lo <= truth <= hi, f"{kind}: oracle {est:.4g} [{lo:.4g}, {hi:.4g}] misses {truth}"


def test_messy_oracle_data_is_what_messy_writes() -> None:
    clean, bad = messy_clean(500, 3)
    frame = make("messy_data", seed=3, n=500).frame.drop_duplicates()
    assert len(frame) == len(clean)
    assert np.allclose(np.sort(frame["x3"]), np.sort(clean["x3"]))
    x1 = frame["x1"].str.replace(",", ".").astype(float)
    assert np.allclose(np.sort(x1), np.sort(clean["x1"].round(3)))
    assert (frame["x2"] > 1000).sum() == bad.sum()
