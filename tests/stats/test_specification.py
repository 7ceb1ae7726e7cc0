"""The analyst's specification (issue 36): --controls, --cluster and --where, kept as stated.

Fast checks on generated data: the subgroup parser reads conditions and never runs code, the
stated controls are the adjustment exactly (the recipe's own choice beside them, its objections
named), the cluster-robust estimators cluster where asked, and bad input is one line, exit 2.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from whyflow.causal.dataprep.subgroup import BadSubgroup, parse_where
from whyflow.causal.diagnostics import ConfounderDiscovery
from whyflow.causal.discovery.adjustment import choose_adjustment
from whyflow.causal.discovery.stated_controls import keep_stated, stated_summary
from whyflow.causal.estimation.clustered import cluster_codes, ols_clustered
from whyflow.causal.review.doubts import STATED_AGAINST, role_doubts
from whyflow.causal.specification import BadControls, controls_from_text
from whyflow.cli.main import main


def _frame(n: int = 400, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x1, x2 = rng.normal(size=n), rng.normal(size=n)
    t = rng.binomial(1, 1 / (1 + np.exp(-x1)))
    return pd.DataFrame(
        {
            "age": rng.integers(18, 80, n),
            "sex": rng.choice(["f", "m"], n),
            "x1": x1,
            "x2": x2,
            "t_copy": t * 2.0,
            "t": t,
            "y": t + x1 + rng.normal(size=n),
        }
    )


# ---- --where -----------------------------------------------------------------------------------------


def test_where_selects_the_rows_pandas_query_selects() -> None:
    frame = _frame()
    for text in ("age >= 30", "18 <= age < 40 and sex == 'f'", "sex in ['f'] or x1 > 1", "not (age > 50)"):
        rows, sentence = parse_where(text).apply(frame)
        expected = frame.query(text).reset_index(drop=True)
        pd.testing.assert_frame_equal(rows, expected)
        assert sentence == f"subgroup {text}: {len(expected):,} of {len(frame):,} rows"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("__import__('os').system('true')", "call"),
        ("age.mean() > 1", "call"),
        ("age + 1 > 30", "arithmetic"),
        ("lambda: 1", "lambda"),
        ("age >", "cannot be read"),
        ("1 < 2", "one side of each comparison must be a column"),
    ],
)
def test_where_refuses_anything_but_a_condition(text: str, words: str) -> None:
    with pytest.raises(BadSubgroup, match=words):
        parse_where(text).apply(_frame())


def test_where_names_a_missing_column_with_a_suggestion_and_refuses_an_empty_subgroup() -> None:
    with pytest.raises(BadSubgroup, match="'agee' \\(did you mean 'age'\\?\\)"):
        parse_where("agee > 3").apply(_frame())
    with pytest.raises(BadSubgroup, match="keeps no row"):
        parse_where("age > 1000").apply(_frame())


# ---- --controls ---------------------------------------------------------------------------------------


def test_controls_text() -> None:
    assert controls_from_text(None) is None
    assert controls_from_text("") == [] and controls_from_text(" None ") == []
    assert controls_from_text("x1, x2,x1") == ["x1", "x2"]
    with pytest.raises(BadControls):
        controls_from_text("x1,,x2")


def test_stated_controls_are_the_adjustment_and_the_recipes_choice_stands_beside_them() -> None:
    frame = _frame()
    own = choose_adjustment(frame, "t", "y", ["age", "sex", "x1", "x2", "t_copy"])
    stated = choose_adjustment(frame, "t", "y", ["age", "sex", "x1", "x2", "t_copy"], stated=["x1", "t_copy"])
    assert "t_copy" in own.excluded and "t_copy" not in own.covariates
    assert stated.covariates == ["x1", "t_copy"]
    assert stated.recipe_choice == own.covariates
    assert "t_copy" in stated.caveat and "t_copy" not in stated.excluded
    assert choose_adjustment(frame, "t", "y", ["x1", "x2"], stated=[]).covariates == []
    widened = choose_adjustment(frame, "t", "y", ["x1", "x2", "age"], widen=True, stated=["x1"])
    assert widened.covariates == ["x1"] and widened.added == []


def test_a_stated_control_the_recipe_would_leave_out_is_a_stated_doubt() -> None:
    out = {
        "adjustment_set": ["x1", "x2"],
        "mediators": ["m"],
        "excluded": {"m": "a mediator: on a directed path from the treatment"},
        "doubtful": {},
        "rationale": {"x1": "confounder", "x2": "confounder"},
    }
    keep_stated(out, ["x1", "m"])
    assert out["adjustment_set"] == ["x1", "m"] and out["recipe_adjustment_set"] == ["x1", "x2"]
    assert out["doubtful"]["m"].startswith(STATED_AGAINST) and "mediator" in out["doubtful"]["m"]
    assert "x2" not in out["rationale"]
    assert "the recipe's own choice: [x1, x2]" in stated_summary(out)
    doubts = role_doubts(out["doubtful"], ConfounderDiscovery.model_validate(out), None)
    assert any(d.startswith("stated controls the recipe would leave out: m") for d in doubts)
    assert stated_summary({"adjustment_set": ["a", "b"]}) == "; to state this choice: --controls a,b"


def test_the_recipe_s_doubt_about_a_column_it_chose_and_the_analyst_did_not_is_no_doubt_about_the_answer() -> None:
    """ob04 with the paper's controls (pop, hc, rgdpe): the recipe's own set kept rpcgdp against a weak graph and
    moved with it; the stated answer does not adjust for rpcgdp, so that doubt must not hold the answer back."""
    moves = {"with": -0.0011, "se_with": 0.002, "without": -0.0167, "se_without": 0.003, "shift_in_se": 5.2}
    out = {
        "adjustment_set": ["hc", "rpcgdp"],
        "excluded": {},
        "doubtful": {"rpcgdp": "kept against the graph's orientation: ...", "hc": "kept: its edge is undirected"},
        "doubtful_sensitivity": {"rpcgdp": moves, "hc": {**moves, "without": -0.0012, "shift_in_se": 0.03}},
        "rationale": {},
    }
    keep_stated(out, ["pop", "hc", "rgdpe"])
    assert set(out["doubtful"]) == {"hc"} and set(out["doubtful_sensitivity"]) == {"hc"}
    assert role_doubts(out["doubtful"], ConfounderDiscovery.model_validate(out), None) == []


# ---- --cluster ----------------------------------------------------------------------------------------


def _cluster_trial(seed: int = 1) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    school = rng.integers(0, 30, 1500)
    arm = rng.permutation(np.arange(30) % 2)
    t = arm[school]
    y = 0.3 * t + rng.normal(size=30)[school] + rng.normal(size=1500)
    return pd.DataFrame({"school": school, "t": t, "y": y, "x": rng.normal(size=1500)}), school


def test_clustered_ols_is_statsmodels_cluster_and_wider_than_independent_errors() -> None:
    import statsmodels.api as sm

    frame, school = _cluster_trial()
    codes = cluster_codes(frame, None, "school")
    est = ols_clustered(frame[["x"]], frame["t"].to_numpy(), frame["y"].to_numpy(), codes, "school")
    design = sm.add_constant(frame[["t", "x"]].astype(float))
    iid = sm.OLS(frame["y"], design).fit()
    clustered = sm.OLS(frame["y"], design).fit(cov_type="cluster", cov_kwds={"groups": school})
    assert est.estimate == pytest.approx(float(iid.params["t"]))
    assert est.std_error == pytest.approx(float(clustered.bse["t"]))
    assert est.std_error > 2 * float(iid.bse["t"])
    assert est.details["clustered_by"] == "school" and est.details["n_clusters"] == 30


def test_2sls_and_did_cluster_on_the_stated_column() -> None:
    from whyflow.causal.estimation.designs_did import did_twfe
    from whyflow.causal.estimation.designs_iv import iv_2sls

    frame, school = _cluster_trial(2)
    rng = np.random.default_rng(3)
    z = frame["t"].to_numpy().astype(float)
    take = np.where(rng.random(len(z)) < 0.8, z, 1 - z)
    robust = iv_2sls(frame["y"].to_numpy(), take, z, frame[["x"]], "z")
    clustered = iv_2sls(frame["y"].to_numpy(), take, z, frame[["x"]], "z", clusters=("school", school))
    assert clustered.estimate == pytest.approx(robust.estimate)
    assert clustered.std_error > 1.5 * robust.std_error
    assert clustered.details["clustered_by"] == "school" and "clustered_by" not in robust.details
    panel = pd.DataFrame(
        {
            "unit": np.repeat(np.arange(40), 4),
            "period": np.tile(np.arange(4), 40),
            "state": np.repeat(np.arange(40) // 4, 4),
        }
    )
    panel["d"] = ((panel["state"] % 2 == 0) & (panel["period"] >= 2)).astype(int)
    panel["y"] = panel["d"] + rng.normal(size=10)[panel["state"]] * panel["period"] + rng.normal(size=160)
    by_unit = did_twfe(panel, "unit", "period", "d", "y")
    by_state = did_twfe(panel, "unit", "period", "d", "y", cluster="state")
    assert by_state.estimate == pytest.approx(by_unit.estimate)
    assert by_state.std_error != pytest.approx(by_unit.std_error)
    assert by_state.details["clustered_by"] == "state" and "10 clusters" in by_state.details["se_method"]


# ---- the command line ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--controls", "x1,agee"], "control column 'agee' is not in"),
        (["--controls", "x1,t"], "--controls names the treatment 't'"),
        (["--cluster", "schol"], "cluster column 'schol' is not in"),
        (["--where", "age.mean() > 3"], "uses call"),
        (["--where", "sexx == 'f'"], "did you mean 'sex'"),
    ],
)
def test_bad_specification_is_one_line_and_exit_2(
    flags: list[str], words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d.csv"
    _frame().to_csv(data, index=False)
    code = main(
        ["run", "causal_analysis", "--data", str(data), "-t", "t", "-y", "y", *flags, "-o", str(tmp_path / "j")]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert words in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "j").exists()


def test_an_imputed_stated_control_keeps_its_missing_value_indicator() -> None:
    frame = _frame()
    frame["x1_missing"] = (np.arange(len(frame)) % 5 == 0).astype("int8")  # as data repair writes it
    adj = choose_adjustment(frame, "t", "y", ["x1", "x2", "x1_missing"], stated=["x1", "x2"])
    assert adj.covariates == ["x1", "x1_missing", "x2"]
    out = {"adjustment_set": ["x1", "x1_missing", "x2"], "doubtful": {}, "rationale": {}}
    keep_stated(out, ["x1", "x1_missing"])
    assert "indicator of the stated control x1" in out["rationale"]["x1_missing"]


def test_did_takes_stated_covariates_beside_unit_and_period_effects() -> None:
    import pyfixest as pf

    from whyflow.causal.estimation.designs_did import did_twfe

    rng = np.random.default_rng(5)
    panel = pd.DataFrame({"unit": np.repeat(np.arange(60), 6), "period": np.tile(np.arange(6), 60)})
    panel["d"] = ((panel["unit"] < 30) & (panel["period"] >= 3)).astype(int)
    panel["x"] = 1.5 * panel["d"] + rng.normal(size=len(panel))  # time-varying, moves with the treatment
    panel["fixed"] = panel["unit"] % 7  # absorbed by the unit effects
    panel["y"] = 2.0 * panel["d"] + 1.0 * panel["x"] + rng.normal(size=len(panel))
    est = did_twfe(panel, "unit", "period", "d", "y", covariates=panel[["x", "fixed"]])
    direct = pf.feols("y ~ d + x | unit + period", data=panel, vcov={"CRV1": "unit"})
    assert est.estimate == pytest.approx(float(direct.coef()["d"]), rel=1e-6)
    assert est.details["covariates_used"] == ["x"] and est.details["covariates_absorbed"] == ["fixed"]
    assert did_twfe(panel, "unit", "period", "d", "y").estimate > est.estimate + 1
