"""A column's role record, and what a column's name alone says about it.

Kept apart from the rules that classify columns (:mod:`whyflow.causal.dataprep.column_roles` and the rules
it calls, such as outcome siblings and follow-up columns) so each rule can build the record and
read a name without importing the classifier that calls it.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

__all__ = [
    "PRE_NAME",
    "ROLES_FROM_VALUES",
    "ColumnRole",
    "name_tokens",
    "keyword_tokens",
    "outcome_baseline",
    "read_from_values",
]

PRE_NAME = re.compile(r"(^|_)(lag\w*|pre\w*|baseline|base|prior|initial|before|l\d*|t0|w1|wave1)($|_)|_0$", re.I)
"""A name that says the column was measured before the treatment (lagged, baseline, prior, wave 1)."""

_BASELINE_WORD = re.compile(r"^(prior|pre|baseline|base|before|initial|previous|prev|lag\d*|lagged)$")
"""A name word that marks an earlier measurement of what the rest of the name says."""
_PERIOD = re.compile(r"^(.*?[A-Za-z])_?(\d+)$")


ROLES_FROM_VALUES = frozenset(
    {
        "treatment_copy",
        "treatment_interaction",
        "treatment_alias",
        "instrument_copy",
        "instrument_part",
        "outcome_component",
        "outcome_transform",
        "identifier",
    }
)
"""Roles the column's values themselves show: made from the treatment, an instrument or the outcome, or an
identifier. The others rest on a name, a missing-rows pattern or a graph, which can be wrong about timing."""


def read_from_values(role: str) -> bool:
    """Whether ``role`` is shown by the column's values (positive evidence), not by its name or a graph."""
    return role in ROLES_FROM_VALUES


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


def outcome_baseline(name: str, outcome: str) -> str | None:
    """Why the name says the column is an earlier measurement of the outcome, or None.

    Two forms: the outcome's name words with a baseline word added (``prior_earnings``,
    ``earnings_lag1``, ``baselineScore`` for ``earnings`` / ``score``), or the outcome's stem with
    an earlier period number (``re74`` for ``re78``, ``sales_2019`` for ``sales_2021``). Such a
    column is measured before the outcome and, in a before/after study, before the treatment: the
    strongest confounder there is, never a part of the outcome.
    """
    words, target = name_tokens(name), name_tokens(outcome)
    rest = [w for w in words if not _BASELINE_WORD.match(w)]
    if target and rest == target and len(rest) < len(words):
        marker = next(w for w in words if _BASELINE_WORD.match(w))
        return f"its name is the outcome's with {marker!r}: an earlier measurement of {outcome!r}"
    here, there = _PERIOD.match(str(name)), _PERIOD.match(str(outcome))
    if here and there and here.group(1).lower() == there.group(1).lower() and int(here.group(2)) < int(there.group(2)):
        return f"its name is the outcome's stem with an earlier period ({here.group(2)} before {there.group(2)})"
    return None
