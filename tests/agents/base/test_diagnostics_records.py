"""The typed records of ps_diagnostics, confounder_discovery and data_repairs read old states.

A ``state.json`` written while these fields were plain dicts must still load (``whyflow resume``),
and a loaded state must write back exactly the keys and values it read, in the same order: a
skipped diagnosis keeps its five keys, not every field with a default.
"""

from __future__ import annotations

import json
import math

from whyflow.causal.diagnostics import (
    ConfounderDiscovery,
    ExpectationFailure,
    PSDiagnostics,
    RepairAction,
    Unrepaired,
)
from whyflow.causal.state import AnalysisState

ADJUSTMENT = {
    "covariates": ["x1", "x2"],
    "excluded": {"id": "identifier-like (a distinct value per row)"},
    "source": "confounder_discovery adjustment set",
    "added": [],
    "caveat": "",
    "widened": False,
}
PS_FULL = {
    "treatment": "treated",
    "outcome": "outcome",
    "model": "logistic",
    "model_detail": "logistic regression on standardised covariates (light L2), 5-fold cross-fitted",
    "model_cv_loss": {"logistic": 0.61, "gbm": 0.63},
    "model_choice": "chosen by cross-validated log loss (logistic vs gradient boosting)",
    "covariates": ["x1", "x2"],
    "excluded": {"id": "identifier-like (a distinct value per row)"},
    "adjustment": ADJUSTMENT,
    "auc": 0.7312,
    "propensity_range": {"treated": [0.05, 0.93], "control": [0.02, 0.88]},
    "common_support": [0.05, 0.88],
    "outside_support": {"treated": 0.01, "control": 0.02, "overall": 0.015},
    "extreme_share": 0.0,
    "overlap_ok": True,
    "trim_suggestion": {"lower": 0.0, "upper": 1.0, "n_dropped": 0, "reason": "Crump et al. (2009) rule: no trimming"},
    "balance": {"x1": {"smd_before": 0.41, "smd_after": 0.02}, "x2": {"smd_before": -0.2, "smd_after": 0.01}},
    "max_smd_before": 0.41,
    "max_smd_after": 0.02,
    "balance_ok": True,
    "ess": {"treated": 812.4, "control": 1101.9},
    "trimmed": True,
    "trim_applied": {"lower": 0.05, "upper": 0.95, "n_dropped": 12},
    "n_used": 1988,
    "plots": {"overlap": "plots/propensity_overlap.png", "love_plot": "plots/love_plot.png"},
    "changes": ["trim_to_common_support: dropped 12 units"],
}
PS_SKIPPED = {
    "treatment": "treated",
    "outcome": "outcome",
    "skipped": "an instrument ('z') is declared: propensity diagnostics do not apply",
    "covariates": [],
    "changes": [],
}
PS_NO_COVARIATES = {
    "treatment": "treated",
    "outcome": "outcome",
    "model": "auto",
    "covariates": [],
    "excluded": {},
    "auc": 0.5,
    "propensity_range": {"treated": [0.3, 0.3], "control": [0.3, 0.3]},
    "common_support": [0.3, 0.3],
    "outside_support": {"treated": 0.0, "control": 0.0, "overall": 0.0},
    "overlap_ok": True,
    "trim_suggestion": None,
    "trimmed": False,
    "trim_applied": None,
    "n_used": 500,
    "balance": {},
    "max_smd_before": 0.0,
    "max_smd_after": 0.0,
    "balance_ok": True,
    "ess": {"treated": 150.0, "control": 350.0},
    "plots": {},
    "changes": [],
    "note": "no covariates to adjust for",
    "adjustment": {**ADJUSTMENT, "covariates": [], "excluded": {}},
}
CD = {
    "treatment": "treated",
    "outcome": "outcome",
    "adjustment_set": ["x1", "x2", "x2_missing"],
    "rationale": {"x1": "possible confounder", "x2": "possible confounder", "x2_missing": "possible confounder"},
    "excluded": {"id": "identifier-like (a distinct value per row)", "m": "a mediator"},
    "mediators": ["m"],
    "colliders": [],
    "descendants": ["m"],
    "derived_from_treatment": [],
    "instruments": [],
    "instrument_like": [],
    "identification": {"method": "dowhy backdoor (maximal-adjustment)", "identified": True, "estimand": "E[Y|do(T)]"},
    "data_associated": ["x1"],
    "doubtful": {"x2": "kept: weak orientation"},
    "doubtful_sensitivity": {
        "x2": {"with": 2.01, "se_with": 0.1, "without": 2.05, "se_without": 0.11, "shift_in_se": 0.3636}
    },
    "policy": "conservative: drop_instruments=False",
    "column_roles": [
        {"column": "id", "role": "identifier", "reason": "identifier-like (a distinct value per row)"},
        {"column": "m", "role": "post_treatment", "reason": "a mediator"},
    ],
    "randomisation_check": {
        "applies": False,
        "why": "a design was declared",
        "unadjusted": math.nan,
        "adjusted": math.nan,
        "se_adjusted": math.nan,
        "carriers": [{"column": "m", "role": "post_treatment", "reason": "carries the move", "leave_out": True}],
        "resolved": True,
    },
    "complete_case": {
        "x2": {
            "with": 2.0,
            "se_with": 0.1,
            "without": 2.02,
            "se_without": 0.12,
            "n_complete": 1050,
            "share_imputed": 0.3,
        }
    },
}
REPAIRS = [
    {
        "kind": "expectation",
        "expectation": "expect_column_values_to_not_be_null",
        "column": "x2",
        "success": False,
        "unexpected_count": 450,
        "detail": "450 of 1,500 values missing (30.0%)",
        "repaired": True,
    },
    {
        "kind": "expectation",
        "expectation": "expect_column_values_to_be_between",
        "column": "x1",
        "success": False,
        "unexpected_count": 3,
        "detail": "3 of 1,500 values outside the plausible range",
        "repaired": False,
        "kept": "outliers are reported, not changed; not a data error",
    },
    {
        "kind": "repair",
        "column": None,
        "issue": "exact duplicate rows",
        "action": "dropped the repeats, kept the first",
        "n_before": 1510,
        "n_after": 1500,
        "detail": "10 duplicate rows removed",
    },
    {
        "kind": "unrepaired",
        "column": None,
        "expectations": ["expect_compound_columns_to_be_unique"],
        "detail": "10 rows exactly repeat an earlier row",
    },
]


def _old_state(ps: dict) -> str:
    return json.dumps(
        {
            "job_id": "old-job",
            "dataset_info": {"url": "data.csv"},
            "ps_diagnostics": ps,
            "confounder_discovery": CD,
            "data_repairs": REPAIRS,
        }
    )


def _same(a: object, b: object) -> bool:
    """Equal, with NaN equal to NaN (the randomisation check's estimates when it did not run)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return set(a) == set(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def test_an_old_state_loads_into_the_records_and_writes_back_the_same_keys_and_values() -> None:
    for ps in (PS_FULL, PS_SKIPPED, PS_NO_COVARIATES):
        state = AnalysisState.from_json(_old_state(ps))
        assert isinstance(state.ps_diagnostics, PSDiagnostics) and isinstance(
            state.confounder_discovery, ConfounderDiscovery
        )
        assert [type(r) for r in state.data_repairs] == [
            ExpectationFailure,
            ExpectationFailure,
            RepairAction,
            Unrepaired,
        ]
        written = json.loads(state.to_json())
        for field, old in (("ps_diagnostics", ps), ("confounder_discovery", CD), ("data_repairs", REPAIRS)):
            assert _same(written[field], old), field
        assert list(written["ps_diagnostics"]) == list(ps)  # the same keys, in the writer's order
        assert list(written["confounder_discovery"]) == list(CD)
        assert [list(r) for r in written["data_repairs"]] == [list(r) for r in REPAIRS]


def test_readers_see_the_old_keys_as_attributes() -> None:
    state = AnalysisState.from_json(_old_state(PS_SKIPPED))
    ps, cd = state.ps_diagnostics, state.confounder_discovery
    assert ps is not None and cd is not None
    assert ps.skipped and ps.overlap_ok is None and ps.changes == []
    assert cd.doubtful_sensitivity["x2"].with_ == 2.01 and cd.complete_case["x2"].n_complete == 1050
    assert cd.identification is not None and cd.identification.identified is True
    assert cd.randomisation_check is not None and cd.randomisation_check.carriers[0].leave_out is True
    full = AnalysisState.from_json(_old_state(PS_FULL)).ps_diagnostics
    assert full is not None and full.adjustment is not None and full.adjustment.covariates == ["x1", "x2"]
    assert full.trim_applied is not None and full.trim_applied.n_dropped == 12
    assert full.balance is not None and full.balance["x1"].smd_after == 0.02
