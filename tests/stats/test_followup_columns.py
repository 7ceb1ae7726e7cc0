"""Columns missing on the outcome's missing rows (recorded at follow-up) are left out as post-treatment."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from benchmarks.truth_kinds import KINDS, make
from whyflow.causal.dataprep.column_roles import classify_columns, outcome_proxies
from whyflow.causal.dataprep.followup_columns import followup_columns


def _trial(n: int = 2000, seed: int = 0) -> pd.DataFrame:
    """A trial (effect 1) losing 15% to follow-up; ``diagnosed`` and ``days`` are taken at that follow-up
    (they move with the outcome's noise and the treatment), ``age`` and ``income`` at baseline."""
    rng = np.random.default_rng(seed)
    age, income = rng.normal(size=n), rng.normal(size=n)
    t = rng.binomial(1, 0.5, size=n)
    e = rng.normal(size=n)
    y = 1.0 * t + 0.8 * age + 0.5 * income + e
    f = pd.DataFrame({"age": age, "income": income, "treated": t, "outcome": y})
    f["diagnosed"] = (0.3 * t + 0.8 * e + rng.normal(scale=1.0, size=n) > 0.5).astype(float)
    f["days"] = np.round(20 - 1.5 * e - 1.0 * t + rng.normal(scale=3.0, size=n))
    lost = rng.random(n) < 0.15
    f.loc[lost, ["outcome", "diagnosed", "days"]] = np.nan
    f.loc[~lost & (rng.random(n) < 0.01), "days"] = np.nan  # a few more skipped the follow-up item
    # Baseline income is skipped more often by those who later drop out: correlated, not the same rows.
    skip = np.where(lost, rng.random(n) < 0.6, rng.random(n) < 0.05)
    f.loc[skip, "income"] = np.nan
    return f


def _ols(f: pd.DataFrame, cols: list[str]) -> tuple[float, float, float]:
    d = f[["outcome", "treated", *cols]].dropna()
    fit = sm.OLS(d["outcome"], sm.add_constant(d[["treated", *cols]])).fit(cov_type="HC1")
    lo, hi = fit.conf_int().loc["treated"]
    return float(fit.params["treated"]), float(lo), float(hi)


def test_followup_columns_are_left_out_and_the_estimate_covers_the_truth() -> None:
    f = _trial()
    cands = ["age", "income", "diagnosed", "days"]
    roles = {r.column: r for r in classify_columns(f, "treated", "outcome", cands)}
    assert set(roles) == {"diagnosed", "days"}
    assert all(r.role == "post_treatment" and r.leave_out for r in roles.values())
    assert "missing on the same" in roles["diagnosed"].reason and "after the treatment" in roles["days"].reason
    kept = [c for c in cands if c not in roles]
    _, lo, hi = _ols(f, kept)
    assert lo <= 1.0 <= hi
    _, lo_all, hi_all = _ols(f, cands)
    assert not lo_all <= 1.0 <= hi_all  # adjusting for the follow-up columns misses the truth


def test_the_file_as_read_is_checked_after_data_repair_drops_the_lost_rows() -> None:
    """Confounder discovery passes the file as read to ``outcome_proxies``; the rule reads it there."""
    f = _trial(seed=1)
    assert not classify_columns(f.dropna(subset=["outcome"]), "treated", "outcome", ["age", "diagnosed", "days"])
    found = {r.column for r in outcome_proxies(f, "outcome", ["age", "income", "diagnosed", "days"])}
    assert found == {"diagnosed", "days"}


def test_correlated_missingness_protected_and_baseline_named_columns_are_kept() -> None:
    f = _trial(seed=2)
    f["baseline_score"] = f["age"].where(f["outcome"].notna())  # missing with the outcome, named as baseline
    cands = ["age", "income", "diagnosed", "days", "baseline_score"]
    left = {r.column for r in classify_columns(f, "treated", "outcome", cands, protected={"days"})}
    assert left == {"diagnosed"}


@pytest.mark.parametrize(
    "damage",
    ["few_lost", "no_lost", "rows_without_data", "too_many_extra"],
)
def test_no_follow_up_is_read_where_the_missing_sets_do_not_say_one(damage: str) -> None:
    f = _trial(seed=3)
    lost = f["outcome"].isna()
    if damage == "few_lost":  # 8 rows without an outcome: too few to tell a follow-up from damaged records
        keep = lost[lost].index[:8]
        f = f[~lost | f.index.isin(keep)]
    elif damage == "no_lost":
        f = f.dropna(subset=["outcome"])
    elif damage == "rows_without_data":  # most columns missing on those rows: units without data
        f.loc[lost, ["age", "income"]] = np.nan
    else:  # the item is also missing on 40% more rows than the outcome (missing with it, and elsewhere too)
        extra = f.index[~lost][: int(0.4 * lost.sum())]
        f.loc[extra, ["diagnosed", "days"]] = np.nan
    assert not followup_columns(f, "outcome", ["age", "income", "diagnosed", "days"])


@pytest.mark.parametrize("kind", [k for k in KINDS if k != "trial_attrition"])
def test_no_generated_kind_but_the_attrition_trial_has_follow_up_columns(kind: str) -> None:
    case = make(kind, 0)
    f, t, y = case.frame, case.args["treatment"], case.args["outcome"]
    named = [v for k, v in case.args.items() if k not in ("treatment", "outcome")]
    design = {c for v in named for c in (v if isinstance(v, list) else [v])}  # extra_instruments is a list
    assert not followup_columns(f, y, [c for c in f.columns if c not in {t, y, *design}])
