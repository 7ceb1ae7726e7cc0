"""Data repair: Great Expectations checks and safe repairs, each recorded with counts."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from benchmarks.synthetic import job_training, linear_confounding
from tests.helpers import make_state
from whyflow.causal.diagnostics import DataRepairEntry
from whyflow.core.errors import AgentError
from whyflow.flows.running.dispatch import run_single_agent

N_DUP = 40
N_AGE_MISSING = 20
N_EDU_MISSING = 150
N_OUTLIERS = 15


def messy_copy(n: int = 1500, seed: int = 3) -> tuple[pd.DataFrame, dict[str, Any]]:
    """job_training with numbers as text, missing values, an outlier column, a constant and duplicates.

    The missing values and outliers sit in rows after the first ``N_DUP``, so the duplicated
    rows (copies of the first ``N_DUP``) do not change the planted counts.
    """
    frame, truth = job_training(n=n, seed=seed)
    rng = np.random.default_rng(seed)
    frame["prior_earnings"] = [f"{v:,.0f}" for v in frame["prior_earnings"]]
    frame.loc[rng.choice(np.arange(N_DUP, n), N_EDU_MISSING, replace=False), "education_years"] = np.nan
    frame.loc[rng.choice(np.arange(N_DUP, n), N_AGE_MISSING, replace=False), "age"] = np.nan
    frame["spend"] = rng.normal(100, 10, n).round(2)
    frame.loc[rng.choice(np.arange(N_DUP, n), N_OUTLIERS, replace=False), "spend"] = 250.0  # far out, not x100
    frame["country"] = "US"
    frame = pd.concat([frame, frame.iloc[:N_DUP]], ignore_index=True)
    return frame, truth


def _entries(state, kind: str, **match: Any) -> list[DataRepairEntry]:
    return [e for e in state.data_repairs if e.kind == kind and all(getattr(e, k, None) == v for k, v in match.items())]


def _one(state, kind: str, **match: Any) -> DataRepairEntry:
    found = _entries(state, kind, **match)
    assert len(found) == 1, (kind, match, state.data_repairs)
    return found[0]


def run_chain(frame: pd.DataFrame, job: Path, treatment: str | None = None, outcome: str | None = None):
    state = make_state(frame, job, treatment, outcome, profile=False)
    run_single_agent("data_profiler", state, job)
    result = run_single_agent("data_repair", state, job)
    return state, result


def test_messy_copy_is_checked_and_repaired(tmp_path: Path) -> None:
    frame, _ = messy_copy()
    state = make_state(frame, tmp_path, profile=False)
    source = Path(state.dataset_info.local_path)
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    run_single_agent("data_profiler", state, tmp_path, params={"drop_duplicates": False})  # data repair drops them
    run_single_agent("data_repair", state, tmp_path)
    n = len(frame)

    # Each problem shows up as a failed expectation with its count ...
    assert _one(state, "expectation", expectation="expect_column_values_to_be_in_type_list", column="prior_earnings")
    dup = _one(state, "expectation", expectation="expect_compound_columns_to_be_unique")
    assert dup.unexpected_count == N_DUP
    null_edu = _one(state, "expectation", expectation="expect_column_values_to_not_be_null", column="education_years")
    assert null_edu.unexpected_count == N_EDU_MISSING
    outl = _one(state, "expectation", expectation="expect_column_values_to_be_between", column="spend")
    assert outl.unexpected_count == N_OUTLIERS and outl.repaired is False and "not changed" in outl.kept
    assert not _entries(state, "unrepaired", column="spend")  # kept outliers are not an open data error
    assert _one(state, "expectation", expectation="expect_column_unique_value_count_to_be_between", column="country")

    # ... and each safe repair as a repair entry with before/after counts.
    text = _one(state, "repair", column="prior_earnings", issue="numbers stored as text")
    assert text.n_before == text.n_after == n
    dups = _one(state, "repair", issue="exact duplicate rows")
    assert (dups.n_before, dups.n_after) == (n, n - N_DUP)
    edu = _one(state, "repair", column="education_years", issue="missing values")
    assert (edu.n_before, edu.n_after) == (N_EDU_MISSING, 0) and "education_years_missing" in edu.action
    age = _one(state, "repair", column="age", issue="missing values")
    assert (age.n_before, age.n_after) == (N_AGE_MISSING, 0) and "indicator" not in age.action
    assert _one(state, "repair", column="country", issue="constant column")
    assert not _entries(state, "repair", column="spend")  # plain outliers are reported, never changed

    repaired = pd.read_parquet(state.dataframe_path)
    assert state.dataframe_path == str(tmp_path / "data" / "repaired.parquet")
    assert len(repaired) == n - N_DUP and "country" not in repaired.columns
    assert repaired["education_years_missing"].sum() == N_EDU_MISSING
    assert repaired["prior_earnings"].dtype.kind == "f"
    original = job_training(n=1500, seed=3)[0]["prior_earnings"]
    assert np.allclose(repaired["prior_earnings"].to_numpy()[: len(original)], original.round(0))
    assert int((repaired["spend"] == 250.0).sum()) == N_OUTLIERS
    # The profile is rebuilt from the repaired data; the user's file is untouched.
    prof = state.data_profile
    assert sum(prof.missing_values.values()) == 0 and prof.n_samples == len(repaired)
    assert prof.feature_types["education_years_missing"] == "binary"
    assert "education_years_missing" not in prof.treatment_candidates
    assert hashlib.sha256(source.read_bytes()).hexdigest() == digest


def test_missing_treatment_and_outcome_are_dropped_not_imputed(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=1000, seed=2)
    frame.loc[[3, 50, 70], "treated"] = np.nan
    frame.loc[[5, 50, 99, 120], "outcome"] = np.nan
    state, _ = run_chain(frame, tmp_path, "treated", "outcome")
    t = _one(state, "repair", column="treated", issue="missing treatment")
    y = _one(state, "repair", column="outcome", issue="missing outcome")
    assert (t.n_before, t.n_after) == (1000, 997)
    assert (y.n_before, y.n_after) == (997, 994)  # row 50 lacked both
    repaired = pd.read_parquet(state.dataframe_path)
    assert len(repaired) == 994 and "treated_missing" not in repaired.columns
    assert set(repaired["treated"].unique()) == {0.0, 1.0}


def test_a_design_column_with_gaps_loses_its_rows_and_is_never_filled_in(tmp_path: Path) -> None:
    from whyflow.causal.state import StudyDesign

    rng = np.random.default_rng(4)
    n = 600
    score = rng.uniform(0.2, 0.8, n)
    frame = pd.DataFrame({"score": score, "x": rng.normal(size=n)})
    frame["treated"] = (score >= 0.5).astype(int)
    frame["outcome"] = 2 * frame["treated"] + score + rng.normal(size=n)
    frame.loc[[7, 70, 300], "score"] = np.nan  # a median fill would put them next to the cutoff
    frame.loc[[9, 90], "x"] = np.nan  # an ordinary covariate is still imputed
    state = make_state(frame, tmp_path, "treated", "outcome", profile=False)
    state.design = StudyDesign(running_variable="score", cutoff=0.5)
    run_single_agent("data_profiler", state, tmp_path)
    run_single_agent("data_repair", state, tmp_path)
    gap = _one(state, "repair", column="score", issue="missing running variable")
    assert (gap.n_before, gap.n_after) == (600, 597)
    repaired = pd.read_parquet(state.dataframe_path)
    assert len(repaired) == 597 and repaired["score"].notna().all() and "score_missing" not in repaired.columns
    assert not _entries(state, "repair", column="score", issue="missing values")
    assert _entries(state, "repair", column="x")  # the covariate's gaps were filled as before


def test_label_variants_are_unified(tmp_path: Path) -> None:
    frame, _ = job_training(n=800, seed=4)
    frame.loc[[1, 2, 3], "region"] = [" north", "North", "SOUTH "]
    state, _ = run_chain(frame, tmp_path, "training", "earnings")
    fail = _one(state, "expectation", expectation="expect_column_values_to_be_in_set", column="region")
    assert fail.unexpected_count == 3
    fix = _one(state, "repair", column="region", issue="label spelling variants")
    assert (fix.n_before, fix.n_after) == (7, 4)
    assert set(pd.read_parquet(state.dataframe_path)["region"]) == {"north", "south", "east", "west"}


def test_clean_data_needs_no_repair(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=1500, seed=6)
    state, result = run_chain(frame, tmp_path, "treated", "outcome")
    assert state.data_repairs == []
    assert pd.read_parquet(state.dataframe_path).equals(frame)
    assert "0 failed expectations, 0 repairs" in result.summary


def test_constant_treatment_is_an_error(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=300, seed=7)
    frame["treated"] = 1
    state = make_state(frame, tmp_path, "treated", "outcome", profile=False)
    run_single_agent("data_profiler", state, tmp_path)
    with pytest.raises(AgentError, match="treatment 'treated' takes a single value"):
        run_single_agent("data_repair", state, tmp_path)


def test_a_data_scientists_repairs_are_made_recorded_and_checked_again(tmp_path: Path) -> None:
    """Issue 9's messy data: decimal commas, x100 entries, infinities, dates, duplicates, a constant."""
    frame, _ = linear_confounding(600, effect=3.0, seed=5)
    rng = np.random.default_rng(5)
    x1 = frame["x1"].to_numpy() + 10.0  # positive, like a weight in kg
    frame["x1"] = [f"{v:.2f}".replace(".", ",") for v in x1]  # decimal commas (quoted in the CSV)
    frame["x2"] = frame["x2"] + 50.0
    wrong = rng.choice(np.arange(50, 600), 8, replace=False)
    frame.loc[wrong, "x2"] = frame.loc[wrong, "x2"] * 100  # entered in the wrong unit
    inf_rows = rng.choice(np.arange(50, 600), 5, replace=False)
    frame["x3"] = frame["x3"].astype(float)
    frame.loc[inf_rows, "x3"] = np.inf
    frame["visit"] = pd.date_range("2021-01-01", periods=600, freq="D").strftime("%Y-%m-%d")
    frame["site"] = "A"
    frame = pd.concat([frame, frame.iloc[:30]], ignore_index=True)
    state, result = run_chain(frame, tmp_path, "treated", "outcome")

    comma = _one(state, "repair", column="x1", issue="numbers stored as text")
    assert "decimal commas" in comma.action
    units = _one(state, "repair", column="x2", issue="recording errors")
    assert units.n_before == 8 and "x100" in units.action
    assert _one(state, "repair", column="x3", issue="infinite values").n_before == 5
    assert _one(state, "repair", column="visit", issue="dates stored as text")
    assert _one(state, "repair", issue="exact duplicate rows").n_before - 30 == 600
    assert _one(state, "repair", column="site", issue="constant column")

    repaired = pd.read_parquet(state.dataframe_path)
    assert len(repaired) == 600 and "site" not in repaired.columns
    assert np.allclose(repaired["x1"], np.round(x1, 2))  # 12,34 -> 12.34, not 1234
    assert repaired["x2"].max() < 100 and np.isfinite(repaired["x3"]).all()
    assert repaired["visit"].dtype.kind == "M"
    prof = state.data_profile
    assert prof.feature_types["visit"] == "datetime" and "visit" not in prof.potential_confounders
    # Every fixed expectation is marked repaired; the console summary names the repairs.
    fixed = _one(state, "expectation", expectation="expect_column_values_to_be_in_type_list", column="x1")
    assert fixed.repaired is True
    assert "x2: recording errors" in result.summary and not _entries(state, "unrepaired", column="x2")


def test_failed_expectations_left_unrepaired_are_listed_per_column(tmp_path: Path) -> None:
    frame, _ = linear_confounding(400, effect=1.0, seed=2)
    frame["x1"] = frame["x1"].astype(float)
    frame.loc[::10, "x1"] = np.nan  # 10% missing, left missing when imputation is off
    state = make_state(frame, tmp_path, "treated", "outcome", profile=False)
    run_single_agent("data_profiler", state, tmp_path)
    run_single_agent("data_repair", state, tmp_path, params={"impute": False})
    left = _one(state, "unrepaired", column="x1")
    assert left.expectations == ["expect_column_values_to_not_be_null"] and "40 of 400" in left.detail
    assert _one(state, "expectation", column="x1", expectation="expect_column_values_to_not_be_null").repaired is False


def test_age_bounds_apply_to_ages_in_years_only() -> None:
    """A standardised age (negative lower quartile) gets Tukey's fences, not [0, 120]."""
    from whyflow.causal.dataprep.expectations import range_bounds

    z = {"p25": -0.67, "p75": 0.67}
    lo, hi = range_bounds("age_z", z) or (0.0, 0.0)
    assert lo == pytest.approx(-0.67 - 3 * 1.34) and hi == pytest.approx(0.67 + 3 * 1.34)
    years = {"p25": 30.0, "p75": 60.0}
    assert range_bounds("age", years) == (0.0, 120.0)  # fences [-60, 150] cut to plausible ages


def test_validation_leaves_no_context_holding_the_data_behind() -> None:
    """GE keeps its last context as the project, and the context the batch's metrics (at 1M rows
    113 MB for the rest of the run): run_expectations lets it go once the failures are read."""
    import great_expectations.expectations as E
    from great_expectations.data_context.data_context.context_factory import project_manager
    from great_expectations.exceptions import DataContextRequiredError

    from whyflow.causal.dataprep.expectations import run_expectations

    frame = pd.DataFrame({"a": [1.0, 2.0, None, 4.0], "b": [0, 1, 0, 1]})
    checks = [E.ExpectColumnValuesToNotBeNull(column="a"), E.ExpectColumnValuesToNotBeNull(column="b")]
    assert [f["column"] for f in run_expectations(frame, checks)] == ["a"]
    with pytest.raises(DataContextRequiredError):
        project_manager.get_current_project()
