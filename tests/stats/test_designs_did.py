"""Difference-in-differences through pyfixest: the library's own DiD example, linearmodels, repeated cross-sections."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from whyflow.causal.estimation.designs_did import did_twfe
from whyflow.core.errors import AgentError


def _df_het(max_unit: int = 300) -> pd.DataFrame:
    """pyfixest's bundled staggered-adoption example (heterogeneous, dynamic effects), first units only."""
    import pyfixest

    frame = pd.read_csv(Path(pyfixest.__file__).parent / "did" / "data" / "df_het.csv")
    return frame[frame["unit"] <= max_unit].reset_index(drop=True)


def test_staggered_answer_is_the_two_stage_att_with_a_direct_feols_twfe_beside_it() -> None:
    import pyfixest as pf

    data = _df_het()
    est = did_twfe(data, "unit", "year", "treat", "dep_var")
    direct = pf.feols("dep_var ~ treat | unit + year", data=data, vcov={"CRV1": "unit"})
    d = est.details
    assert d["twfe"]["estimate"] == pytest.approx(float(direct.coef().iloc[0]), abs=1e-6)
    assert d["twfe"]["std_error"] == pytest.approx(float(direct.se().iloc[0]), abs=1e-6)
    assert d["twfe"]["ci"] == pytest.approx(list(direct.confint().iloc[0]), abs=1e-6)
    assert "two-stage" in est.method
    assert d["staggered_adoption"] and d["absorbing_treatment"] and "Goodman-Bacon" in d["twfe_note"]
    assert (d["n_units"], d["n_periods"], d["rows_per_unit_period"]) == (300, 31, 1)
    assert d["n_treated_units"] == data.loc[data["treat"], "unit"].nunique()
    # The file carries the truth: the outcome less unit effect, year effect and noise on treated rows.
    treated = data[data["treat"]]
    att = float((treated["dep_var"] - treated["unit_fe"] - treated["year_fe"] - treated["error"]).mean())
    two_stage = pf.did2s(
        data,
        yname="dep_var",
        first_stage="~ 0 | unit + year",
        second_stage="~ treat",
        treatment="treat",
        cluster="unit",
    )
    assert est.estimate == pytest.approx(float(two_stage.coef().iloc[0]), abs=1e-6)
    assert abs(est.estimate - att) < 2 * est.std_error
    assert abs(d["twfe"]["estimate"] - att) > 4 * d["twfe"]["std_error"]  # TWFE is biased here
    leads = [c for c in d["event_study"]["coefficients"] if c["event_time"] < 0]
    assert leads and d["event_study"]["pretrend_p"] > 0.01  # no pre-trend in the generating process


def test_event_time_intervals_use_the_headlines_t_quantile_and_name_the_pooled_ends() -> None:
    from scipy import stats

    data = _df_het()
    study = did_twfe(data, "unit", "year", "treat", "dep_var").details["event_study"]
    q = stats.t.ppf(0.975, data["unit"].nunique() - 1)
    for c in study["coefficients"]:
        assert c["ci"] == pytest.approx(
            [c["estimate"] - q * c["std_error"], c["estimate"] + q * c["std_error"]], abs=2e-6
        )
    times = [c["event_time"] for c in study["coefficients"]]
    assert (min(times), max(times)) == (-6, 8)
    start = data[data["treat"]].groupby("unit")["year"].min()
    rel = data["year"] - data["unit"].map(start)  # event time of the adopters' rows (NaN for never-treated)
    assert study["pooled_ends"] == [e for e, beyond in ((-6, (rel < -6).any()), (8, (rel > 8).any())) if beyond]


def test_balanced_panel_agrees_with_linearmodels_panelols() -> None:
    import pyfixest as pf
    from linearmodels.panel import PanelOLS

    data = _df_het(200)
    est = did_twfe(data, "unit", "year", "treat", "dep_var")
    panel = data.set_index(["unit", "year"])
    lm = PanelOLS(panel["dep_var"], panel[["treat"]].astype(float), entity_effects=True, time_effects=True).fit(
        cov_type="clustered", cluster_entity=True, group_debias=True
    )
    twfe = est.details["twfe"]  # staggered adoption: TWFE is reported beside the two-stage answer
    assert twfe["estimate"] == pytest.approx(float(lm.params["treat"]), abs=1e-6)
    # linearmodels counts the absorbed unit effects in the degrees of freedom; pyfixest, like
    # Stata's xtreg and fixest, does not when they are nested in the clusters. Counted alike they agree.
    full = pf.feols(
        "dep_var ~ treat | unit + year", data=data, vcov={"CRV1": "unit"}, ssc=pf.ssc(k_fixef="full", G_adj=True)
    )
    assert float(full.se().iloc[0]) == pytest.approx(float(lm.std_errors["treat"]), rel=1e-9)
    assert twfe["std_error"] == pytest.approx(float(lm.std_errors["treat"]), rel=0.03)


def _sites(seed: int, effect: float = -0.5, n_sites: int = 30, per_cell: int = 40) -> pd.DataFrame:
    """Repeated cross-sections: different children per site before and after; half the sites treated after."""
    rng = np.random.default_rng(seed)
    site = np.repeat(np.arange(n_sites), 2 * per_cell)
    post = np.tile(np.repeat([0, 1], per_cell), n_sites)
    arm = (np.arange(n_sites) % 2)[site]
    site_effect = rng.normal(scale=1.0, size=n_sites)[site] + 1.5 * arm
    y = site_effect + 0.8 * post + effect * arm * post + rng.normal(size=site.size)
    names = np.array([f"site-{i:02d}" for i in range(n_sites)])
    return pd.DataFrame({"siteid": names[site], "post": post, "arm_post": arm * post, "juice": y})


def test_repeated_cross_sections_with_string_units_cover_the_effect() -> None:
    import statsmodels.formula.api as smf

    covered = 0
    for seed in range(5):
        frame = _sites(seed)
        est = did_twfe(frame, "siteid", "post", "arm_post", "juice")
        covered += est.covers(-0.5)
    assert covered >= 4
    d = est.details
    assert d["rows_per_unit_period"] == 40 and d["repeated_cross_section"] and not d["staggered_adoption"]
    assert (d["n_units"], d["n_periods"], d["n_treated_units"]) == (30, 2, 15)
    dummies = smf.ols("juice ~ arm_post + C(siteid) + C(post)", data=frame).fit()
    assert est.estimate == pytest.approx(float(dummies.params["arm_post"]), rel=1e-9)


def _two_by_two(seed: int, groups: int = 2, n: int = 1200) -> pd.DataFrame:
    """Individuals surveyed once in ``groups`` regions over two years, the first half of the regions treated in
    the second; effect 1.5, no region-by-year shocks."""
    rng = np.random.default_rng(seed)
    g, year = rng.integers(groups, size=n), rng.integers(2, size=n)
    d = ((g < groups // 2) & (year == 1)).astype(int)
    y = rng.normal(size=groups)[g] + 0.7 * year + 1.5 * d + rng.normal(scale=1.5, size=n)
    return pd.DataFrame({"region": [f"r{k}" for k in g], "year": 2019 + year, "treated": d, "outcome": y})


def test_a_few_groups_of_individuals_get_row_level_robust_errors() -> None:
    import pyfixest as pf
    import statsmodels.formula.api as smf

    frame = _two_by_two(0)
    clustered = pf.feols("outcome ~ treated | region + year", data=frame, vcov={"CRV1": "region"})
    assert float(clustered.se().iloc[0]) < 1e-6  # two clusters: each one's score sums to zero
    for stated in (True, False):  # --group/--period, or --unit naming the two regions
        est = did_twfe(frame, "region", "year", "treated", "outcome", cross_section=stated)
        hc1 = smf.ols("outcome ~ treated + C(region) + C(year)", data=frame).fit(cov_type="HC1")
        assert est.estimate == pytest.approx(float(hc1.params["treated"]), rel=1e-9)
        assert est.std_error == pytest.approx(float(hc1.bse["treated"]), rel=0.01)
        assert "row level" in est.details["se_method"] and "2 groups" in est.details["row_level_errors"]
        assert est.details.get("repeated_cross_section_stated", False) is stated
        assert "permutation" not in est.details  # one treated region is not one treated unit of a panel
    covered = sum(
        did_twfe(_two_by_two(s, 4), "region", "year", "treated", "outcome", cross_section=True).covers(1.5)
        for s in range(8)
    )
    assert covered >= 7


def test_many_groups_of_individuals_and_a_panel_of_few_units_keep_errors_clustered() -> None:
    est = did_twfe(_sites(0), "siteid", "post", "arm_post", "juice", cross_section=True)
    assert est.details["se_method"] == "clustered by unit" and "row_level_errors" not in est.details
    # Six firms over twelve years with an odd repeated row: a panel, not groups of individuals.
    rng = np.random.default_rng(3)
    firm, year = np.repeat(np.arange(6), 12), np.tile(np.arange(12), 6)
    d = ((firm < 3) & (year >= 6)).astype(int)
    panel = pd.DataFrame({"firm": firm, "year": year, "d": d, "y": firm + 0.1 * year + d + rng.normal(size=72)})
    panel = pd.concat([panel, panel.iloc[:4]], ignore_index=True)
    assert "row_level_errors" not in did_twfe(panel, "firm", "year", "d", "y").details


def test_treatment_fixed_within_unit_is_refused_with_the_reason() -> None:
    frame = _sites(0)
    frame["arm"] = frame["siteid"].str[-1].astype(int) % 2  # the site's arm, also 1 before treatment
    with pytest.raises(AgentError, match="never changes within a unit of 'siteid'.*absorb"):
        did_twfe(frame, "siteid", "post", "arm", "juice")
    frame["child"] = np.arange(len(frame))  # individuals, each seen once
    with pytest.raises(AgentError, match="seen in one period.*group the units belong to"):
        did_twfe(frame, "child", "post", "arm_post", "juice")
    frame["everyone_after"] = frame["post"]
    with pytest.raises(AgentError, match="period effects absorb it"):
        did_twfe(frame, "siteid", "post", "everyone_after", "juice")


def test_single_treated_unit_is_estimated_and_flagged() -> None:
    rng = np.random.default_rng(1)
    units, periods = np.repeat(np.arange(27), 6), np.tile(np.arange(6), 27)
    d = ((units == 4) & (periods >= 3)).astype(int)
    y = rng.normal(size=27)[units] + 0.1 * periods - 0.02 * d + rng.normal(scale=0.01, size=units.size)
    frame = pd.DataFrame({"state": units.astype(str), "quarter": periods, "active": d, "rate": y})
    est = did_twfe(frame, "state", "quarter", "active", "rate")
    assert est.details["single_treated_unit"] and est.details["n_treated_units"] == 1
    assert any("one treated unit" in a for a in est.assumptions)
    assert np.isfinite(est.estimate)
    frame["active"] = np.where(d == 1, "yes", "no")  # a text treatment is encoded as the other estimators encode it
    assert did_twfe(frame, "state", "quarter", "active", "rate").estimate == pytest.approx(est.estimate, rel=1e-12)


def test_did2s_check_runs_when_every_unit_adopts_and_the_last_periods_are_all_treated() -> None:
    """No never-treated unit, all treated at the end: the check uses the periods that have untreated rows."""
    rng = np.random.default_rng(2)
    n_units, n_periods = 40, 12
    start = rng.integers(3, 10, n_units)
    units, periods = np.repeat(np.arange(n_units), n_periods), np.tile(np.arange(n_periods), n_units)
    d = (periods >= start[units]).astype(int)
    y = rng.normal(size=n_units)[units] + 0.3 * periods + 2.0 * d + rng.normal(scale=0.5, size=units.size)
    est = did_twfe(
        pd.DataFrame({"agency": units, "year": periods, "compstat": d, "arrests": y}),
        "agency",
        "year",
        "compstat",
        "arrests",
    )
    check = est.details["did2s_check"]
    assert est.details["n_never_treated_units"] == 0 and "error" not in check
    assert abs(check["estimate"] - 2.0) < 3 * check["std_error"] and check["n_rows"] < len(units)
