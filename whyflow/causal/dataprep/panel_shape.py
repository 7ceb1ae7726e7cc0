"""Rows that are not independent: the same units observed again and again over time.

A file of 10 countries over 60 years is a panel: a unit's rows share everything about the unit
that the columns do not measure, so an interval that treats its 600 rows as 600 independent
draws is several times too narrow. :func:`repeated_units` finds such a structure from the data
(a unit column whose values, together with the profile's time column, identify the rows), so the
critique can refuse an interval that ignores it and say how to declare the panel instead.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

__all__ = ["repeated_units"]

MIN_ROWS_PER_UNIT = 3
"""A unit seen fewer times than this (in the median) is not treated as repeated."""
UNIQUE_SHARE = 0.95
"""Share of rows that a (unit, time) pair must identify on its own."""


def repeated_units(frame: pd.DataFrame, time: str | None, skip: tuple[str | None, ...] = ()) -> dict[str, Any] | None:
    """The unit column that, with ``time``, identifies the rows, when units repeat; else ``None``.

    A candidate unit column has at least two values and at most a third as many as there are rows,
    each unit (in the median) seen at least :data:`MIN_ROWS_PER_UNIT` times, and the (unit, time)
    pair is unique for at least :data:`UNIQUE_SHARE` of the rows. Among candidates the one with the
    most units wins (a country code and its name tie; the first in the file is kept).
    """
    if not time or time not in frame.columns or len(frame) < 2 * MIN_ROWS_PER_UNIT:
        return None
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
        unique = 1 - float(sub.duplicated().sum()) / len(sub)
        if unique < UNIQUE_SHARE:
            continue
        if best is None or units > best["n_units"]:
            best = {
                "unit": str(col),
                "time": str(time),
                "n_units": units,
                "rows_per_unit": per_unit,
                "n_periods": int(sub[time].nunique()),
            }
    return best
