"""The critique's improvement codes: the one list, and the one way to read them back.

A critique improvement is a string ``"code: plain words"``; the next round's agents act on the
codes they own and record them in ``changes_applied`` / ``changes``.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["CODES", "codes_in", "ordered_codes"]

CODES = (
    "trim_to_common_support",
    "add_doubly_robust",
    "widen_adjustment_set",
    "switch_propensity_model",
    "refit_nuisance",  # estimators disagree: re-choose nuisance models by CV loss with more folds
)


def _code(item: object) -> str | None:
    head = str(item).split(":", 1)[0].strip()
    return next((c for c in CODES if head == c or head.startswith(c)), None)


def ordered_codes(items: Iterable[object] | None) -> list[str]:
    """The codes named by ``items`` ("code: words" or a bare code), first mention first."""
    found: list[str] = []
    for item in items or []:
        code = _code(item)
        if code is not None and code not in found:
            found.append(code)
    return found


def codes_in(items: Iterable[object] | None) -> set[str]:
    """The set of codes named by ``items``."""
    return set(ordered_codes(items))
