"""Other items of the outcome's own battery (``trustGov``, ``trustPM`` next to ``trustNHS``): never covariates.

Why: a survey or a test records several answers of one kind at the same moment: trust in the
NHS, in the government, in parliament, on one 1-7 scale. They are measured when the outcome is,
so none of them can precede the treatment, and they share the respondent's answering style and
general disposition with the outcome. Adjusting for them holds part of the outcome fixed (what
the treatment moves in all of them) and opens paths through the shared disposition; in a real
survey the slope of trust in the NHS on cancer waits went from +0.22 to -0.06.

The rule is strict, because a name stem alone is weak evidence: a column is a sibling of the
outcome only when (1) both names have at least two words and share the first (``trust_nhs`` /
``trustNHS``), differing in more than a wave number or a baseline marker (``score_0``,
``pre_score`` and ``trust_w1`` stay covariates), (2) at least two such columns exist (a
battery, not a coincidence of one prefix; counted over the whole file), (3) it is answered on the outcome's scale (its range
lies within the outcome's and spans at least half of it) and (4) it is associated with the
outcome (p < alpha). Columns that domain knowledge places before the treatment are never
classified (the caller passes only unprotected candidates).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from whyflow.causal.dataprep.column_names import PRE_NAME, ColumnRole, name_tokens

__all__ = ["MIN_BATTERY", "sibling_outcomes"]

MIN_BATTERY = 2
"""Columns sharing the outcome's first name word needed before any is read as another item of its battery."""
_SCALE_SPAN = 0.5
"""Share of the outcome's range that a sibling's range must span (an item on the same scale)."""


def _time_marked(name: str, outcome: str) -> bool:
    """A wave or baseline copy rather than another item: digits only differ, or a baseline word."""
    strip = "0123456789_"
    return bool(PRE_NAME.search(str(name))) or str(name).rstrip(strip) == str(outcome).rstrip(strip)


def _same_scale(v: np.ndarray, y: np.ndarray) -> bool:
    lo, hi = float(np.nanmin(y)), float(np.nanmax(y))
    span = hi - lo
    if span <= 0:
        return False
    vlo, vhi = float(np.nanmin(v)), float(np.nanmax(v))
    slack = 0.05 * span
    return vlo >= lo - slack and vhi <= hi + slack and (vhi - vlo) >= _SCALE_SPAN * span


def sibling_outcomes(frame: pd.DataFrame, outcome: str, cols: list[str], alpha: float = 0.05) -> list[ColumnRole]:
    """The candidates that are other items of the outcome's battery, each with its reason (see the module)."""
    words = name_tokens(outcome)
    if len(words) < 2 or outcome not in frame.columns or not pd.api.types.is_numeric_dtype(frame[outcome]):
        return []
    stem = words[0]
    named = [
        c
        for c in frame.columns
        if c != outcome
        and len(w := name_tokens(c)) >= 2
        and w[0] == stem
        and w[1:] != words[1:]
        and not _time_marked(c, outcome)
        and (pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c]))
    ]
    if len(named) < MIN_BATTERY:
        return []
    y = frame[outcome].to_numpy(dtype=float, na_value=np.nan)
    out: list[ColumnRole] = []
    for c in [c for c in named if c in cols]:
        v = frame[c].to_numpy(dtype=float, na_value=np.nan)
        ok = ~(np.isnan(v) | np.isnan(y))
        if ok.sum() < 30 or np.std(v[ok]) == 0 or not _same_scale(v[ok], y[ok]):
            continue
        r, p = stats.pearsonr(v[ok], y[ok])
        if p >= alpha:
            continue
        why = (
            f"another outcome: an item of the same battery as {outcome!r} (the name stem {stem!r} shared by "
            f"{len(named)} columns, the same scale, correlation {r:+.2f}); measured with the outcome, so not before "
            "the treatment: adjusting for it holds part of the outcome fixed"
        )
        out.append(ColumnRole(c, "outcome_sibling", why))
    return out
