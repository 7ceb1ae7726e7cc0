"""Columns recorded at follow-up together with the outcome, read from the file's missingness.

Why: in a trial with attrition the outcome is missing for the participants lost to follow-up,
and every other measurement taken at that follow-up visit (a diagnosis, a treatment received, the
days until the test) is missing on exactly the same rows. Those columns were recorded after the
treatment, so adjusting for them conditions on its consequences; in a randomised trial they are
often balanced, so no association test notices them. A baseline covariate is recorded before the
treatment and is missing for its own reasons (a skipped question), independently of who later
drops out.

The rule asks for near-identity of the two missing sets, never for correlation: a column is left
out only when it is missing on at least :data:`COVER` of the outcome's missing rows and on few
other rows (at most :data:`EXCESS` times as many, and at most :data:`EXCESS_RATE` of the rows with
an outcome: the item non-response of those who were followed up). A covariate whose missingness merely goes with
dropping out (the same people skip a baseline question more often) covers far less of the
outcome's missing rows and is kept. Two guards keep gaps in the file from reading as a follow-up:
the outcome must be missing on at least :data:`MIN_LOST` rows and 1% of them (a handful of damaged
records miss everything together), and the matching columns must be at most half of the columns
recorded where the outcome is (when most columns are missing on those rows they are units without
data, such as counties or country-years outside the sample, not participants lost to follow-up).

The caller passes the file as it was read (data repair drops the rows without an outcome) and
only columns that may follow the treatment: columns domain knowledge places before it, the
treatment and the design's columns are never passed, and baseline-named columns are skipped here.
"""

from __future__ import annotations

import pandas as pd

from whyflow.causal.dataprep.column_names import PRE_NAME, ColumnRole

__all__ = ["COVER", "EXCESS", "EXCESS_RATE", "MIN_LOST", "followup_columns"]

MIN_LOST = 10
"""Rows without an outcome needed (and at least 1% of the rows) before any column is read as recorded with it."""
COVER = 0.95
"""Share of the outcome's missing rows on which a follow-up column must be missing too."""
EXCESS = 0.25
"""Most rows (as a share of the outcome's missing count) on which a follow-up column may be missing beyond them."""
EXCESS_RATE = 0.05
"""Most share of the rows with an outcome on which a follow-up column may be missing (a skipped follow-up item)."""
_RECORDED = 0.5
"""A column recorded on at least this share of the outcome's rows counts toward the half-of-the-file guard."""


def followup_columns(frame: pd.DataFrame, y: str, cols: list[str]) -> list[ColumnRole]:
    """The candidates whose missing rows are (nearly) the outcome's, each left out as post-treatment."""
    if y not in frame.columns:
        return []
    lost = frame[y].isna().to_numpy()
    n_lost = int(lost.sum())
    if n_lost < max(MIN_LOST, 0.01 * len(frame)) or n_lost == len(frame):
        return []
    matched: list[tuple[str, int, int]] = []
    recorded = 0
    for c in cols:
        if c == y or c not in frame.columns:
            continue
        missing = frame[c].isna().to_numpy()
        if missing[~lost].mean() > 1 - _RECORDED:
            continue  # mostly empty where the outcome is recorded (text read as numbers, a sparse item)
        recorded += 1
        both, extra = int((missing & lost).sum()), int((missing & ~lost).sum())
        close = extra <= min(EXCESS * n_lost, EXCESS_RATE * (len(lost) - n_lost))
        if both >= COVER * n_lost and close and not PRE_NAME.search(str(c)):
            matched.append((c, both, extra))
    if not matched or len(matched) > recorded / 2:
        return []
    out = []
    for c, both, extra in matched:
        same = f"the same {both:,} rows" if both == n_lost else f"{both:,} of the {n_lost:,} rows"
        more = f" (and {extra:,} more)" if extra else ""
        why = (
            f"post-treatment: missing on {same} as the outcome {y!r}{more}: recorded at follow-up, after the treatment"
        )
        out.append(ColumnRole(c, "post_treatment", why))
    return out
