"""The notebook's refuter context: the run's sensitivity results as literals, never refitted."""

from __future__ import annotations

import math
from typing import Any

from tests.factories import make_sensitivity
from whyflow.causal.diagnostics import ConfounderDiscovery
from whyflow.causal.report.refuter_section import refuter_context as _refute
from whyflow.causal.state import SensitivityResult

COMMON = {"refuted_estimate": 1354.2, "n_used": 2000, "simulations": 50, "subset_fraction": 0.8}


def _refuter(method: str, passed: bool | None = None, **extras: Any) -> SensitivityResult:
    """One refuter result as the sensitivity analyst records it: its figures in ``details.extras``."""
    return make_sensitivity("refuter", method, 0.5, passed=passed, **COMMON, **extras)


def _results() -> list[SensitivityResult]:
    evalue = make_sensitivity("other", "e_value_like", 2.0, **COMMON)  # not a refuter: no row
    return [
        evalue,
        _refuter("placebo_treatment", True, new_effect=0.9, p_value=0.497),
        _refuter("random_common_cause", False, new_effect=1353.7, p_value=math.nan),
        _refuter("data_subset", new_effect=1359.7, p_value=0.01),
        make_sensitivity(
            "unobserved",
            "unobserved_common_cause",
            0.5,
            **COMMON,
            new_effects=[[1.0, 2.0], [3.0, math.inf]],
            strengths_treatment=[0.02, 0.1],
            strengths_outcome_sd=[0.05, 0.25],
            effect_on_treatment="binary_flip",
            meaningful=True,
        ),
    ]


def test_refuter_rows_come_from_the_typed_results() -> None:
    found = _refute(_results(), None, ConfounderDiscovery(adjustment_set=["age"]), has_data=True)
    assert found is not None
    assert found["rows"] == [
        {"refuter": "placebo treatment", "new effect": 0.9, "p-value": 0.497, "verdict": "passed"},
        {"refuter": "random common cause", "new effect": 1353.7, "p-value": None, "verdict": "failed"},
        {"refuter": "data subset", "new effect": 1359.7, "p-value": 0.01, "verdict": "failed"},  # no flag: p < 0.05
    ]
    assert found["grid"]["effects"] == [[1.0, 2.0], [3.0, None]]  # non-finite numbers become None literals
    assert found["grid"]["strengths_treatment"] == [0.02, 0.1] and found["grid"]["flip"]
    assert found["estimate"] == 1354.2 and found["placebo"] == 0.9 and found["subset_fraction"] == 0.8
    assert found["recheck_adjustment"] == ["age"] and found["simulations"] == 50 and found["n_used"] == 2000


def test_the_recheck_adjusts_for_the_refitted_estimates_set_first() -> None:
    found = _refute(
        _results(), {"adjustment_set": ["age", "region"]}, ConfounderDiscovery(adjustment_set=["age"]), True
    )
    assert found is not None and found["recheck_adjustment"] == ["age", "region"]
    unset = _refute(_results(), None, ConfounderDiscovery(), has_data=True)  # discovery never set its set
    assert unset is not None and unset["recheck_adjustment"] is None


def test_no_refuters_no_section_and_no_recheck_without_data() -> None:
    assert _refute([make_sensitivity("other", "e_value_like", 2.0)], None, None, has_data=True) is None
    without_data = _refute(_results(), {"adjustment_set": ["age"]}, None, has_data=False)
    assert without_data is not None and without_data["recheck_adjustment"] is None
