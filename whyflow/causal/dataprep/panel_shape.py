"""Rows that are not independent: the same units observed again and again over time.

A file of 10 countries over 60 years is a panel: a unit's rows share everything about the unit
that the columns do not measure, so an interval that treats its 600 rows as 600 independent
draws is several times too narrow. :func:`repeated_units` finds such a structure from the data
(a unit column whose values, together with a time column, identify the rows), so the critique can
refuse an interval that ignores it and say how to declare the panel instead. The time column is
the profile's when it makes the panel; otherwise it is looked for among the columns that read as
periods (dates, years, evenly spaced whole numbers): one with no more than a few distinct values
for each row of a unit, each seen once per unit.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["repeated_units"]

MIN_ROWS_PER_UNIT = 3
"""A unit seen fewer times than this (in the median) is not treated as repeated."""
UNIQUE_SHARE = 0.95
"""Share of rows that a (unit, time) pair must identify on its own."""
PERIODS_PER_ROW = 3.0
"""The time column has at most this many distinct values per row of a unit (in the median).

Two unrelated columns make (unit, time) pairs unique only when there are many more pairs than rows: with
three periods per unit row, unrelated values would repeat a pair in about a quarter of the rows, far from
:data:`UNIQUE_SHARE`; a panel's periods are about as many as a unit's rows (exactly as many when it is
balanced), or a few times as many when units drop in and out."""
CALENDAR_YEARS = (1800, 2200)
"""Whole numbers all within these bounds read as years: tried as the time before other integer columns."""
MAX_DATE_CHARS = 40
"""A text longer than this is not a date (the longest ISO timestamp with a zone has 32 characters)."""


def repeated_units(frame: pd.DataFrame, time: str | None, skip: tuple[str | None, ...] = ()) -> dict[str, Any] | None:
    """The unit and time columns that identify the rows, when units repeat; else ``None``.

    ``time`` (the profile's time column) is tried first; when it is unknown or makes no panel, the
    columns that read as periods (:func:`_period_kind`) are tried as the time, dates and calendar
    years first, then the others by fewer distinct values, and the panel found says
    ``time_found_in_data``. A candidate unit column has at least two values and at most a third as
    many as there are rows, each unit (in the median) seen at least :data:`MIN_ROWS_PER_UNIT`
    times, and the (unit, time) pair is unique for at least :data:`UNIQUE_SHARE` of the rows.
    Among candidates the one with the most units wins (a country code and its name tie; the first
    in the file is kept).
    """
    if len(frame) < 2 * MIN_ROWS_PER_UNIT:
        return None
    if time and time in frame.columns:
        found = _units_over(frame, time, skip)
        if found is not None:
            return found
    kinds = {c: _period_kind(frame[c]) for c in frame.columns if c != time and c not in skip}
    periods = {c: k for c, k in kinds.items() if k is not None}
    calendar = tuple(c for c, k in periods.items() if k == "calendar")
    for col in sorted(periods, key=lambda c: (periods[c] != "calendar", frame[c].nunique())):
        found = _units_over(frame, str(col), (*skip, *calendar), periods[col] == "calendar")
        if found is not None:
            return {**found, "time_found_in_data": True}
    return None


def _period_kind(s: pd.Series) -> str | None:
    """ "calendar" for dates (parsed or as text) and whole numbers that are all years, "steps" for other whole
    numbers evenly spaced (waves 1..4, quarters 1..8), None for anything else."""
    v = s.dropna()
    if v.empty or pd.api.types.is_bool_dtype(v):
        return None
    if pd.api.types.is_datetime64_any_dtype(v):
        return "calendar"
    if not pd.api.types.is_numeric_dtype(v):
        return "calendar" if _dates(v) else None
    if not (v % 1 == 0).all():
        return None
    if v.between(*CALENDAR_YEARS).all():
        return "calendar"
    steps = np.diff(np.sort(v.unique()))
    return "steps" if len(steps) >= 2 and (steps == steps[0]).all() else None


def _dates(v: pd.Series) -> bool:
    """Whether text values all parse as dates (a sample of them first, so a column of names costs little).

    A value longer than :data:`MAX_DATE_CHARS` is no date and is never handed to the parser, which
    allocates per character (a megabyte label once took gigabytes); distinct values are parsed once.
    """
    import warnings

    text = pd.Series(v.astype(str).unique())
    if text.str.len().max() > MAX_DATE_CHARS:
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for part in (text.head(50), text):
            if pd.to_datetime(part, errors="coerce").isna().any():
                return False
    return True


def _units_over(
    frame: pd.DataFrame, time: str, skip: tuple[str | None, ...], calendar: bool | None = None
) -> dict[str, Any] | None:
    """The unit column repeated over ``time``, or None.

    The periods number at most :data:`PERIODS_PER_ROW` per unit row. ``calendar`` is None for a time column
    the profile named; for one found from the data it says whether it holds dates or years, and unless it
    does the periods are no more than the units (a store id is not a period of two waves).
    """
    n = len(frame)
    best: dict[str, Any] | None = None
    for col in frame.columns:
        if col == time or col in skip:
            continue
        s = frame[col]
        if pd.api.types.is_float_dtype(s) and not (s.dropna() % 1 == 0).all():
            continue  # a measurement, not a key
        units = int(s.nunique(dropna=True))
        if units < 2 or units > n / 3:
            continue
        sub = frame[[col, time]].dropna()
        if len(sub) < 0.9 * n:
            continue
        per_unit = float(sub.groupby(col, sort=False).size().median())
        if per_unit < MIN_ROWS_PER_UNIT:
            continue
        periods = int(sub[time].nunique())
        if periods > PERIODS_PER_ROW * per_unit or (calendar is False and periods > units):
            continue
        unique = 1 - float(sub.duplicated().sum()) / len(sub)
        if unique < UNIQUE_SHARE:
            continue
        if best is None or units > best["n_units"]:
            best = {
                "unit": str(col),
                "time": str(time),
                "n_units": units,
                "rows_per_unit": per_unit,
                "n_periods": periods,
            }
    return best
