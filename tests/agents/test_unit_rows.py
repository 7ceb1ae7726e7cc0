"""Unit-level data written on several rows a unit: one row per unit is analysed, the row details left out."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.truth_kinds import make
from tests.helpers import make_state
from whyflow.causal.dataprep.unit_rows import one_row_per_unit, repeated_unit_rows
from whyflow.causal.state import StudyDesign
from whyflow.flows.running.dispatch import run_single_agent


def _repair(frame: pd.DataFrame, job: Path, treatment: str, outcome: str, design: StudyDesign | None = None):
    state = make_state(frame, job, treatment, outcome, profile=False)
    if design is not None:
        state.design = design
    run_single_agent("data_profiler", state, job)
    run_single_agent("data_repair", state, job)
    repairs = {(e.column, e.issue): e for e in state.data_repairs if e.kind == "repair"}
    return pd.read_parquet(state.dataframe_path), repairs


def test_countries_on_one_row_per_donor_become_one_row_per_country(tmp_path: Path) -> None:
    case = make("unit_rows_repeated", seed=3, n=480)
    source = case.frame.copy()
    repaired, repairs = _repair(case.frame, tmp_path, "partnership", "aid_log")
    assert len(repaired) == 60 and repaired["country_code"].is_unique
    assert {"donor_type", "donor_amount"}.isdisjoint(repaired.columns)
    found = repairs[("country_code", "one unit on several rows")]
    assert (found.n_before, found.n_after) == (480, 60)
    assert "60 values of 'country_code' (8 rows each)" in found.detail
    for col in ("donor_type", "donor_amount"):
        assert "not of the country_code" in repairs[(col, "differs within a unit")].action
    # each country keeps its own values, and the user's file is untouched
    first = source.drop_duplicates("country_code").set_index("country_code")
    kept = repaired.set_index("country_code")
    assert np.allclose(kept["aid_log"], first.loc[kept.index, "aid_log"])
    pd.testing.assert_frame_equal(case.frame, source)


def test_a_stated_control_that_differs_within_a_unit_is_averaged_not_dropped(tmp_path: Path) -> None:
    frame = make("unit_rows_repeated", seed=1, n=400).frame
    frame["deaths_log"] = frame["gdp_log"] + np.random.default_rng(1).normal(scale=0.1, size=len(frame))
    frame["population_log"] = frame["gdp_log"] * 1.5  # more of the country's values, the same on its rows
    frame["landlocked"] = frame["country_code"] % 2
    design = StudyDesign(controls=["gdp_log", "deaths_log"])
    repaired, repairs = _repair(frame, tmp_path, "partnership", "aid_log", design)
    assert len(repaired) == 50
    assert "averaged" in repairs[("deaths_log", "differs within a unit")].action
    means = frame.groupby("country_code")["deaths_log"].mean()
    assert np.allclose(repaired.set_index("country_code")["deaths_log"], means.loc[repaired["country_code"]])


def test_a_stated_panel_or_cluster_keeps_every_row(tmp_path: Path) -> None:
    frame = make("unit_rows_repeated", seed=2, n=400).frame
    panel, _ = _repair(frame, tmp_path / "p", "partnership", "aid_log", StudyDesign(unit_column="country_code"))
    assert len(panel) == 400
    cluster, _ = _repair(frame, tmp_path / "c", "partnership", "aid_log", StudyDesign(cluster="country_code"))
    assert len(cluster) == 400


def test_rows_whose_outcome_differs_within_the_unit_are_not_collapsed() -> None:
    """A cluster trial (pupils of schools), a panel over years and a file with one row per unit are left alone."""
    for kind, t, y in (("clustered_trial", "treated", "outcome"), ("did_panel", "treated", "outcome")):
        assert repeated_unit_rows(make(kind, seed=0).frame, t, y) is None, kind
    frame = make("unit_rows_repeated", seed=0, n=400).frame.drop_duplicates("country_code")
    assert repeated_unit_rows(frame, "partnership", "aid_log") is None


def test_a_treatment_constant_by_chance_within_few_groups_is_no_finding() -> None:
    """Four regions whose rows happen to share a binary outcome value: too few units to read as repeated rows."""
    rng = np.random.default_rng(0)
    region = np.repeat(np.arange(4), 10)
    frame = pd.DataFrame({"region": region, "treated": region % 2, "outcome": region // 2, "x": rng.normal(size=40)})
    frame["size"] = region * 3
    assert repeated_unit_rows(frame, "treated", "outcome") is None


def test_the_finest_unit_wins_and_a_name_beside_its_code_is_kept() -> None:
    frame = make("unit_rows_repeated", seed=0, n=400).frame
    frame["country"] = "c" + frame["country_code"].astype(str)
    frame["region"] = frame["country_code"] % 3  # coarser: the outcome differs within a region
    found = repeated_unit_rows(frame, "partnership", "aid_log")
    assert found is not None and found.unit == "country_code" and found.n_units == 50
    out = one_row_per_unit(frame, found)
    assert {"country", "region"} <= set(out.columns) and len(out) == 50


def test_people_in_households_of_different_sizes_are_observations_not_copies() -> None:
    """An outcome shared by a household (an infection reaches everyone) is no repeated unit: keeping one row per
    household would weight a household of six like one person."""
    rng = np.random.default_rng(5)
    size = rng.choice([1, 2, 2, 3, 6], size=150)
    hh = np.repeat(np.arange(150), size)
    treat, infected, income = rng.integers(0, 2, 150), rng.integers(0, 2, 150), rng.normal(size=150)
    frame = pd.DataFrame({"hh": hh, "treat": treat[hh], "infected": infected[hh], "income": income[hh]})
    frame = frame.assign(region=frame["hh"] % 7, age=rng.integers(1, 90, len(frame)))
    assert repeated_unit_rows(frame, "treat", "infected") is None


def test_a_units_value_missing_on_its_first_row_is_taken_from_another() -> None:
    frame = make("unit_rows_repeated", seed=4, n=400).frame
    first_rows = frame.drop_duplicates("country_code").index
    frame.loc[first_rows, "gdp_log"] = np.nan
    found = repeated_unit_rows(frame, "partnership", "aid_log")
    assert found is not None
    out = one_row_per_unit(frame, found)
    assert out["gdp_log"].notna().all()
    expected = frame.groupby("country_code")["gdp_log"].first()
    assert np.allclose(out.set_index("country_code")["gdp_log"], expected.loc[out["country_code"]])


def test_rows_that_repeat_every_value_are_left_to_the_duplicate_check() -> None:
    frame = make("unit_rows_repeated", seed=0, n=400).frame.drop(columns=["donor_type", "donor_amount"])
    assert repeated_unit_rows(frame, "partnership", "aid_log") is None
