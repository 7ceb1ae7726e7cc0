"""The notebook's refuter context: the run's sensitivity results as literals, never refitted."""

from __future__ import annotations

import math
from typing import Any

from whyflow.causal.diagnostics import ConfounderDiscovery
from whyflow.causal.report.refuter_section import refuter_context as _refute

COMMON = {"refuted_estimate": 1354.2, "n_used": 2000, "simulations": 50, "subset_fraction": 0.8}


def _result(method: str, typed: bool, **extras: Any) -> dict[str, Any]:
    """One sensitivity result as the state snapshot holds it: typed details or an older flat dict."""
    kind = "unobserved" if method == "unobserved_common_cause" else "refuter"
    passed = extras.pop("passed", None)
    if typed:
        details = {
            "kind": kind,
            "passed": passed,
            "estimate_method": None,
            "headline": False,
            "extras": {**COMMON, **extras},
        }
    else:
        details = {"kind": kind, "passed": passed, **COMMON, **extras}
    return {"method": method, "robustness_value": 0.5, "interpretation": "", "details": details}


def _snap(typed: bool) -> dict[str, Any]:
    return {
        "sensitivity_results": [
            _result("e_value", typed),
            _result("placebo_treatment", typed, new_effect=0.9, p_value=0.497, passed=True),
            _result("random_common_cause", typed, new_effect=1353.7, p_value=math.nan, passed=False),
            _result("data_subset", typed, new_effect=1359.7, p_value=0.01),
            _result(
                "unobserved_common_cause",
                typed,
                new_effects=[[1.0, 2.0], [3.0, math.inf]],
                strengths_treatment=[0.02, 0.1],
                strengths_outcome_sd=[0.05, 0.25],
                effect_on_treatment="binary_flip",
                meaningful=True,
            ),
        ]
    }


def test_refuter_rows_come_from_typed_or_flat_details_alike() -> None:
    typed = _refute(_snap(True), None, ConfounderDiscovery(adjustment_set=["age"]), has_data=True)
    assert typed == _refute(_snap(False), None, ConfounderDiscovery(adjustment_set=["age"]), has_data=True)
    assert typed is not None
    assert typed["rows"] == [
        {"refuter": "placebo treatment", "new effect": 0.9, "p-value": 0.497, "verdict": "passed"},
        {"refuter": "random common cause", "new effect": 1353.7, "p-value": None, "verdict": "failed"},
        {"refuter": "data subset", "new effect": 1359.7, "p-value": 0.01, "verdict": "failed"},  # no flag: p < 0.05
    ]
    assert typed["grid"]["effects"] == [[1.0, 2.0], [3.0, None]]  # non-finite numbers become None literals
    assert typed["grid"]["flip"] and typed["estimate"] == 1354.2 and typed["placebo"] == 0.9
    assert typed["recheck_adjustment"] == ["age"] and typed["simulations"] == 50 and typed["n_used"] == 2000


def test_no_refuters_no_section_and_no_recheck_without_data() -> None:
    assert _refute({"sensitivity_results": [_result("e_value", True)]}, None, None, has_data=True) is None
    without_data = _refute(_snap(True), {"adjustment_set": ["age"]}, None, has_data=False)
    assert without_data is not None and without_data["recheck_adjustment"] is None
