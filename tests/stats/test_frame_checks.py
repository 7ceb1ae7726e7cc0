"""The fast whole-table checks answer exactly what the pandas expressions they replace answer."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from whyflow.causal.dataprep.frame_checks import at_most_distinct, duplicate_rows


def _messy(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "zero": rng.choice([0.0, -0.0, np.nan, 1.5], n),
            "text": rng.choice(np.array(["x", None, "y", "1"], dtype=object), n),
            "int": rng.integers(0, 2, n),
            "nullable": pd.array(rng.choice([1, 2, None], n), dtype="Int64"),
            "cat": pd.Categorical(rng.choice(["p", "q"], n)),
            "mixed": rng.choice(np.array([1, "1", 1.0, None], dtype=object), n),
        }
    )


@pytest.mark.parametrize("seed", range(40))
def test_duplicate_rows_matches_pandas_on_messy_columns(seed: int) -> None:
    frame = _messy(int(np.random.default_rng(seed).integers(0, 80)), seed)
    assert duplicate_rows(frame).equals(frame.duplicated(keep="first"))
    for k in range(4):
        for col in frame.columns:
            assert at_most_distinct(frame[col], k) == (frame[col].nunique(dropna=True) <= k), (col, k)


def test_duplicate_rows_finds_planted_copies_in_a_large_table() -> None:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(20_000, 6)), columns=list("abcdef"))
    frame["g"] = rng.choice(["u", "v"], len(frame))
    frame = pd.concat([frame, frame.iloc[[5, 7, 7, 19_999]]], ignore_index=True)
    frame.index = frame.index + 100  # labels are kept, not renumbered
    dup = duplicate_rows(frame)
    assert dup.equals(frame.duplicated(keep="first"))
    assert int(dup.sum()) == 4 and list(dup[dup].index) == [20_100, 20_101, 20_102, 20_103]


def test_at_most_distinct_when_the_extra_value_comes_late() -> None:
    values = pd.Series(np.r_[np.ones(5000), [2.0], np.full(10, np.nan)])
    assert at_most_distinct(values, 2) and not at_most_distinct(values, 1)
    continuous = pd.Series(np.random.default_rng(1).normal(size=5000))
    assert not at_most_distinct(continuous, 200) and at_most_distinct(continuous, 5000)
    assert at_most_distinct(pd.Series([np.nan, None]), 0)


def test_duplicate_verdict_drops_copies_only_where_a_continuous_column_rules_out_chance() -> None:
    from whyflow.causal.dataprep.frame_checks import duplicate_verdict

    rng = np.random.default_rng(0)
    n = 1000
    discrete = pd.DataFrame(
        {"a": rng.integers(0, 3, n), "b": rng.integers(0, 2, n), "label": rng.choice(["x", "y"], n)}
    )
    kept = duplicate_verdict(discrete)
    assert kept.rows == int(discrete.duplicated().sum()) > 900 and not kept.drop and kept.column is None
    assert kept.sentence().startswith(f"{kept.rows:,} exact duplicate rows kept: every column is discrete")

    continuous = discrete.assign(income=rng.normal(50_000, 9_000, n).round(2))
    copies = pd.concat([continuous, continuous.iloc[:37]], ignore_index=True)
    dropped = duplicate_verdict(copies)
    assert (dropped.rows, dropped.drop, dropped.column) == (37, True, "income")
    assert dropped.sentence().startswith("37 exact duplicate rows dropped: income is continuous")

    assert duplicate_verdict(continuous).rows == 0 and duplicate_verdict(continuous).sentence() == ""
    few = pd.DataFrame({"v": [0.5, 1.5, 2.5, 0.5]})  # 3 values: too few to call a repeat implausible
    assert not duplicate_verdict(few).drop
