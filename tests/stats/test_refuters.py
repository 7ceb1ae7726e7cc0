"""The least-squares refuters against DoWhy itself, on the same data and the same seed.

``run_refuters`` re-implements DoWhy's placebo (permute), random-common-cause, data-subset and
added-unobserved-common-cause refuters on the backdoor linear-regression estimate. It draws the
same random numbers in the same order, so on the same data it gives DoWhy's numbers up to
floating-point error (far inside Monte-Carlo error), and the same verdicts.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest

from whyflow.causal.review.refuters import _significance, run_refuters

SIMS = 10


def _data(n: int = 400, seed: int = 0, binary: bool = True) -> pd.DataFrame:
    """Confounded data with a categorical covariate, a rare level and a collinear copy."""
    rng = np.random.default_rng(seed)
    x1, x2 = rng.normal(size=(2, n))
    region = rng.choice(["north", "south", "east"], size=n)
    rare = np.where(np.arange(n) == 0, "rare", "common")  # one row: a fifth of the subsets lack the level
    drive = 0.8 * x1 - 0.5 * x2 + 0.4 * (region == "south")
    t = rng.binomial(1, 1 / (1 + np.exp(-drive))) if binary else drive + rng.normal(size=n)
    y = 2.0 * t + 1.5 * x1 + x2 - 0.7 * (region == "east") + rng.normal(size=n)
    return pd.DataFrame({"t": t, "y": y, "x1": x1, "x2": x2, "x2_copy": 3.0 * x2, "region": region, "rare": rare})


ADJ = ["x1", "x2", "x2_copy", "region", "rare"]


def _dowhy(
    data: pd.DataFrame, binary: bool, seed: int, adjustment: list[str] = ADJ, sims: int = SIMS
) -> dict[str, Any]:
    """The refuters as whyflow called DoWhy before: CausalModel.refute_estimate, one RandomState each."""
    from dowhy import CausalModel

    model = CausalModel(data=data, treatment="t", outcome="y", common_causes=adjustment)
    estimand = model.identify_effect(proceed_when_unidentifiable=True)
    estimate = model.estimate_effect(estimand, method_name="backdoor.linear_regression")
    out: dict[str, Any] = {"estimate": estimate.value}
    for name, kwargs in (
        ("placebo_treatment_refuter", {"placebo_type": "permute"}),
        ("random_common_cause", {}),
        ("data_subset_refuter", {"subset_fraction": 0.8}),
    ):
        r = model.refute_estimate(
            estimand,
            estimate,
            method_name=name,
            num_simulations=sims,
            random_state=np.random.RandomState(seed),
            **kwargs,
        )
        out[name] = {"new_effect": float(np.mean(r.new_effect)), "p_value": float(r.refutation_result["p_value"])}
    kappa_t = [0.02, 0.05, 0.1] if binary else [p * float(data["t"].std()) for p in (0.02, 0.05, 0.1)]
    saved = np.random.get_state()
    np.random.seed(seed)  # DoWhy draws the unobserved confounder from numpy's global generator
    try:
        r = model.refute_estimate(
            estimand,
            estimate,
            method_name="add_unobserved_common_cause",
            confounders_effect_on_treatment="binary_flip" if binary else "linear",
            confounders_effect_on_outcome="linear",
            effect_strength_on_treatment=kappa_t,
            effect_strength_on_outcome=[s * float(data["y"].std()) for s in (0.05, 0.1, 0.25)],
            plotmethod=None,
        )
    finally:
        np.random.set_state(saved)
    out["grid"] = np.asarray(r.new_effect_array, dtype=float)
    return out


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "continuous"])
def test_refuters_reproduce_dowhy(binary: bool) -> None:
    import dowhy  # noqa: F401 - imported first: statsmodels' import-time "always" filters would win otherwise

    data = _data(binary=binary)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # DoWhy's rank-deficiency and pandas deprecation warnings
        ref = _dowhy(data, binary, seed=3)
    ours = run_refuters(data, "t", "y", ADJ, simulations=SIMS, seed=3)
    assert "skipped" not in ours and ours["n_used"] == len(data) and ours["simulations"] == SIMS
    assert ours["estimate"] == pytest.approx(ref["estimate"], rel=1e-9)
    for name in ("placebo_treatment_refuter", "random_common_cause", "data_subset_refuter"):
        mine, theirs = ours[name], ref[name]
        # Same draws: agreement to rounding, far inside Monte-Carlo error (an SE of the mean effect).
        assert mine["new_effect"] == pytest.approx(theirs["new_effect"], rel=1e-7, abs=1e-9), name
        assert mine["p_value"] == pytest.approx(theirs["p_value"], rel=1e-6, abs=1e-9), name
        assert (mine["p_value"] >= 0.05) == (theirs["p_value"] >= 0.05), name
    grid = np.asarray(ours["add_unobserved_common_cause"]["new_effects"])
    # The first cell is DoWhy's; later cells differ on purpose: DoWhy stacks each cell's confounder
    # on the previous cells' changes, here each cell is one confounder on the original data.
    assert grid[0, 0] == pytest.approx(ref["grid"][0, 0], rel=1e-8)
    assert ours["add_unobserved_common_cause"]["effect_on_treatment"] == ("binary_flip" if binary else "linear")
    assert abs(grid[-1, -1] - ours["estimate"]) < abs(ref["grid"][-1, -1] - ours["estimate"])  # no stacking


def test_each_grid_cell_is_one_confounder_on_the_original_data() -> None:
    """Replaying the draws: cell (i, j) is the OLS effect after only that cell's confounder."""
    import statsmodels.api as sm
    from scipy.stats import norm

    data = _data(binary=True)
    kt, ky = (0.02, 0.1), (0.05, 0.25)
    out = run_refuters(data, "t", "y", ADJ, simulations=5, seed=4, flip_probabilities=kt, outcome_strengths_sd=ky)
    grid = np.asarray(out["add_unobserved_common_cause"]["new_effects"])
    rs = np.random.RandomState(4)
    rs.random_sample((len(kt), len(ky)))
    x = pd.get_dummies(data[ADJ], drop_first=True, dtype=float)
    for i, p in enumerate(kt):
        for j, s in enumerate(ky):
            u = rs.standard_normal(len(data))
            t = data["t"].to_numpy(float).copy()
            flip = u >= norm.ppf(1 - p)
            t[flip] = 1 - t[flip]
            y = data["y"].to_numpy(float) - s * data["y"].std() * u
            fit = sm.OLS(y, sm.add_constant(np.column_stack([t, x.to_numpy()]))).fit()
            assert grid[i, j] == pytest.approx(fit.params[1], rel=1e-7), (i, j)


def test_a_failing_verdict_is_dowhys_too() -> None:
    """30 rows, 5 simulations: this seed's placebo distribution misses zero (p < 0.05) in DoWhy and here."""
    import dowhy  # noqa: F401 - see above

    data = _data(n=30, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = _dowhy(data, True, seed=3, adjustment=["x1", "x2"], sims=5)
    ours = run_refuters(data, "t", "y", ["x1", "x2"], simulations=5, seed=3)
    for name in ("placebo_treatment_refuter", "random_common_cause", "data_subset_refuter"):
        assert ours[name]["p_value"] == pytest.approx(ref[name]["p_value"], rel=1e-6), name
    assert ours["placebo_treatment_refuter"]["p_value"] < 0.05 <= ours["random_common_cause"]["p_value"]


@pytest.mark.parametrize("n_sims", [20, 150])
def test_p_value_rule_is_dowhys(n_sims: int) -> None:
    """Normal test under 100 simulations, two-sided percentile p-value from 100 on."""
    from dowhy.causal_refuter import test_significance

    class _Estimate:
        value = 0.3

    sims = np.random.default_rng(n_sims).normal(0.1, 0.2, size=n_sims)
    sims[:3] = 0.3  # ties count half in the percentile test
    assert _significance(0.3, sims) == pytest.approx(test_significance(_Estimate(), sims)["p_value"], rel=1e-12)


def test_results_are_deterministic_for_a_seed() -> None:
    data = _data(n=300, seed=2)
    first = run_refuters(data, "t", "y", ADJ, simulations=10, seed=7)
    assert run_refuters(data, "t", "y", ADJ, simulations=10, seed=7) == first
    other = run_refuters(data, "t", "y", ADJ, simulations=10, seed=8)
    assert other["placebo_treatment_refuter"] != first["placebo_treatment_refuter"]
    assert other["estimate"] == first["estimate"]


def test_a_subset_too_small_to_separate_the_treatment_is_a_recorded_skip() -> None:
    data = _data(n=20, seed=4)
    out = run_refuters(data, "t", "y", ["x1"], simulations=3, subset_fraction=0.05)
    assert out["skipped"]["data_subset_refuter"].startswith("ValueError: the treatment is collinear")
    assert {"placebo_treatment_refuter", "random_common_cause", "add_unobserved_common_cause"} <= set(out)


def test_a_treatment_the_covariates_explain_is_refused() -> None:
    data = _data(n=200, seed=5)
    data["t_copy"] = data["t"]
    with pytest.raises(ValueError, match="collinear"):
        run_refuters(data, "t", "y", ["x1", "t_copy"], simulations=3)


def test_wide_data_uses_blocks_and_gives_the_same_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Simulations processed in blocks (bounded memory) give exactly the numbers of one block."""
    from whyflow.causal.review import refuters

    data = _data(n=500, seed=6)
    whole = run_refuters(data, "t", "y", ADJ, simulations=12, seed=1)
    monkeypatch.setattr(refuters, "_BLOCK", 1)  # one simulation per block
    blocked = run_refuters(data, "t", "y", ADJ, simulations=12, seed=1)
    for name in ("placebo_treatment_refuter", "random_common_cause", "data_subset_refuter"):
        assert blocked[name]["new_effect"] == pytest.approx(whole[name]["new_effect"], rel=1e-10)
        assert blocked[name]["p_value"] == pytest.approx(whole[name]["p_value"], rel=1e-8)
