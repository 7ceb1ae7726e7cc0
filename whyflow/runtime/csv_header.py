"""A CSV header of numbered placeholders: R writes a table without names as ``"V1","V2"``, and
exports of such tables often carry the real names as the first row below it."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["placeholder_header"]

_PLACEHOLDER = re.compile(r"(?:v|var|x|col|column|field)_?(\d+)", re.I)
"""A writer's numbered stand-in for a column name: R's ``V1``, ``V2`` for a table without names,
``X1``, ``col_1``..."""
_NAME = re.compile(r"[A-Za-z][\w.\- ]*")


def placeholder_header(frame: pd.DataFrame) -> list[str]:
    """The header's names when they are numbered placeholders (``"v1","v2"``, numbered from 0 or 1
    in order) and the first row holds the real ones; else []. The first row is read as names only
    when each of its cells is a distinct name-like word that no later row of its column repeats
    (a value of the data recurs; a column's name does not), so a table whose columns are really
    called ``x1``, ``x2`` keeps them."""
    import pandas as pd

    names = [str(c).strip() for c in frame.columns]
    numbered = [_PLACEHOLDER.fullmatch(n) for n in names]
    if len(frame) < 2 or not all(numbered):
        return []
    numbers = [int(m.group(1)) for m in numbered if m]
    if numbers not in (list(range(len(names))), list(range(1, len(names) + 1))):
        return []
    first = [frame.iloc[0, i] for i in range(frame.shape[1])]
    if not all(isinstance(v, str) and _NAME.fullmatch(v.strip()) for v in first):
        return []
    if len({v.strip().casefold() for v in first}) != len(first):
        return []
    for i, v in enumerate(first):
        below = frame.iloc[1:, i]
        if not pd.api.types.is_object_dtype(below) and not pd.api.types.is_string_dtype(below):
            return []
        if (below.astype("string").str.strip().str.casefold() == v.strip().casefold()).any():
            return []
    return names
