"""Controls for a declared instrument: near-copies of the treatment may not be among them.

Why: 2SLS learns the effect from the part of the treatment that the instrument moves. A column
that is almost the treatment (the number of pupils who sat a test next to the class size, a
long-run earmarked share next to the short-run one) carries that part with it: as a control it
holds the treatment fixed, absorbs the instrument's first stage and leaves a weak, arbitrary
estimate that the review then has to refuse. The general rule
(``column_roles``) leaves out only copies at |r| >= 0.98, because outside a design a column that
close to the treatment may be a strong confounder; with a declared instrument the data say more.

A candidate is a near-copy of the treatment for the instrument when all three hold:

1. it is close to the treatment: |r| >= :data:`NEAR_COPY_CORR` (it shares at least 72% of its variance);
2. on its own it absorbs more than :data:`~whyflow.causal.review.doubts.ABSORBED` of the instrument's first stage (the share the
   review refuses at, :data:`whyflow.causal.review.doubts.ABSORBED`);
3. it is closer to the treatment than to the instrument (|r(c, t)| > |r(c, z)|): its relation to
   the instrument runs through the treatment, as a consequence of the treatment's would; a source of
   the instrument (enrollment behind a class-size rule) is at least as close to the instrument.

Columns that absorb the first stage but fail 1 or 3 stay, and the review's doubt about absorbed
controls keeps such an answer unapproved: whether they assign the instrument or confound it, only
the design can tell. Columns known to precede the treatment are never classified (the caller
passes only unprotected candidates).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from whyflow.causal.dataprep.column_names import ColumnRole
from whyflow.causal.review.doubts import ABSORBED

__all__ = ["NEAR_COPY_CORR", "first_stage_absorbed", "iv_treatment_copies"]

NEAR_COPY_CORR = 0.85
"""|correlation| with the treatment from which a column that absorbs the first stage is a near-copy of it."""
MIN_ROWS = 20


def _residual(v: np.ndarray, c: np.ndarray) -> np.ndarray:
    W = np.column_stack([np.ones(len(c)), c])
    coef, *_ = np.linalg.lstsq(W, v, rcond=None)
    return np.asarray(v - W @ coef)


def first_stage_absorbed(t: np.ndarray, z: np.ndarray, c: np.ndarray) -> float:
    """1 - (partial R² of t on z given c) / (R² of t on z): the share of the first stage that ``c`` takes."""
    r2 = float(np.corrcoef(t, z)[0, 1] ** 2)
    if not np.isfinite(r2) or r2 <= 0:
        return 0.0
    rt, rz = _residual(t, c), _residual(z, c)
    if np.std(rt) == 0 or np.std(rz) == 0:
        return 1.0
    partial = float(np.corrcoef(rt, rz)[0, 1] ** 2)
    return 1.0 - partial / r2


def _numeric(frame: pd.DataFrame, c: str) -> np.ndarray | None:
    s = frame[c]
    if pd.api.types.is_bool_dtype(s) or pd.api.types.is_numeric_dtype(s):
        return s.to_numpy(dtype=float, na_value=np.nan)
    return None


def iv_treatment_copies(frame: pd.DataFrame, treatment: str, instrument: str, cols: list[str]) -> list[ColumnRole]:
    """The candidates that are near-copies of the treatment for the declared instrument (see the module)."""
    if treatment not in frame.columns or instrument not in frame.columns:
        return []
    tv, zv = _numeric(frame, treatment), _numeric(frame, instrument)
    if tv is None or zv is None:
        return []
    out: list[ColumnRole] = []
    for c in cols:
        v = _numeric(frame, c) if c in frame.columns and c not in (treatment, instrument) else None
        if v is None:
            continue
        ok = ~(np.isnan(v) | np.isnan(tv) | np.isnan(zv))
        if ok.sum() < MIN_ROWS or min(np.std(v[ok]), np.std(tv[ok]), np.std(zv[ok])) == 0:
            continue
        r_ct, r_cz = float(np.corrcoef(v[ok], tv[ok])[0, 1]), float(np.corrcoef(v[ok], zv[ok])[0, 1])
        if abs(r_ct) < NEAR_COPY_CORR or abs(r_cz) >= abs(r_ct):
            continue
        share = first_stage_absorbed(tv[ok], zv[ok], v[ok])
        if share <= ABSORBED:
            continue
        why = (
            f"derived from the treatment: a near-copy of {treatment!r} (correlation {r_ct:+.2f}, closer to it than "
            f"to the instrument {instrument!r}, {r_cz:+.2f}) that alone absorbs {share:.0%} of the instrument's first "
            "stage: as an IV control it holds the treatment fixed"
        )
        out.append(ColumnRole(c, "treatment_copy", why))
    return out
