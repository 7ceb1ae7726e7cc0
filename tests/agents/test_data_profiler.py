"""Data profiler: column types and causal role classification on data with a known truth."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmarks.synthetic import job_training, linear_confounding
from tests.helpers import make_state
from whyflow.causal.dataprep.profiling import build_profile, parse_numeric_text
from whyflow.causal.knowledge import Metadata
from whyflow.core.errors import DataError
from whyflow.flows.running.dispatch import run_single_agent


def _profile(frame: pd.DataFrame, tmp_path: Path, treatment: str | None = None, outcome: str | None = None, **kw):
    state = make_state(frame, tmp_path, treatment, outcome, profile=False)
    for key, value in kw.items():
        setattr(state, key, value)
    result = run_single_agent("data_profiler", state, tmp_path)
    return state, result


def test_linear_confounding_roles_and_analysis_copy(tmp_path: Path) -> None:
    frame, truth = linear_confounding(n=1000, seed=1, with_mediator=True)
    rng = np.random.default_rng(1)
    frame.insert(0, "patient_id", rng.permutation(len(frame)) + 10_000)
    frame["site"] = "A"
    frame["visit_date"] = pd.date_range("2020-01-01", periods=len(frame), freq="D").astype(str)
    state, result = _profile(frame, tmp_path)
    prof = state.data_profile
    source = Path(state.dataset_info.local_path)
    digest = hashlib.sha256(source.read_bytes()).hexdigest()

    assert prof.treatment_candidates[0] == truth["treatment"]
    assert prof.outcome_candidates[0] == truth["outcome"]
    assert prof.feature_types["patient_id"] == "id"
    assert prof.feature_types["site"] == "constant"
    assert prof.feature_types["visit_date"] == "datetime"
    assert set(truth["confounders"]) | {"x3"} <= set(prof.potential_confounders)
    for col in ("patient_id", "site", "visit_date", "treated", "outcome"):
        assert col not in prof.potential_confounders
    assert prof.has_time_dimension and prof.time_column == "visit_date"
    assert prof.potential_instruments == []
    assert "patient_id: identifier" in result.reasoning
    # Numeric stats agree with the data; the analysis copy is written and the input left alone.
    assert prof.numeric_stats["x1"]["mean"] == pytest.approx(frame["x1"].mean())
    assert prof.numeric_stats["x1"]["median"] == pytest.approx(frame["x1"].median())
    assert state.dataframe_path == str(tmp_path / "data" / "analysis.parquet")
    assert pd.read_parquet(state.dataframe_path).shape == frame.shape
    assert hashlib.sha256(source.read_bytes()).hexdigest() == digest


def test_job_training_types_candidates_and_missing(tmp_path: Path) -> None:
    frame, truth = job_training(n=1200, seed=2)
    rng = np.random.default_rng(2)
    frame["satisfaction"] = rng.integers(1, 6, size=len(frame))
    frame.loc[rng.choice(len(frame), 37, replace=False), "married"] = np.nan
    state, _ = _profile(frame, tmp_path)
    prof = state.data_profile

    assert prof.treatment_candidates[0] == truth["treatment"]
    assert prof.outcome_candidates[0] == truth["outcome"]
    # "prior_earnings" is a baseline measure, ranked below real outcome candidates.
    assert prof.outcome_candidates.index("prior_earnings") > prof.outcome_candidates.index("earnings")
    assert prof.feature_types["satisfaction"] == "ordinal"
    assert prof.feature_types["region"] == "categorical"
    assert prof.feature_types["married"] == "binary"
    assert sum(prof.categorical_stats["region"].values()) == len(frame)
    assert prof.missing_values["married"] == 37
    assert set(truth["confounders"]) <= set(prof.potential_confounders)


def test_user_choice_comes_first(tmp_path: Path) -> None:
    frame, _ = job_training(n=600, seed=3)
    state, result = _profile(frame, tmp_path, treatment="married", outcome="skills_score")
    prof = state.data_profile
    assert prof.treatment_candidates[0] == "married"
    assert prof.outcome_candidates[0] == "skills_score"
    assert "married" not in prof.potential_confounders
    assert "user's choice" in result.reasoning


def test_unknown_user_column_is_a_clear_error(tmp_path: Path) -> None:
    frame, _ = job_training(n=300, seed=4)
    state = make_state(frame, tmp_path, "trainng", "earnings", profile=False)
    with pytest.raises(DataError, match="did you mean 'training'"):
        run_single_agent("data_profiler", state, tmp_path)


def test_instruments_need_evidence(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=800, seed=5)
    rng = np.random.default_rng(5)
    frame["lottery_win"] = rng.binomial(1, 0.5, size=len(frame))
    frame["z"] = rng.normal(size=len(frame))
    prof = build_profile(frame).profile
    assert prof.potential_instruments == ["lottery_win"]
    assert "lottery_win" not in prof.potential_confounders
    # A metadata role is evidence too; an anonymous column without one never is.
    meta = Metadata.model_validate({"columns": {"z": {"role": "instrument"}}})
    prof = build_profile(frame, metadata=meta).profile
    assert set(prof.potential_instruments) == {"lottery_win", "z"}


def test_numbers_stored_as_text_are_profiled_as_numbers() -> None:
    values = pd.Series(["1,234", " 12 ", "$5", None, "7"] * 50)
    parsed = parse_numeric_text(values)
    assert parsed is not None and parsed.iloc[:5].tolist()[:3] == [1234.0, 12.0, 5.0]
    assert parse_numeric_text(pd.Series(["north", "south", "1"] * 50)) is None
    frame = pd.DataFrame({"income": values, "treated": [0, 1] * 125})
    report = build_profile(frame)
    assert report.profile.feature_types["income"] == "numeric"
    assert report.text_numeric == ["income"]
    assert report.profile.numeric_stats["income"]["max"] == 1234.0


def test_discontinuity_candidates_are_explained() -> None:
    rng = np.random.default_rng(6)
    n = 1500
    exam = rng.uniform(0, 100, size=n).round(1)
    spend = rng.gamma(4, 250, size=n).round(2)
    spend[rng.choice(n, 120, replace=False)] = 1000.0  # heaping at a round value
    frame = pd.DataFrame(
        {
            "exam_score": exam,
            "scholarship": (exam >= 60).astype(int),
            "monthly_spend": spend,
            "noise": rng.normal(size=n),
            "gpa_later": rng.normal(size=n),
        }
    )
    report = build_profile(frame, treatment="scholarship", outcome="gpa_later")
    assert report.profile.discontinuity_candidates == ["exam_score", "monthly_spend"]
    assert any("discontinuity candidate 'exam_score'" in r for r in report.reasons)
    assert any("heap at the round number 1000" in r for r in report.reasons)


def test_dates_are_a_time_axis_whatever_the_column_is_called() -> None:
    """An ISO date column named 'enrolled' once became a 700-level category used as a confounder."""
    rng = np.random.default_rng(0)
    n = 800
    days = pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 700, n), unit="D")
    frame = pd.DataFrame(
        {
            "enrolled": days.strftime("%Y-%m-%d"),
            "seen": days.strftime("%d/%m/%Y %H:%M"),
            "code": [f"A{i % 40}-{i % 7}" for i in range(n)],
            "x": rng.normal(size=n),
            "treated": rng.integers(0, 2, n),
            "outcome": rng.normal(size=n),
        }
    )
    report = build_profile(frame, "treated", "outcome")
    types = report.profile.feature_types
    assert types["enrolled"] == types["seen"] == "datetime" and types["code"] == "categorical"
    assert report.profile.time_column == "enrolled"
    assert "enrolled" not in report.profile.potential_confounders and "seen" not in report.profile.potential_confounders


def test_infinities_are_counted_and_profiled_as_missing(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=300, seed=2)
    frame["x1"] = frame["x1"].astype(float)
    frame.loc[:3, "x1"] = [np.inf, -np.inf, np.inf, np.inf]
    state, result = _profile(frame, tmp_path, "treated", "outcome")
    assert (
        result.outputs["infinite_values"] == {"x1": 4} and "4 infinite values in x1 read as missing" in result.summary
    )
    assert state.data_profile.missing_values["x1"] == 4 and np.isfinite(state.data_profile.numeric_stats["x1"]["max"])
    copy = pd.read_parquet(state.dataframe_path)
    assert copy["x1"].isna().sum() == 4 and copy.attrs["whyflow_infinite"] == {"x1": 4}


def test_decimal_commas_and_thousands_separators_are_told_apart() -> None:
    as_text = {
        "decimal": ["3,5", "4,25", "1,0"],
        "three-decimals": ["0,125", "-1,250", "2,375"],  # a lone 0 before the comma: not thousands
        "thousands": ["1,234", "2,345,678", "12"],
        "european": ["1.234,5", "2.000,25"],
        "american": ["1,234.5", "7"],
    }
    parsed = {k: parse_numeric_text(pd.Series(v, dtype=object)).tolist() for k, v in as_text.items()}
    assert parsed == {
        "decimal": [3.5, 4.25, 1.0],
        "three-decimals": [0.125, -1.25, 2.375],
        "thousands": [1234.0, 2345678.0, 12.0],
        "european": [1234.5, 2000.25],
        "american": [1234.5, 7.0],
    }


def test_day_first_dates_are_parsed_day_first() -> None:
    from whyflow.causal.dataprep.profiling import parse_dates

    european = parse_dates(pd.Series(["04/03/2021", "25/12/2021", None]))
    assert european.tolist()[:2] == [pd.Timestamp("2021-03-04"), pd.Timestamp("2021-12-25")] and european.isna().iloc[2]
    american = parse_dates(pd.Series(["04/03/2021", "12/25/2021"]))
    assert american.tolist() == [pd.Timestamp("2021-04-03"), pd.Timestamp("2021-12-25")]
