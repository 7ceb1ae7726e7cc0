"""A column's role record, and what a column's name alone says about it.

Kept apart from the rules that classify columns (:mod:`whyflow.causal.dataprep.column_roles` and the rules
it calls, such as outcome siblings and follow-up columns) so each rule can build the record and
read a name without importing the classifier that calls it.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["PRE_NAME", "ColumnRole", "name_tokens", "keyword_tokens"]

PRE_NAME = re.compile(r"(^|_)(lag\w*|pre\w*|baseline|base|prior|initial|before|l\d*|t0|w1|wave1)($|_)|_0$", re.I)
"""A name that says the column was measured before the treatment (lagged, baseline, prior, wave 1)."""


@dataclass(frozen=True)
class ColumnRole:
    """One column's role and why: ``leave_out`` False means it is kept with a flag."""

    column: str
    role: str
    reason: str
    leave_out: bool = True

    def as_dict(self) -> dict[str, Any]:
        """The JSON form written into ``confounder_discovery.column_roles``."""
        return asdict(self)


def name_tokens(name: str) -> list[str]:
    """The words of a column name (snake_case, camelCase and other separators split), lower-cased."""
    spaced = re.sub(r"([a-z])([A-Z])", r"\1_\2", str(name))
    return [t for t in re.split(r"[^0-9A-Za-z]+", spaced.lower()) if t]


def keyword_tokens(name: str) -> set[str]:
    """The words of a column name, each also without its trailing digits ("wave1" gives "wave1" and "wave").

    What the keyword rules match against, so a numbered column ("id2", "age_1", "score0") still
    carries its word.
    """
    words = name_tokens(name)
    return {*words, *(stem for word in words if (stem := word.rstrip("0123456789")))}
