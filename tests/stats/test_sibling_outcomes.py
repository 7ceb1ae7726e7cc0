"""Other items of the outcome's battery are left out of the adjustment set (issue 26, ob02)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import statsmodels.api as sm

from whyflow.causal.dataprep.column_roles import classify_columns
from whyflow.causal.dataprep.sibling_outcomes import sibling_outcomes


def _survey(n: int = 3000, seed: int = 0) -> pd.DataFrame:
    """Trust in the NHS (1-7) moved by local waiting times (effect 1.0 per unit); trust in the government
    and in parliament share the respondent's disposition and are moved by the waits too; age confounds."""
    rng = np.random.default_rng(seed)
    age = rng.normal(50, 15, n)
    waits = 0.02 * age + rng.normal(size=n)
    mood = rng.normal(size=n)

    def item(effect: float) -> np.ndarray:
        raw = 4 + effect * waits + 0.03 * (age - 50) + 1.2 * mood + rng.normal(scale=0.8, size=n)
        return np.clip(np.round(raw), 1, 7)

    return pd.DataFrame(
        {
            "age": age.round(1),
            "waits": waits,
            "trustNHS": item(1.0),
            "trustGov": item(0.8),
            "trustParl": item(0.6),
            "trust_nhs_0": np.clip(np.round(4 + 1.2 * mood + 0.03 * (age - 50) + rng.normal(size=n)), 1, 7),
        }
    )


def _slope(frame: pd.DataFrame, controls: list[str]) -> float:
    X = sm.add_constant(frame[["waits", *controls]])
    return float(sm.OLS(frame["trustNHS"], X).fit().params["waits"])


def test_battery_items_are_left_out_and_the_baseline_kept() -> None:
    frame = _survey()
    roles = classify_columns(frame, "waits", "trustNHS", ["age", "trustGov", "trustParl", "trust_nhs_0"])
    out = {r.column: r for r in roles if r.leave_out}
    assert set(out) == {"trustGov", "trustParl"}
    assert all(r.role == "outcome_sibling" for r in out.values())
    assert "another outcome" in out["trustGov"].reason
    # why it matters: with the siblings the slope collapses; without them it is near the truth (about 0.9
    # after rounding and clipping to the 1-7 scale)
    right = _slope(frame, ["age", "trust_nhs_0"])
    wrong = _slope(frame, ["age", "trust_nhs_0", "trustGov", "trustParl"])
    assert abs(right - 0.9) < 0.15
    assert wrong < 0.6 * right


def test_one_shared_prefix_is_not_a_battery() -> None:
    frame = _survey().drop(columns=["trustParl"])
    assert sibling_outcomes(frame, "trustNHS", ["age", "trustGov"]) == []


def test_a_column_on_another_scale_is_not_an_item() -> None:
    frame = _survey()
    frame["trustGov"] = frame["trustGov"] * 100  # not the outcome's 1-7 scale
    cols = sibling_outcomes(frame, "trustNHS", ["trustGov", "trustParl"])
    assert [r.column for r in cols] == ["trustParl"]


def test_single_word_names_and_protected_columns_are_never_siblings() -> None:
    frame = _survey().rename(columns={"trustNHS": "outcome"})
    assert sibling_outcomes(frame, "outcome", ["trustGov", "trustParl"]) == []
    frame = _survey()
    roles = classify_columns(frame, "waits", "trustNHS", ["trustGov", "trustParl"], protected={"trustGov"})
    assert [r.column for r in roles if r.leave_out] == ["trustParl"]
