"""A categorical and its own dummies are one representation too many: the design keeps one of them."""

from __future__ import annotations

import numpy as np
import pandas as pd

from whyflow.causal.dataprep.categorical_dummies import categorical_dummies
from whyflow.causal.dataprep.column_roles import classify_columns
from whyflow.causal.discovery.adjustment import prepare


def _study(n: int = 1500, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    city = rng.choice(list("ABCDE"), size=n)
    level = pd.Series({"A": 0.0, "B": 0.5, "C": -0.5, "D": 1.0, "E": -1.0})[city].to_numpy()
    x = rng.normal(size=n)
    t = rng.binomial(1, 1 / (1 + np.exp(-(x + level))))
    f = pd.DataFrame({"x": x, "city": city, "t": t})
    f["y"] = 2.0 * t + x + level + rng.normal(size=n)
    return f


def test_the_dummies_go_and_the_categorical_stays() -> None:
    f = _study()
    f = f.assign(**{f"c_{k}": (f["city"] == k).astype(int) for k in "ABCDE"})
    dummies = [f"c_{k}" for k in "ABCDE"]
    roles = classify_columns(f, "t", "y", ["x", "city", *dummies])
    assert {r.column for r in roles} == set(dummies) and {r.role for r in roles} == {"dummy_of_categorical"}
    assert "equal to (city == 'B')" in next(r.reason for r in roles if r.column == "c_B")
    assert "'city' is kept" in roles[0].reason
    # Both representations make the design singular (the estimators would drop columns); one does not.
    assert prepare(f, "t", "y", ["x", "city", *dummies]).collinear
    assert not prepare(f, "t", "y", ["x", "city"]).collinear


def test_one_dummy_a_grouping_and_a_per_level_figure_are_functions_of_the_categorical() -> None:
    f = _study()
    f["is_a"] = (f["city"] == "A").astype(int)
    f["coastal"] = f["city"].isin(["A", "B"]).astype(int)
    f["city_income"] = f["city"].map({"A": 31.0, "B": 28.5, "C": 40.2, "D": 25.0, "E": 33.3})
    rng = np.random.default_rng(1)
    f["female"] = rng.binomial(1, 0.5, len(f))  # varies within every city: a covariate of its own
    roles = {r.column: r for r in categorical_dummies(f, ["x", "city", "is_a", "coastal", "city_income", "female"])}
    assert set(roles) == {"is_a", "coastal", "city_income"}
    assert "one value within each of the 5 levels of 'city'" in roles["city_income"].reason


def test_a_dummy_known_to_precede_the_treatment_keeps_itself_and_the_categorical_goes() -> None:
    f = _study()
    f["is_a"] = (f["city"] == "A").astype(int)
    roles = categorical_dummies(f, ["x", "city"], kept=["is_a"])
    assert [(r.column, r.role) for r in roles] == [("city", "categorical_repeated")]


def test_a_numeric_code_beside_all_its_dummies_goes_and_the_dummies_stay() -> None:
    f = _study()
    f["city_no"] = f["city"].map({k: i + 1 for i, k in enumerate("ABCDE")})
    f = f.drop(columns="city").assign(**{f"d{k}": (f["city_no"] == k).astype(int) for k in range(1, 6)})
    roles = categorical_dummies(f, ["x", "city_no", "d1", "d2", "d3", "d4", "d5"])
    assert [(r.column, r.role) for r in roles] == [("city_no", "categorical_repeated")]


def test_a_numeric_quantity_with_one_indicator_of_a_value_keeps_both() -> None:
    """Years of schooling and a college dummy (schooling == 16): the dummy is not in the span of the linear term."""
    rng = np.random.default_rng(2)
    educ = rng.choice([10, 12, 14, 16, 18], size=1000)
    f = pd.DataFrame({"educ": educ, "college": (educ == 16).astype(int), "t": rng.binomial(1, 0.5, 1000)})
    f["y"] = f["t"] + 0.1 * educ + 0.5 * f["college"] + rng.normal(size=1000)
    assert classify_columns(f, "t", "y", ["educ", "college"]) == []


def test_a_categorical_known_to_precede_the_treatment_still_loses_its_dummies() -> None:
    f = _study()
    f = f.assign(**{f"c_{k}": (f["city"] == k).astype(int) for k in "ABC"})
    roles = classify_columns(f, "t", "y", ["x", "city", "c_A", "c_B", "c_C"], protected={"city"})
    assert {r.column for r in roles} == {"c_A", "c_B", "c_C"}
