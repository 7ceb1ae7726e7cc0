"""Columns that repeat the treatment are read from their values: a text label of the arm, 1 - treatment;
a numeric column that fixes the treatment by a threshold is a confounder and stays."""

from __future__ import annotations

import numpy as np
import pandas as pd

from whyflow.causal.dataprep.column_roles import classify_columns
from whyflow.causal.dataprep.treatment_roles import treatment_roles
from whyflow.causal.discovery.adjustment import prepare


def _trial(n: int = 900, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    t = rng.binomial(1, 1 / (1 + np.exp(-x)))
    y = 2.0 * t + x + rng.normal(size=n)
    return pd.DataFrame({"x": x, "t": t, "y": y})


def test_a_text_label_of_the_arm_is_an_alias_and_says_which_levels_are_treated() -> None:
    f = _trial()
    rng = np.random.default_rng(1)
    f["arm"] = np.where(f["t"] == 1, rng.choice(["voucher_A", "voucher_B"], len(f)), "control")
    roles = {r.column: r for r in classify_columns(f, "t", "y", ["x", "arm"])}
    assert list(roles) == ["arm"] and roles["arm"].role == "treatment_alias" and roles["arm"].leave_out
    assert "t = 0: 'control'" in roles["arm"].reason and "'voucher_A', 'voucher_B'" in roles["arm"].reason
    # Why it must go: with it the design is singular (its dummies add up to the treatment).
    assert prepare(f, "t", "y", ["x", "arm"]).collinear
    assert not prepare(f, "t", "y", ["x"]).collinear


def test_one_minus_the_treatment_is_a_copy() -> None:
    f = _trial()
    f["untreated"] = 1 - f["t"]
    roles = treatment_roles(f, "t", ["x", "untreated"])
    assert [(r.column, r.role) for r in roles] == [("untreated", "treatment_copy")]
    assert "correlation -1.000" in roles[0].reason


def test_a_categorical_with_both_arms_in_its_levels_is_kept() -> None:
    f = _trial()
    rng = np.random.default_rng(2)
    f["region"] = rng.choice(["north", "south", "east"], len(f))
    # Treated only in the north and the south, but both arms occur there: not a label of the arm.
    f.loc[f["region"] == "east", "t"] = 0
    assert classify_columns(f, "t", "y", ["x", "region"]) == []


def test_a_cluster_of_a_cluster_randomised_trial_fixes_the_treatment() -> None:
    rng = np.random.default_rng(3)
    school = rng.integers(0, 12, 1200)
    arm = rng.permutation(np.arange(12) % 2)
    f = pd.DataFrame({"school": [f"s{k:02d}" for k in school], "x": rng.normal(size=1200), "t": arm[school]})
    f["y"] = 0.5 * f["t"] + f["x"] + rng.normal(size=1200)
    roles = classify_columns(f, "t", "y", ["school", "x"])
    assert [(r.column, r.role) for r in roles] == [("school", "treatment_alias")]


def test_an_eligibility_score_that_fixes_the_treatment_by_a_threshold_is_a_confounder() -> None:
    """Integer groups 1..5 with the treatment exactly for groups 3 and above: a linear covariate, not an alias."""
    rng = np.random.default_rng(4)
    group = rng.integers(1, 6, 1000)
    f = pd.DataFrame({"age_group": group, "t": (group >= 3).astype(int)})
    f["y"] = 1.0 * f["t"] + 0.5 * group + rng.normal(size=1000)
    assert classify_columns(f, "t", "y", ["age_group"]) == []


def test_too_few_rows_per_level_cannot_show_an_alias() -> None:
    """Twenty labels of three rows each: one treatment value per level happens by chance there."""
    rng = np.random.default_rng(5)
    label = np.repeat([f"g{k}" for k in range(20)], 3)
    t = np.repeat(rng.integers(0, 2, 20), 3)
    f = pd.DataFrame({"label": label, "t": t, "y": t + rng.normal(size=60)})
    assert treatment_roles(f, "t", ["label"]) == []
