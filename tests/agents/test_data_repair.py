"""Data repair: Great Expectations checks and safe repairs, each recorded with counts."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from agents.base.errors import AgentError
from agents.stats.synthetic import job_training, linear_confounding
from flows.dispatch import run_single_agent
from tests.helpers import make_state

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
    frame.loc[rng.choice(np.arange(N_DUP, n), N_OUTLIERS, replace=False), "spend"] = 1e6
    frame["country"] = "US"
    frame = pd.concat([frame, frame.iloc[:N_DUP]], ignore_index=True)
    return frame, truth


def _entries(state, kind: str, **match: Any) -> list[dict[str, Any]]:
    return [e for e in state.data_repairs if e["kind"] == kind and all(e.get(k) == v for k, v in match.items())]


def _one(state, kind: str, **match: Any) -> dict[str, Any]:
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
    run_single_agent("data_profiler", state, tmp_path)
    run_single_agent("data_repair", state, tmp_path)
    n = len(frame)

    # Each problem shows up as a failed expectation with its count ...
    assert _one(state, "expectation", expectation="expect_column_values_to_be_in_type_list", column="prior_earnings")
    dup = _one(state, "expectation", expectation="expect_compound_columns_to_be_unique")
    assert dup["unexpected_count"] == N_DUP
    null_edu = _one(state, "expectation", expectation="expect_column_values_to_not_be_null", column="education_years")
    assert null_edu["unexpected_count"] == N_EDU_MISSING
    outl = _one(state, "expectation", expectation="expect_column_values_to_be_between", column="spend")
    assert outl["unexpected_count"] == N_OUTLIERS
    assert _one(state, "expectation", expectation="expect_column_unique_value_count_to_be_between", column="country")

    # ... and each safe repair as a repair entry with before/after counts.
    text = _one(state, "repair", column="prior_earnings", issue="numbers stored as text")
    assert text["n_before"] == text["n_after"] == n
    dups = _one(state, "repair", issue="exact duplicate rows")
    assert (dups["n_before"], dups["n_after"]) == (n, n - N_DUP)
    edu = _one(state, "repair", column="education_years", issue="missing values")
    assert (edu["n_before"], edu["n_after"]) == (N_EDU_MISSING, 0) and "education_years_missing" in edu["action"]
    age = _one(state, "repair", column="age", issue="missing values")
    assert (age["n_before"], age["n_after"]) == (N_AGE_MISSING, 0) and "indicator" not in age["action"]
    assert _one(state, "repair", column="country", issue="constant column")
    assert not _entries(state, "repair", column="spend")  # outliers are reported, never changed

    repaired = pd.read_parquet(state.dataframe_path)
    assert state.dataframe_path == str(tmp_path / "data" / "repaired.parquet")
    assert len(repaired) == n - N_DUP and "country" not in repaired.columns
    assert repaired["education_years_missing"].sum() == N_EDU_MISSING
    assert repaired["prior_earnings"].dtype.kind == "f"
    original = job_training(n=1500, seed=3)[0]["prior_earnings"]
    assert np.allclose(repaired["prior_earnings"].to_numpy()[: len(original)], original.round(0))
    assert int((repaired["spend"] == 1e6).sum()) == N_OUTLIERS
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
    assert (t["n_before"], t["n_after"]) == (1000, 997)
    assert (y["n_before"], y["n_after"]) == (997, 994)  # row 50 lacked both
    repaired = pd.read_parquet(state.dataframe_path)
    assert len(repaired) == 994 and "treated_missing" not in repaired.columns
    assert set(repaired["treated"].unique()) == {0.0, 1.0}


def test_label_variants_are_unified(tmp_path: Path) -> None:
    frame, _ = job_training(n=800, seed=4)
    frame.loc[[1, 2, 3], "region"] = [" north", "North", "SOUTH "]
    state, _ = run_chain(frame, tmp_path, "training", "earnings")
    fail = _one(state, "expectation", expectation="expect_column_values_to_be_in_set", column="region")
    assert fail["unexpected_count"] == 3
    fix = _one(state, "repair", column="region", issue="label spelling variants")
    assert (fix["n_before"], fix["n_after"]) == (7, 4)
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
