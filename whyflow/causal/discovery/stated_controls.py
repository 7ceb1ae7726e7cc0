"""Stated controls (``--controls``) in confounder discovery's record: the analyst's set, the recipe's beside it.

Why: the analyst's specification is a contract. The recipe still makes its own choice, for the
reader to compare, and its findings about a stated column (a mediator, a descendant of the
treatment, a copy of the outcome) stay in the record and become doubts the critique reads: a
stated control is never dropped, and never adjusted for in silence either.
"""

from __future__ import annotations

from typing import Any

from whyflow.causal.review.complete_case import SUFFIX
from whyflow.causal.review.doubts import STATED_AGAINST

__all__ = ["keep_stated", "stated_summary", "with_indicators"]

_FINDINGS: tuple[tuple[str, str], ...] = (
    ("mediators", "a mediator (on the causal path)"),
    ("colliders", "a collider (common effect)"),
    ("descendants", "a descendant of the treatment"),
    ("derived_from_treatment", "a function of the treatment"),
    ("instruments", "an instrument"),
)


def with_indicators(stated: list[str], columns: Any) -> list[str]:
    """The stated controls present in ``columns``, each followed by its ``<col>_missing`` indicator where
    data repair imputed it: the imputed column stands for the stated one only together with the flag of
    the rows it was filled in (without it, imputed values pass for measured ones)."""
    present = {str(c) for c in columns}
    out: list[str] = []
    for col in stated:
        if col in present:
            out.append(col)
            flag = f"{col}{SUFFIX}"
            if flag in present and flag not in stated:
                out.append(flag)
    return out


def keep_stated(out: dict[str, Any], stated: list[str]) -> None:
    """Put ``stated`` in ``out['adjustment_set']``, the recipe's own set in ``recipe_adjustment_set``, and
    a doubt for each stated column the recipe would have left out (with the recipe's reason).

    The recipe's doubts about columns the analyst did not state are dropped: the answer does not adjust
    for them, so they are no doubt about it (and their with/without estimates are on the recipe's set,
    not the stated one)."""
    own = [str(c) for c in out.get("adjustment_set", [])]
    out["recipe_adjustment_set"] = own
    out["adjustment_set"] = list(stated)
    rationale = dict(out.get("rationale", {}))
    doubtful = {c: why for c, why in out.get("doubtful", {}).items() if c in stated}
    out["doubtful_sensitivity"] = {c: v for c, v in out.get("doubtful_sensitivity", {}).items() if c in stated}
    for col in stated:
        reasons = [why for key, why in _FINDINGS if col in out.get(key, [])]
        if col in out.get("excluded", {}):
            reasons.append(str(out["excluded"][col]))
        rationale[col] = "stated by the analyst (--controls)"
        if col.endswith(SUFFIX) and col[: -len(SUFFIX)] in stated:
            rationale[col] = (
                f"missing-value indicator of the stated control {col[: -len(SUFFIX)]} (imputed in data repair)"
            )
        if reasons:
            doubtful[col] = f"{STATED_AGAINST}: " + "; ".join(reasons)
    for col in own:
        if col not in stated:
            rationale.pop(col, None)
    out["rationale"], out["doubtful"] = rationale, doubtful


def stated_summary(out: dict[str, Any]) -> str:
    """The clause a summary adds: the stated set and the recipe's own, or how to state the recipe's choice."""
    own = out.get("recipe_adjustment_set")
    if own is None:
        chosen = ",".join(out.get("adjustment_set", [])) or "none"
        return f"; to state this choice: --controls {chosen}"
    return f"; controls as stated (--controls); the recipe's own choice: [{', '.join(own) or 'none'}]"
