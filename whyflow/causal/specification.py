"""The analyst's stated specification (``--controls``, ``--cluster``, ``--where``): read and checked once.

Stated, each is a contract the run keeps: the controls are the adjustment set of every estimator
that takes covariates (the recipe's own choice is computed and shown beside them, never instead),
the cluster column is where the errors are clustered wherever the estimator can, and the subgroup
is the rows analysed. These functions turn the command-line text into the
:class:`~whyflow.causal.state.StudyDesign` fields and check them against the data before any job
folder is made, so a misspelt column is one line with a suggestion, never a failed run.
"""

from __future__ import annotations

from typing import Any

from whyflow.causal.dataprep.subgroup import parse_where
from whyflow.core.errors import DataError

__all__ = ["BadControls", "check_specification", "controls_from_text", "where_from_text"]


class BadControls(DataError):
    """A ``--controls`` list that cannot be read, or that names the treatment, the outcome or a design column."""


def controls_from_text(text: str | None) -> list[str] | None:
    """``--controls`` as a list: ``None`` when not given, ``[]`` for '' or 'none', else the named columns."""
    if text is None:
        return None
    if text.strip().casefold() in ("", "none"):
        return []
    names = [c.strip() for c in text.split(",")]
    if any(not c for c in names):
        raise BadControls(f"--controls '{text}' has an empty name: give the columns as A,B,C")
    return list(dict.fromkeys(names))


def where_from_text(text: str | None) -> str | None:
    """``--where`` as stated, once it parses (raises :class:`BadSubgroup` with one line when it does not)."""
    return None if text is None else parse_where(text).text


def check_specification(frame: Any, design: Any, treatment: str | None, outcome: str | None, shown: str) -> None:
    """Raise one line when a stated control, cluster or subgroup does not fit the data ``frame``."""
    from whyflow.runtime.data import check_columns

    controls = list(design.controls or [])
    check_columns(frame, [("control", c) for c in controls] + [("cluster", design.cluster)], shown)
    roles = {
        "treatment": treatment,
        "outcome": outcome,
        "instrument": design.instrument,
        "running variable": design.running_variable,
    }
    for role, col in roles.items():
        if col is not None and col in controls:
            raise BadControls(f"--controls names the {role} '{col}': the controls are the other columns held fixed")
    if design.where is not None:
        parse_where(design.where).apply(frame)  # a missing column, or no row kept: BadSubgroup
