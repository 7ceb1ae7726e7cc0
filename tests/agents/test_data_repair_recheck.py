"""After no repair, data repair's re-check reuses the first validation: same verdicts as validating again."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmarks.synthetic import linear_confounding
from tests.helpers import make_state
from whyflow.causal.dataprep.expectations import run_expectations
from whyflow.causal.dataprep.repair_rules import recheck_expectations, unrepaired
from whyflow.causal.diagnostics import Unrepaired
from whyflow.flows.running.dispatch import run_single_agent


def _key(entries: list[Unrepaired]) -> list[tuple]:
    return sorted((str(e.column), tuple(e.expectations), e.detail) for e in entries)


@pytest.mark.parametrize("with_text_binary", [False, True])
def test_unrepaired_data_gets_the_verdicts_great_expectations_gives_on_a_second_pass(
    tmp_path: Path, with_text_binary: bool
) -> None:
    """Without the text column every re-check expectation was validated in the first pass (its
    verdicts are reused); with it the re-check adds a type check, so it runs in full."""
    frame, _ = linear_confounding(800, effect=1.0, seed=4)
    frame["x1"] = frame["x1"].astype(float)
    frame.loc[::8, "x1"] = np.nan  # left missing: imputation is off
    if with_text_binary:
        frame["group"] = np.where(np.arange(800) % 3 == 0, "a", "b")
    frame = pd.concat([frame, frame.iloc[:12]], ignore_index=True)  # duplicates kept: dropping is off
    state = make_state(frame, tmp_path, "treated", "outcome", profile=False)
    run_single_agent("data_profiler", state, tmp_path, params={"drop_duplicates": False})
    profile = state.data_profile.model_copy(deep=True)
    result = run_single_agent("data_repair", state, tmp_path, params={"impute": False, "drop_duplicates": False})

    assert not [e for e in state.data_repairs if e.kind == "repair"]
    recorded = [e for e in state.data_repairs if isinstance(e, Unrepaired)]
    again = unrepaired(recheck_expectations(pd.read_parquet(state.dataframe_path), profile, run_expectations))
    assert _key(recorded) == _key(again)
    # The missing values and the duplicate rows (and a binary stored as text, not numbers).
    assert {e.column for e in recorded} == {"x1", None} | ({"group"} if with_text_binary else set())
    assert "x1" in result.outputs["unrepaired_columns"]


def test_type_checks_only_where_the_raw_column_is_not_already_a_number_dtype() -> None:
    from whyflow.causal.dataprep.expectations import expectation_suites
    from whyflow.causal.dataprep.profiling import build_profile

    raw, _ = linear_confounding(300, effect=1.0, seed=1)
    raw["price"] = [f"{v:,.2f}" for v in raw["x1"] * 1000]  # numbers stored as text
    raw["count"] = pd.array(np.arange(300) % 7, dtype="UInt16")  # a number dtype outside the list
    profile = build_profile(raw, "treated", "outcome").profile
    parsed = raw.assign(price=pd.to_numeric(raw["price"].str.replace(",", "")))
    on_raw, _ = expectation_suites(parsed, raw, profile, [])
    assert sorted(e.configuration.kwargs["column"] for e in on_raw) == ["count", "price"]
    failed = run_expectations(raw, on_raw)
    assert sorted(f["column"] for f in failed) == ["count", "price"]  # UInt16 is not in the list: GE says so
