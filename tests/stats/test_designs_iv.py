"""2SLS with a rank-deficient control set: collinear controls dropped and named, as Stata and fixest do."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from whyflow.causal.estimation.designs_iv import anderson_rubin_ci, controls_spanning_instrument, iv_2sls
from whyflow.core.errors import AgentError


def _wages(seed: int, n: int = 4000, effect: float = 0.08) -> tuple[pd.DataFrame, float]:
    """Schooling instrumented by a randomised subsidy; the file also has experience = age - schooling - 6.

    Ability (unobserved) raises schooling and wages, so OLS is biased; the subsidy is independent
    of ability. Age is fixed before schooling; experience is derived from it. The effect is
    constant, so the LATE given age equals ``effect``.
    """
    rng = np.random.default_rng(seed)
    ability = rng.normal(size=n)
    subsidy = rng.binomial(1, 0.5, n)
    age = rng.integers(25, 60, n).astype(float)
    school = np.round(12 + 1.5 * subsidy + 1.2 * ability + rng.normal(size=n))
    logwage = 1.0 + effect * school + 0.01 * age + 0.3 * ability + rng.normal(0, 0.3, n)
    frame = pd.DataFrame({"age": age, "exper": age - school - 6, "school": school, "subsidy": subsidy})
    frame["logwage"] = logwage
    return frame, effect


def _fit(frame: pd.DataFrame, controls: list[str], instrument: str = "subsidy"):  # type: ignore[no-untyped-def]
    y, t, z = (frame[c].to_numpy(float) for c in ("logwage", "school", instrument))
    return iv_2sls(y, t, z, frame[controls], instrument, "school")


def test_experience_as_age_minus_schooling_is_dropped_named_and_the_late_recovered() -> None:
    from linearmodels.iv import IV2SLS

    frame, effect = _wages(0)
    with pytest.raises(ValueError, match="full column rank"):  # what the fit did before: the design was lost
        exog = frame[["exper", "age"]].assign(const=1.0)
        IV2SLS(frame["logwage"], exog, frame["school"], frame["subsidy"]).fit()
    est = _fit(frame, ["exper", "age"])
    assert est.details["dropped_collinear"] == ["exper"] and est.details["controls_used"] == ["age"]
    assert est.details["dropped_collinear_with_treatment"] == ["exper"]
    assert any("exper" in a and "dropped" in a for a in est.assumptions)
    assert est.covers(effect) and est.details["first_stage_f"] > 100
    assert _fit(frame, ["age", "exper"]).estimate == est.estimate  # the column order does not decide
    # Identical to linearmodels on the kept control.
    kept = frame[["age"]].assign(const=1.0)
    direct = IV2SLS(frame["logwage"], kept, frame["school"], frame["subsidy"]).fit(cov_type="robust")
    assert est.estimate == pytest.approx(float(direct.params["school"]), rel=1e-10)
    assert est.std_error == pytest.approx(float(direct.std_errors["school"]), rel=1e-10)
    # The first stage without controls, beside the partial one: a randomised subsidy loses little to age.
    alone = float(np.corrcoef(frame["school"], frame["subsidy"])[0, 1] ** 2)
    assert est.details["first_stage_r2_alone"] == pytest.approx(alone, abs=1e-4)
    assert est.details["first_stage_partial_r2"] > 0.5 * alone


def test_a_control_that_carries_the_instrument_is_named_and_absorbs_its_first_stage() -> None:
    rng = np.random.default_rng(5)
    n = 3000
    enrolment = rng.normal(size=n)
    z = enrolment + 0.3 * rng.normal(size=n)  # the instrument is mostly its source
    t = z + rng.normal(size=n)
    y = 0.5 * t + enrolment + rng.normal(size=n)
    frame = pd.DataFrame({"enrolment": enrolment, "noise": rng.normal(size=n)})

    est = iv_2sls(y, t, z, frame, "z")
    assert est.details["instrument_explained_by"] == ["enrolment"]
    assert est.details["first_stage_partial_r2"] < 0.5 * est.details["first_stage_r2_alone"]


def test_coverage_over_seeds_and_ols_is_biased() -> None:
    import statsmodels.api as sm

    covered, ols_misses = 0, 0
    for seed in range(1, 6):
        frame, effect = _wages(seed)
        covered += _fit(frame, ["age", "exper"]).covers(effect)
        ols = sm.OLS(frame["logwage"], sm.add_constant(frame[["school", "age"]])).fit(cov_type="HC1")
        lo, hi = ols.conf_int().loc["school"]
        ols_misses += not lo <= effect <= hi
    assert covered >= 4 and ols_misses == 5


def test_treatment_copy_constant_column_and_non_finite_rows() -> None:
    frame, effect = _wages(7)
    frame["school_months"] = 12 * frame["school"]  # a copy of the treatment in other units
    frame["country"] = 1.0  # constant
    frame["age_months"] = 12 * frame["age"] + 3  # redundant with age: dropped whichever comes first
    frame.loc[:4, "age"] = np.inf
    est = _fit(frame, ["school_months", "country", "age", "age_months"])
    assert est.details["dropped_collinear"] == ["school_months", "age_months"]
    assert est.details["dropped_collinear_with_treatment"] == ["school_months"]
    assert est.details["dropped_constant"] == ["country"] and est.details["rows_dropped_nonfinite"] == 5
    assert est.covers(effect)


def test_an_instrument_that_is_a_function_of_the_controls_is_refused() -> None:
    frame, _ = _wages(8)
    frame["no_subsidy"] = 1 - frame["subsidy"]
    with pytest.raises(
        AgentError, match="instrument 'subsidy' is an exact linear function of the controls.*no_subsidy"
    ):
        _fit(frame, ["age", "no_subsidy"])
    z = frame["subsidy"].to_numpy(float)
    assert controls_spanning_instrument(z, frame[["age", "no_subsidy"]]) == ["no_subsidy"]
    assert controls_spanning_instrument(z, frame[["age", "exper"]]) is None
    frame["flat"] = 3.0
    with pytest.raises(AgentError, match="single value"):
        _fit(frame, ["age"], instrument="flat")


def test_anderson_rubin_set_matches_a_grid_of_robust_tests() -> None:
    """The closed-form AR set equals where a grid of HC1 t-tests of the instrument does not reject."""
    import statsmodels.api as sm

    rng = np.random.default_rng(3)
    n = 600
    u, x, z = rng.normal(size=(3, n))
    t = 0.12 * z + 0.3 * x + u + rng.normal(size=n)  # a weak instrument
    y = 1.0 * t + x + 2 * u + rng.normal(size=n)
    X = pd.DataFrame({"x": x})
    est = iv_2sls(y, t, z, X, "z")
    assert est.details["weak_instrument"] and est.details["first_stage_f"] < 10
    ar = anderson_rubin_ci(y, t, z, X)
    grid = np.linspace(-15, 15, 3001)
    design = sm.add_constant(np.column_stack([x, z]))
    accepted = np.array(
        [abs(sm.OLS(y - b * t, design).fit(cov_type="HC1").tvalues[2]) <= 1.959963984540054 for b in grid]
    )
    if ar["kind"] == "interval":
        inside = (grid >= ar["lower"]) & (grid <= ar["upper"])
    elif ar["kind"] == "the line outside an interval":
        inside = (grid <= ar["excluded_lower"]) | (grid >= ar["excluded_upper"])
    else:
        inside = np.ones_like(grid, dtype=bool)
    assert (accepted == inside).mean() > 0.998  # grid points at the boundary may round either way
    assert inside[np.argmin(abs(grid - 1.0))]  # the true effect is in the set


def _two_instruments(seed: int, invalid: float = 0.0, n: int = 3000) -> pd.DataFrame:
    """Schooling moved by a randomised subsidy and by distance; ``invalid`` lets distance move wages directly."""
    rng = np.random.default_rng(seed)
    ability, subsidy, distance = rng.normal(size=n), rng.binomial(1, 0.5, n), rng.normal(size=n)
    school = 12 + 1.0 * subsidy - 0.6 * distance + 1.2 * ability + rng.normal(size=n)
    logwage = 1.0 + 0.08 * school + 0.3 * ability + invalid * distance + rng.normal(0, 0.3, n)
    return pd.DataFrame({"subsidy": subsidy, "distance": distance, "school": school, "logwage": logwage})


def test_several_instruments_report_joint_f_and_the_overidentification_test() -> None:
    from linearmodels.iv import IV2SLS

    f = _two_instruments(0)
    z = f[["subsidy", "distance"]].to_numpy(float)
    est = iv_2sls(
        f["logwage"].to_numpy(), f["school"].to_numpy(), z, pd.DataFrame(index=f.index), ["subsidy", "distance"]
    )
    direct = IV2SLS.from_formula("logwage ~ 1 + [school ~ subsidy + distance]", f).fit(cov_type="robust")
    assert est.estimate == pytest.approx(float(direct.params["school"]), rel=1e-10)
    d = est.details
    assert d["first_stage_f"] == pytest.approx(float(direct.first_stage.diagnostics["f.stat"].iloc[0]) / 2, rel=1e-3)
    assert d["instruments"] == ["subsidy", "distance"] and d["overidentification_p"] > 0.05
    assert d["overidentification"]["sargan"]["df"] == 1
    assert est.covers(0.08) and "joint first-stage F" in est.assumptions[0]
    bad = _two_instruments(0, invalid=0.1)
    zb = bad[["subsidy", "distance"]].to_numpy(float)
    rejected = iv_2sls(
        bad["logwage"].to_numpy(), bad["school"].to_numpy(), zb, pd.DataFrame(index=bad.index), ["subsidy", "distance"]
    )
    assert rejected.details["overidentification_p"] < 0.001
