"""Unit-level data written on several rows a unit: find it and keep one row per unit.

A file of 33 countries, each written on 9 rows (one per donor type), holds 33 observations of a
country-level treatment and outcome, not 297: the rows of a country repeat every country-level
value and differ only in a detail of the row (the donor type, that donor's amount). Estimating on
all rows counts each country 9 times, so its interval is about three times too narrow, and a
cross-fitted model sees a country's copies in its training and its test folds. It is no panel
either: the column the rows differ by is not a time, and unit effects would absorb the treatment.

:func:`repeated_unit_rows` finds such a unit column from the data: the treatment and the outcome
are each constant within every unit, so are most other columns, and units repeat. The analysis
then keeps one row per unit and leaves out the columns that differ within a unit (a detail of the
row, not of the unit the treatment and outcome describe), each named with that reason.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

__all__ = ["UnitRows", "repeated_unit_rows", "one_row_per_unit"]

MIN_UNITS = 10
"""Fewest units for the finding: with a handful of groups a constant outcome per group is no evidence."""
MIN_ROWS_PER_UNIT = 2
"""A unit is repeated when it has at least this many rows."""
SAME_COUNT_SHARE = 0.9
"""Share of the units that must have the same number of rows: the file writes each unit once per row kind
(donor type, product line). Units of different sizes (people in households of one to six) are units whose
rows are observations, and keeping one row each would weight a household of six like a single person."""
PROBE_ROWS = 5_000
"""Rows a candidate unit is first tried on: a column that is no unit shows it here at little cost."""
CONSTANT_SHARE = 0.5
"""Share of the other columns that must be constant within every unit: the file repeats the unit's values."""


@dataclass(frozen=True)
class UnitRows:
    """A unit column whose rows repeat the unit's values, and the columns that differ within a unit."""

    unit: str
    n_units: int
    rows_per_unit: int
    varying: tuple[str, ...]
    """Columns with more than one value within some unit (row details, left out), in file order."""
    averaged: tuple[str, ...] = ()
    """Stated controls with more than one value within some unit: the unit's mean stands for them."""

    def records(self, before: int, after: int) -> list[tuple[str, str, str, str]]:
        """``(column, issue, action, detail)`` of each repair record: the rows kept, each column left out or
        averaged (the repair step adds the row counts)."""
        found = (
            f"the treatment, the outcome and most columns are constant within each of the {self.n_units} values of "
            f"'{self.unit}' ({self.rows_per_unit} rows each): one unit written on several rows; {before:,} -> "
            f"{after:,} rows, so no unit counts more than once"
        )
        out = [(self.unit, "one unit on several rows", f"kept one row per {self.unit}", found)]
        differs = f"takes several values within a {self.unit} whose treatment and outcome take one"
        left_out = f"left out: a detail of the row, not of the {self.unit} the treatment and outcome describe"
        averaged = f"averaged over each {self.unit}'s rows: a stated control, adjusted for by its unit mean"
        out += [(c, "differs within a unit", left_out, f"'{c}' {differs}") for c in self.varying]
        out += [(c, "differs within a unit", averaged, f"'{c}' {differs}") for c in self.averaged]
        return out


def repeated_unit_rows(
    frame: pd.DataFrame, treatment: str, outcome: str, keep: tuple[str, ...] = (), controls: tuple[str, ...] = ()
) -> UnitRows | None:
    """The finest unit column within which the treatment and outcome never vary, when its rows repeat it.

    A candidate has :data:`MIN_UNITS` to half the rows' distinct values (text or whole numbers, not a
    measurement), at least :data:`SAME_COUNT_SHARE` of its units seen the same number of times (at least
    :data:`MIN_ROWS_PER_UNIT`); within every unit the treatment and the outcome each take one value, and so
    do at least :data:`CONSTANT_SHARE` of the other columns but not all of them (rows that repeat every
    value are exact duplicates, judged by the duplicate-row check). ``keep`` (a stated design column) must
    be constant within units too, or nothing is found: a column the user named is never left out. A stated control (``controls``) that
    differs within a unit is averaged over the unit's rows when it is numeric (the user asked to adjust
    for it, and a unit-level analysis can only adjust for a unit's summary), else it too must be constant.
    Among candidates the one with the most units wins (a country's code and its name tie; the first in the
    file is kept).
    """
    numeric = {c for c in controls if c in frame.columns and pd.api.types.is_numeric_dtype(frame[c])}
    keep = (*keep, *(c for c in controls if c not in numeric))
    n = len(frame)
    if n < 2 * MIN_UNITS or treatment not in frame.columns or outcome not in frame.columns:
        return None
    # A unit holds one treatment and one outcome value, so there are at least as many units as values: a
    # continuous outcome (a value a row) rules every candidate out at once.
    fewest = max(int(frame[treatment].nunique()), int(frame[outcome].nunique()))
    if fewest > n / 2:
        return None
    pair = frame[[treatment, outcome]]
    probe = pair.sample(n=PROBE_ROWS, random_state=0) if n > PROBE_ROWS else pair  # a sorted file's head is uniform
    best: UnitRows | None = None
    for col in frame.columns:
        if col in (treatment, outcome):
            continue
        s = frame[col]
        if s.isna().any():
            continue
        if pd.api.types.is_float_dtype(s) and not (s % 1 == 0).all():
            continue  # a measurement, not a key
        units = int(s.nunique())
        if units < max(MIN_UNITS, fewest) or units > n / 2 or (best is not None and units <= best.n_units):
            continue
        if _varies_within(probe, s.loc[probe.index]):  # most columns fail on a sample of rows already
            continue
        codes = pd.Series(pd.factorize(s)[0], index=frame.index)
        sizes = codes.value_counts()
        per_unit = int(sizes.mode().iloc[0])
        if per_unit < MIN_ROWS_PER_UNIT or (sizes == per_unit).mean() < SAME_COUNT_SHARE:
            continue
        if _varies_within(pair, codes):
            continue
        within = frame.drop(columns=[col, treatment, outcome]).groupby(codes, sort=False).nunique(dropna=True).max()
        if any(within.get(k, 0) > 1 for k in keep):
            continue
        if within.empty or (within <= 1).mean() < CONSTANT_SHARE or (within <= 1).all():
            continue
        varying = tuple(str(c) for c in within.index if within[c] > 1)
        averaged = tuple(c for c in varying if c in numeric)
        best = UnitRows(str(col), units, per_unit, tuple(c for c in varying if c not in numeric), averaged)
    return best


def _varies_within(pair: pd.DataFrame, units: pd.Series) -> bool:
    """Whether the treatment or the outcome (the columns of ``pair``) takes two values within a unit."""
    return bool((pair.groupby(units.to_numpy(), sort=False).nunique(dropna=True) > 1).to_numpy().any())


def one_row_per_unit(frame: pd.DataFrame, found: UnitRows) -> pd.DataFrame:
    """One row per unit (where the first), without the row details, each constant column holding the unit's
    value wherever one of its rows records it, the averaged controls their unit means."""
    out = frame.drop(columns=list(found.varying))
    groups = out.groupby(found.unit, sort=False)
    per_unit = {  # "first" is the first value that is not missing
        c: groups[c].transform("mean" if c in found.averaged else "first") for c in out.columns if c != found.unit
    }
    return out.assign(**per_unit).drop_duplicates(subset=[found.unit], keep="first")
