"""EDA: balance, correlations, collinearity, outliers, distributions and the quality report."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmarks.synthetic import linear_confounding
from tests.agents.test_data_repair import N_DUP, N_EDU_MISSING, N_OUTLIERS, messy_copy
from tests.helpers import make_state
from whyflow.flows.running.dispatch import run_single_agent


def _issue(issues: list[str], *words: str) -> str:
    found = [i for i in issues if all(w in i for w in words)]
    assert len(found) == 1, (words, issues)
    return found[0]


def test_messy_chain_names_every_problem(tmp_path: Path) -> None:
    frame, truth = messy_copy()
    state = make_state(frame, tmp_path, profile=False)
    for agent in ("data_profiler", "data_repair", "eda_agent"):
        run_single_agent(agent, state, tmp_path)
    eda = state.eda_result
    issues = eda.data_quality_issues
    assert f"{N_DUP:,} exact duplicates" in _issue(issues, "duplicate rows")
    assert f"{N_EDU_MISSING:,} of" in _issue(issues, "missing values", "education_years")
    assert "resolved" in _issue(issues, "missing values", "age")
    assert "resolved" in _issue(issues, "numbers stored as text", "prior_earnings")
    assert "resolved" in _issue(issues, "constant column", "country")
    outlier = _issue(issues, "outliers", "spend")
    assert f"{N_OUTLIERS:,} extreme values" in outlier and "resolved" not in outlier
    assert eda.outliers["spend"]["n_extreme"] == N_OUTLIERS
    assert 0 < eda.data_quality_score < 90
    # Every field is filled: plots exist, the summary table covers every column.
    for name in ("distributions", "correlation_heatmap", "balance"):
        path = Path(eda.plot_paths[name])
        assert path.parent == tmp_path / "plots" and path.stat().st_size > 5000
    assert set(eda.summary_table) == set(frame.columns) - {"country"} | {"education_years_missing"}
    assert eda.summary_table["region"]["top"] in {"north", "south"}
    assert eda.balance_summary and eda.covariate_balance and eda.vif_scores and eda.distribution_stats


def test_balance_correlation_and_collinearity_against_the_truth(tmp_path: Path) -> None:
    frame, truth = linear_confounding(n=3000, seed=11)
    rng = np.random.default_rng(1011)
    frame["x1_copy"] = frame["x1"] + rng.normal(0, 0.05, len(frame))
    frame["skewed"] = rng.lognormal(0, 1, len(frame))
    state = make_state(frame, tmp_path, "treated", "outcome", profile=False)
    run_single_agent("data_profiler", state, tmp_path)
    run_single_agent("eda_agent", state, tmp_path)
    eda = state.eda_result

    # The true confounders are imbalanced, the outcome-only variable is not.
    for col in truth["confounders"]:
        assert abs(eda.covariate_balance[col]["smd"]) > 0.2
        assert eda.covariate_balance[col]["p_value"] < 1e-6
    assert abs(eda.covariate_balance["x3"]["smd"]) < 0.1
    treated = frame["treated"] == 1
    assert eda.covariate_balance["x1"]["mean_treated"] == pytest.approx(frame.loc[treated, "x1"].mean())
    assert "outcome" not in eda.covariate_balance
    assert "x1" in eda.balance_summary and "x3" not in eda.balance_summary.split(";")[0]

    pair = {(p["var1"], p["var2"]) for p in eda.high_correlations}
    assert ("x1", "x1_copy") in pair
    assert eda.correlation_matrix["x1"]["x1_copy"] == pytest.approx(frame["x1"].corr(frame["x1_copy"]))
    assert 100 < eda.vif_scores["x1_copy"] < 1000 and eda.vif_scores["x3"] < 2  # 1 / (1 - r^2) ~ 400
    assert any(w.startswith("x1_copy") for w in eda.multicollinearity_warnings)
    assert not any(w.startswith("x3") for w in eda.multicollinearity_warnings)

    assert eda.distribution_stats["skewed"]["skewness"] > 2
    assert eda.distribution_stats["skewed"]["normality_test"] == "shapiro"
    assert eda.distribution_stats["skewed"]["p_value"] < 1e-10
    assert eda.outliers["x3"]["n_extreme"] == 0
    assert eda.outliers["skewed"]["count"] == len(eda.outliers["skewed"]["indices"]) or (
        len(eda.outliers["skewed"]["indices"]) == 20
    )
    assert any("high correlation: x1 and x1_copy" in i for i in eda.data_quality_issues)
    assert not any("missing" in i or "duplicate" in i for i in eda.data_quality_issues)


def test_large_tables_use_dagostino_and_a_sample(tmp_path: Path) -> None:
    frame, _ = linear_confounding(n=6000, seed=12)
    state = make_state(frame, tmp_path, "treated", "outcome", profile=False)
    run_single_agent("data_profiler", state, tmp_path)
    result = run_single_agent("eda_agent", state, tmp_path, {"sample_size": 2000, "plots": False})
    eda = state.eda_result
    assert eda.distribution_stats["x3"]["normality_test"] == "dagostino_k2"
    assert eda.distribution_stats["x3"]["is_normal"] is True
    assert result.outputs["sampled"] is True and "sample of 2,000 of 6,000 rows" in result.reasoning
    assert eda.plot_paths == {}
    assert eda.data_quality_score > 90
