"""Panels found in the data: a unit column repeated over a time column, named or not (whyflow.causal.dataprep.panel_shape)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from whyflow.causal.dataprep.panel_shape import repeated_units


def _panel(units: int, periods: int, seed: int = 0, start: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "county": np.repeat(np.arange(100, 100 + units), periods),
            "t": np.tile(np.arange(start, start + periods), units),
            "x": rng.normal(size=units * periods),
            "treated": rng.binomial(1, 0.5, units * periods),
        }
    )


def test_an_unnamed_period_column_is_found_as_the_time() -> None:
    found = repeated_units(_panel(40, 8), None, ("treated",))
    assert found == {
        "unit": "county",
        "time": "t",
        "n_units": 40,
        "rows_per_unit": 8.0,
        "n_periods": 8,
        "time_found_in_data": True,
    }


def test_the_profiles_time_column_is_used_as_given() -> None:
    found = repeated_units(_panel(40, 8), "t", ("treated",))
    assert found is not None and (found["unit"], found["time"]) == ("county", "t")
    assert "time_found_in_data" not in found


def test_a_profile_time_that_makes_no_panel_falls_back_to_the_data() -> None:
    frame = _panel(40, 8).assign(birth_year=lambda f: np.random.default_rng(1).integers(1940, 2000, len(f)))
    found = repeated_units(frame, "birth_year", ("treated",))
    assert found is not None and (found["unit"], found["time"], found["time_found_in_data"]) == ("county", "t", True)


def test_years_are_the_time_even_when_there_are_more_of_them_than_units() -> None:
    """Ten countries over sixty years, the country an integer code: years are the period, not the unit."""
    frame = _panel(10, 60, start=1950).rename(columns={"t": "yr"})
    found = repeated_units(frame, None, ("treated",))
    assert found is not None and (found["unit"], found["time"]) == ("county", "yr")


def test_dates_written_as_text_are_the_time() -> None:
    frame = _panel(12, 6)
    frame["t"] = pd.to_datetime("2020-01-01") + pd.to_timedelta(frame["t"] * 7, unit="D")
    frame["t"] = frame["t"].dt.strftime("%Y-%m-%d")
    found = repeated_units(frame, None, ("treated",))
    assert found is not None and (found["unit"], found["time"]) == ("county", "t")


@pytest.mark.parametrize("seed", range(5))
def test_a_cross_section_of_integer_columns_is_not_a_panel(seed: int) -> None:
    """Region, age and number of children: (region, age) pairs are mostly unique in a small sample, but ages are
    not a period: far more of them than a region has rows, and not evenly spaced once a few are missing."""
    rng = np.random.default_rng(seed)
    for n in (60, 400, 3000):
        frame = pd.DataFrame(
            {
                "region": rng.integers(0, 5, n),
                "age": rng.integers(18, 70, n),
                "kids": rng.integers(0, 4, n),
                "y": rng.normal(size=n),
            }
        )
        assert repeated_units(frame, None, ("y",)) is None


def test_two_waves_of_store_ids_are_not_read_as_stores_over_two_units() -> None:
    """A before/after flag over 400 stores: each store seen twice is no repeated unit, and the store id is not a
    period of two 'units' (more periods than units)."""
    frame = pd.DataFrame({"store": np.tile(np.arange(1, 401), 2), "post": np.repeat([0, 1], 400)})
    frame["fte"] = np.random.default_rng(0).normal(size=len(frame))
    assert repeated_units(frame, None, ("fte",)) is None


def test_irregular_codes_are_not_periods() -> None:
    """Donor-recipient pairs: the donor codes (2, 20, 200, ...) identify the rows with the recipient, but are not
    a time."""
    donors = np.array([2, 20, 200, 211, 220, 255, 325, 390, 740])
    frame = pd.DataFrame({"recipient": np.repeat(np.arange(33), donors.size), "donor": np.tile(donors, 33)})
    frame["aid"] = np.random.default_rng(0).normal(size=len(frame))
    assert repeated_units(frame, None, ("aid",)) is None
