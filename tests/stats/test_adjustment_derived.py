"""Which columns are the treatment under another name (``derived_from_treatment``), on large and odd inputs."""

from __future__ import annotations

import numpy as np
import pandas as pd

from whyflow.causal.discovery.adjustment import choose_adjustment, derived_from_treatment


def _frame(n: int = 4000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    t = rng.integers(0, 2, n)
    return pd.DataFrame(
        {
            "t": t,
            "label": np.where(t == 1, "yes", "no"),  # constant within each arm
            "scaled": 3.0 * t + 1e-9 * rng.normal(size=n),  # not constant, but |r| > 0.999
            "x": rng.normal(size=n),  # a real covariate
            "noisy_copy": t + rng.normal(size=n),  # related, not determined
            "const": 1.0,
        }
    )


def test_constant_within_arms_and_near_copies_are_found_real_covariates_kept() -> None:
    frame = _frame()
    frame.loc[::7, "label"] = None  # missing values are dropped pairwise, not read as a level
    found = derived_from_treatment(frame, "t", ["label", "scaled", "x", "noisy_copy", "const"])
    assert found == ["label", "scaled"]


def test_one_treatment_level_per_value_counts_levels_over_the_whole_column() -> None:
    # t has 3 levels; where t == 2 the column is missing. Each value of the column sits in one
    # level (a and b in level 0, c in level 1) and it has no more values than t has levels.
    frame = pd.DataFrame({"t": [0, 0, 0, 0, 1, 1, 2, 2] * 50, "code": ["a", "b", "a", "b", "c", "c", None, None] * 50})
    assert derived_from_treatment(frame, "t", ["code"]) == ["code"]
    frame.loc[frame.index[:2], "code"] = "c"  # now c appears in two levels
    assert derived_from_treatment(frame, "t", ["code"]) == []


def test_choose_adjustment_names_constant_and_derived_columns() -> None:
    frame = _frame()
    frame["outcome"] = frame["x"] + frame["t"]
    adj = choose_adjustment(frame, "t", "outcome", ["label", "scaled", "x", "noisy_copy", "const"])
    assert adj.covariates == ["x", "noisy_copy"]
    assert adj.excluded["const"] == "constant column"
    assert adj.excluded["label"].startswith(("deterministic function of the treatment", "derived from the treatment"))
