"""An imputed confounder: the complete-case check (agree -> settled, disagree -> open) and the estimators'
complete cases (the rows where it was measured, with a check that the outcome does not predict the gaps)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from whyflow.causal.diagnostics import ConfounderDiscovery
from whyflow.causal.review.complete_case import OUTCOME_P, complete_case_check, complete_case_frame
from whyflow.causal.review.doubts import complete_case_settled


def _imputed(n: int, seed: int, strength: float, outcome_led: float = 0.0) -> pd.DataFrame:
    """Effect 2; income confounds with ``strength``. A random quarter of it is missing, filled with the
    median and flagged, as data repair does: on those rows nothing adjusts for it."""
    rng = np.random.default_rng(seed)
    income = rng.normal(size=n)
    age = rng.normal(size=n)
    t = strength * income + 0.3 * age + rng.normal(size=n)
    y = 2.0 * t + 2 * strength * income + 0.5 * age + rng.normal(size=n)
    gone = rng.random(n) < 1 / (1 + np.exp(-(-1.1 + outcome_led * (y - y.mean()) / y.std())))  # 25% at 0
    observed = np.where(gone, np.nan, income)
    filled = np.where(gone, np.nanmedian(observed), observed)
    return pd.DataFrame({"t": t, "y": y, "age": age, "income": filled, "income_missing": gone.astype("int8")})


ADJUST = ["age", "income", "income_missing"]


def test_a_weak_imputed_confounder_agrees_and_is_settled() -> None:
    check = complete_case_check(_imputed(3000, 0, strength=0.1), "t", "y", ADJUST)
    assert set(check) == {"income"}
    r = check["income"]
    assert 0.2 < r["share_imputed"] < 0.3 and r["n_complete"] > 2000
    assert abs(r["without"] - 2.0) < 3 * r["se_without"]  # the complete cases recover the effect
    assert complete_case_settled(ConfounderDiscovery(complete_case=check)) == {"income"}


def test_imputation_that_moves_the_answer_stays_open() -> None:
    check = complete_case_check(_imputed(3000, 0, strength=1.5), "t", "y", ADJUST)
    r = check["income"]
    assert abs(r["without"] - 2.0) < 3 * r["se_without"]
    assert abs(r["with"] - 2.0) > 5 * r["se_with"]  # the filled median leaves a quarter of the rows confounded
    assert complete_case_settled(ConfounderDiscovery(complete_case=check)) == set()


def test_no_indicator_no_check() -> None:
    frame = _imputed(500, 1, strength=0.5)
    assert complete_case_check(frame, "t", "y", ["age", "income"]) == {}
    assert complete_case_settled(ConfounderDiscovery()) == set()


def _ols_effect(frame: pd.DataFrame, covariates: list[str]) -> tuple[float, float]:
    import statsmodels.api as sm

    sub = frame[["t", "y", *covariates]].dropna()
    fit = sm.OLS(sub["y"], sm.add_constant(sub[["t", *covariates]])).fit(cov_type="HC1")
    return float(fit.params["t"]), float(fit.bse["t"])


def test_the_complete_cases_cover_the_effect_where_the_filled_median_does_not() -> None:
    """Over 40 seeds: the regression on the estimators' complete cases covers the effect about 95% of the
    time; the missing-indicator regression on all rows (median fill + flag) almost never."""
    covered = {"complete": 0, "filled": 0}
    for seed in range(40):
        frame = _imputed(1500, seed, strength=1.0)
        masked, covariates, info = complete_case_frame(frame, "t", "y", ADJUST)
        assert covariates == ["age", "income"] and set(info) == {"income"}
        assert masked is not frame and frame["income"].notna().all()  # the caller's frame is unchanged
        assert info["income"]["n_complete"] == int((frame["income_missing"] == 0).sum())
        for key, (data, cols) in {"complete": (masked, covariates), "filled": (frame, ADJUST)}.items():
            est, se = _ols_effect(data, cols)
            covered[key] += abs(est - 2.0) <= 1.96 * se
    assert covered["complete"] >= 35, covered
    assert covered["filled"] <= 10, covered


def test_gaps_the_outcome_predicts_are_named_and_random_ones_are_not() -> None:
    flagged = {0.0: 0, 1.0: 0}
    for seed in range(20):
        for led in flagged:
            _, _, info = complete_case_frame(_imputed(2000, seed, 1.0, outcome_led=led), "t", "y", ADJUST)
            p = info["income"]["outcome_p"]
            assert p is not None
            flagged[led] += p < OUTCOME_P
    assert flagged[0.0] <= 2 and flagged[1.0] >= 18, flagged


def test_a_confounder_without_its_indicator_is_left_as_it_is() -> None:
    frame = _imputed(500, 1, strength=0.5)
    masked, covariates, info = complete_case_frame(frame, "t", "y", ["age", "income"])
    assert masked is frame and covariates == ["age", "income"] and info == {}
