"""The notebook's sensitivity section: the run's refuter results as literals (never rerun)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from whyflow.causal.diagnostics import ConfounderDiscovery
from whyflow.causal.state import SensitivityResult

__all__ = ["refuter_context"]


_REFUTERS = {
    "placebo_treatment": "placebo treatment",
    "random_common_cause": "random common cause",
    "data_subset": "data subset",
}
"""The p-value refuters the sensitivity analyst records, by ``SensitivityResult.method``."""


def _finite(value: Any) -> float | None:
    """A number as a float literal the notebook can embed, None when missing or not finite."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def refuter_context(
    sensitivity: Iterable[SensitivityResult],
    recompute: dict[str, Any] | None,
    confounders: ConfounderDiscovery | None,
    has_data: bool,
) -> dict[str, Any] | None:
    """The run's refuter results (``sensitivity_results``) as literals for the notebook's table.

    The notebook shows these numbers instead of rerunning the refuters (hundreds of refits);
    ``recheck_adjustment`` feeds one cheap labelled re-check cell when the data are at hand. The
    refuters' own figures (new effect, p-value, the grid, the refuted estimate and its settings)
    are what the sensitivity analyst puts in ``details.extras``.
    """
    rows: list[dict[str, Any]] = []
    grid: dict[str, Any] | None = None
    common: dict[str, Any] = {}  # the refuted estimate and its settings, shared by every refuter
    for r in sensitivity:
        extras = r.details.extras
        if r.method in _REFUTERS:
            common, p = common or extras, _finite(extras.get("p_value"))
            passed = r.details.passed if r.details.passed is not None else p is None or p >= 0.05
            rows.append(
                {
                    "refuter": _REFUTERS[r.method],
                    "new effect": _finite(extras.get("new_effect")),
                    "p-value": p,
                    "verdict": "passed" if passed else "failed",
                }
            )
        elif r.method == "unobserved_common_cause" and extras.get("new_effects"):
            common = common or extras
            grid = {
                "effects": [[_finite(v) for v in row] for row in extras["new_effects"]],
                "strengths_treatment": list(extras.get("strengths_treatment") or []),
                "strengths_outcome_sd": list(extras.get("strengths_outcome_sd") or []),
                "flip": extras.get("effect_on_treatment") == "binary_flip",
                "meaningful": extras.get("meaningful", True),
            }
    if not rows and grid is None:
        return None
    out = {
        "rows": rows,
        "grid": grid,
        "estimate": _finite(common.get("refuted_estimate")),
        "n_used": common.get("n_used"),
        "simulations": common.get("simulations"),
        "subset_fraction": _finite(common.get("subset_fraction")),
        "placebo": next((row["new effect"] for row in rows if row["refuter"] == "placebo treatment"), None),
    }
    adjustment = (recompute or {}).get("adjustment_set") or (
        confounders.adjustment_set
        if confounders is not None and "adjustment_set" in confounders.model_fields_set
        else None
    )
    known = None not in [out[k] for k in ("estimate", "n_used", "simulations", "placebo")]
    out["recheck_adjustment"] = list(adjustment) if has_data and adjustment is not None and known else None
    return out
