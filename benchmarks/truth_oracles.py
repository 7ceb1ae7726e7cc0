"""The oracle of the truth benchmark: per kind, the estimator a statistician who knows the DGP uses.

Why: a 95% interval misses the truth in about 5% of samples however good the method, so a
recipe coverage of 85% on 20 seeds is no evidence on its own. The oracle answers "is the recipe
worse than the best achievable estimator on the same samples, or is the gap sampling noise?":
each oracle is correctly specified for its generator in ``benchmarks/truth_kinds.py`` (the true
adjustment set and functional form, the design's own estimator), so its misses are the samples'.

Every oracle is ``(n, seed) -> (estimate, lo, hi)``, a 95% interval, on exactly the data that
``make(kind, seed, n)`` hands the recipe (messy_data: on the clean values behind it). Regression
oracles use the true outcome model (confounders and outcome-only causes, which is correctly
specified and the most precise) with HC1 standard errors and normal intervals.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd
import statsmodels.api as sm

from benchmarks.truth_kinds import DEFAULT_N, KINDS, make, messy_clean

__all__ = ["ORACLES", "ORACLE_NOTES", "Interval", "oracle"]

Interval = tuple[float, float, float]


def _ols(frame: pd.DataFrame, outcome: str, regressors: Sequence[str], treatment: str = "treated") -> Interval:
    """OLS of ``outcome`` on the treatment and ``regressors`` (HC1); the treatment's coefficient."""
    x = sm.add_constant(frame[[treatment, *regressors]].astype(float), has_constant="add")
    fit = sm.OLS(frame[outcome].astype(float), x).fit(cov_type="HC1")
    lo, hi = fit.conf_int(0.05).loc[treatment]
    return float(fit.params[treatment]), float(lo), float(hi)


def _frame(kind: str, n: int, seed: int) -> pd.DataFrame:
    return KINDS[kind](n, seed).frame


def rct(n: int, seed: int) -> Interval:
    """OLS on the treatment and the three outcome causes (the true outcome model, ANCOVA; HC1).

    The difference in means with a Neyman SE is also unbiased but about 1.6 times as wide here,
    and the recipe adjusts for the covariates: it would not be the best achievable interval.
    """
    return _ols(_frame("rct", n, seed), "outcome", ["age_z", "score0", "income_z"])


def semi_synthetic_sites(n: int, seed: int) -> Interval:
    """OLS on the outcome's ten causes (x1-x3, b1 and sites b, d confound; x4, x5, b2, site e add precision)."""
    return _ols(
        _frame("semi_synthetic_sites", n, seed),
        "outcome",
        ["x1", "x2", "x3", "x4", "x5", "b1", "b2", "site_b", "site_d", "site_e"],
    )


def continuous_instrument(n: int, seed: int) -> Interval:
    """2SLS of lwage on educ instrumented by near_college, exper exogenous (robust SEs)."""
    from linearmodels.iv import IV2SLS

    f = _frame("continuous_instrument", n, seed)
    fit = IV2SLS.from_formula("lwage ~ 1 + exper + [educ ~ near_college]", f).fit(cov_type="robust")
    lo, hi = fit.conf_int(0.95).loc["educ"]
    return float(fit.params["educ"]), float(lo), float(hi)


def nonlinear_confounding(n: int, seed: int) -> Interval:
    """OLS with the true outcome model: x1, x2, x3·x4, x5 (x2² moves only the propensity)."""
    f = _frame("nonlinear_confounding", n, seed)
    f["x3x4"] = f["x3"] * f["x4"]
    return _ols(f, "outcome", ["x1", "x2", "x3x4", "x5"])


def messy_data(n: int, seed: int) -> Interval:
    """OLS on x1, x2, x3 of the clean values, regenerated before the messing (no duplicates, no ×100)."""
    clean, _ = messy_clean(n, seed)
    return _ols(clean, "outcome", ["x1", "x2", "x3"])


def null_with_collider(n: int, seed: int) -> Interval:
    """OLS on x1, x2 (confounders) and x3 (outcome only), excluding the collider m."""
    return _ols(_frame("null_with_collider", n, seed), "outcome", ["x1", "x2", "x3"])


def poor_overlap(n: int, seed: int) -> Interval:
    """OLS with the true outcome model (x1, x2) on the full sample, no trimming."""
    return _ols(_frame("poor_overlap", n, seed), "outcome", ["x1", "x2"])


def linear_10k(n: int, seed: int) -> Interval:
    """OLS on the ten confounders x1-x10."""
    return _ols(_frame("linear_10k", n, seed), "outcome", [f"x{i + 1}" for i in range(10)])


def change_score(n: int, seed: int) -> Interval:
    """OLS of the gain on the treatment, age and weight0 (never weight1)."""
    return _ols(_frame("change_score", n, seed), "gain", ["age", "weight0"])


def did_panel(n: int, seed: int) -> Interval:
    """TWFE: PanelOLS with unit and period effects, standard errors clustered by unit."""
    from linearmodels.panel import PanelOLS

    f = _frame("did_panel", n, seed).set_index(["unit", "period"])
    fit = PanelOLS(f["outcome"], f[["treated"]].astype(float), entity_effects=True, time_effects=True)
    res = fit.fit(cov_type="clustered", cluster_entity=True)
    lo, hi = res.conf_int(0.95).loc["treated"]
    return float(res.params["treated"]), float(lo), float(hi)


def sharp_rdd(n: int, seed: int) -> Interval:
    """The true functional form over the full support [-1, 1]: OLS on treated, s, s², w (HC1).

    The DGP's outcome is ``1 + 0.8 s + 0.6 s² + effect·t + 0.5 w``: one quadratic in the centred
    score on both sides, so the treatment's coefficient is the jump at the cutoff.
    """
    case = make("sharp_rdd", seed, n)
    f = case.frame.copy()
    f["s"] = f["score"] - case.args["cutoff"]
    f["s2"] = f["s"] ** 2
    return _ols(f, "outcome", ["s", "s2", "w"])


def many_covariates(n: int, seed: int) -> Interval:
    """OLS on the 6 confounders v00-v05 and the 10 outcome-only causes v06-v15 (not the 40 noise columns)."""
    return _ols(_frame("many_covariates", n, seed), "outcome", [f"v{i:02d}" for i in range(16)])


def small_n(n: int, seed: int) -> Interval:
    """OLS on x1, x2 (confounders) and x3 (outcome only) at n = 300."""
    return _ols(_frame("small_n", n, seed), "outcome", ["x1", "x2", "x3"])


def row_index(n: int, seed: int) -> Interval:
    """OLS on x1, x2 (confounders) and x3 (outcome only), never the row index or the id."""
    return _ols(_frame("row_index", n, seed), "outcome", ["x1", "x2", "x3"])


def log_outcome(n: int, seed: int) -> Interval:
    """OLS of log wage on schooling and experience (never the wage level)."""
    return _ols(_frame("log_outcome", n, seed), "log_wage", ["educ", "exper"])


def outcome_parts(n: int, seed: int) -> Interval:
    """OLS of the total on x1, x2 and x3 (never the sub-scores)."""
    return _ols(_frame("outcome_parts", n, seed), "total_score", ["x1", "x2", "x3"])


def followup_outcome(n: int, seed: int) -> Interval:
    """OLS on x1, x2 and x3 (never the follow-up outcome)."""
    return _ols(_frame("followup_outcome", n, seed), "outcome", ["x1", "x2", "x3"])


def treatment_copies(n: int, seed: int) -> Interval:
    """OLS on x1, x2 and x3 (never the treatment's copy or its interaction)."""
    return _ols(_frame("treatment_copies", n, seed), "outcome", ["x1", "x2", "x3"])


def rct_post_treatment(n: int, seed: int) -> Interval:
    """OLS on the three baseline covariates (ANCOVA; never the post-treatment survey)."""
    return _ols(_frame("rct_post_treatment", n, seed), "outcome", ["age_z", "score0", "income_z"])


def survey_score(n: int, seed: int) -> Interval:
    """OLS of the score on x1, x2 and x3 among respondents (never the answers)."""
    return _ols(_frame("survey_score", n, seed).dropna(subset=["score"]), "score", ["x1", "x2", "x3"])


def rct_outcome_report(n: int, seed: int) -> Interval:
    """OLS on the four baseline covariates (ANCOVA; never the reported outcome)."""
    frame = _frame("rct_outcome_report", n, seed)
    return _ols(frame, "outcome", ["age_z", "score0", "income_z", "visits0"])


def iv_treatment_copy(n: int, seed: int) -> Interval:
    """2SLS of lwage on educ instrumented by near_college, exper exogenous (never the reported schooling)."""
    from linearmodels.iv import IV2SLS

    f = _frame("iv_treatment_copy", n, seed)
    fit = IV2SLS.from_formula("lwage ~ 1 + exper + [educ ~ near_college]", f).fit(cov_type="robust")
    lo, hi = fit.conf_int(0.95).loc["educ"]
    return float(fit.params["educ"]), float(lo), float(hi)


def did_one_treated(n: int, seed: int) -> Interval:
    """TWFE with placebo-in-space permutation inference over the states (interval by test inversion)."""
    from whyflow.causal.estimation.designs_did import did_panel
    from whyflow.causal.estimation.did_permutation import placebo_in_space

    perm = placebo_in_space(did_panel(_frame("did_one_treated", n, seed), "state", "quarter", "treated", "outcome"))
    lo, hi = perm["ci"]
    return float(perm["estimate"]), float(lo), float(hi)


def imputed_confounder(n: int, seed: int) -> Interval:
    """OLS on age and income among the rows where income was measured (complete cases)."""
    return _ols(_frame("imputed_confounder", n, seed).dropna(subset=["income"]), "outcome", ["age", "income"])


def trial_attrition(n: int, seed: int) -> Interval:
    """OLS on x1, x2 and x3 among the rows with an outcome (never the follow-up measurements)."""
    return _ols(_frame("trial_attrition", n, seed).dropna(subset=["outcome"]), "outcome", ["x1", "x2", "x3"])


def outcome_baseline(n: int, seed: int) -> Interval:
    """OLS on the baseline of the outcome and the other causes of the outcome (region as dummies; skills_score, the mediator, left out)."""
    case = KINDS["outcome_baseline"](n, seed)
    f = pd.get_dummies(case.frame, columns=["region"], drop_first=True, dtype=float)
    base = "re75" if "re75" in f.columns else "earnings_lag"
    causes = ["age", "education_years", base, "married", *[c for c in f if c.startswith("region_")]]
    return _ols(f, case.args["outcome"], causes, "training")


def treatment_aliases(n: int, seed: int) -> Interval:
    """OLS on x1, x2 and x3 (never the arm's label or 1 - treated)."""
    return _ols(_frame("treatment_aliases", n, seed), "outcome", ["x1", "x2", "x3"])


def dummies_beside_categorical(n: int, seed: int) -> Interval:
    """OLS on x1, x2, x3 and the city as four dummies (one representation of it, city A the reference)."""
    f = _frame("dummies_beside_categorical", n, seed)
    return _ols(f, "outcome", ["x1", "x2", "x3", "city_B", "city_C", "city_D", "city_E"])


def ratio_outcome(n: int, seed: int) -> Interval:
    """OLS of revenue per worker on x1, x2 and the firm's size (never the revenue it is computed from)."""
    return _ols(_frame("ratio_outcome", n, seed), "revenue_per_worker", ["x1", "x2", "workers"])


def numeric_identifier(n: int, seed: int) -> Interval:
    """OLS on x1, x2 and x3 (never the registry code)."""
    return _ols(_frame("numeric_identifier", n, seed), "outcome", ["x1", "x2", "x3"])


def unit_rows_repeated(n: int, seed: int) -> Interval:
    """OLS on one row per country: the partnership level, gdp and democracy (HC1), never the donor rows."""
    f = _frame("unit_rows_repeated", n, seed).drop_duplicates("country_code")
    return _ols(f, "aid_log", ["gdp_log", "democracy"], treatment="partnership")


def stated_controls(n: int, seed: int) -> Interval:
    """OLS on the stated confounders and the three outcome-only causes (the true outcome model; HC1)."""
    return _ols(_frame("stated_controls", n, seed), "outcome", ["x1", "x2", "w1", "w2", "w3"])


def clustered_trial(n: int, seed: int) -> Interval:
    """OLS on the treatment and the pupil covariate, errors clustered by school (CR1)."""
    frame = _frame("clustered_trial", n, seed)
    x = sm.add_constant(frame[["treated", "prior"]].astype(float), has_constant="add")
    groups = pd.factorize(frame["school"])[0]
    fit = sm.OLS(frame["outcome"].astype(float), x).fit(cov_type="cluster", cov_kwds={"groups": groups})
    lo, hi = fit.conf_int(0.05).loc["treated"]
    return float(fit.params["treated"]), float(lo), float(hi)


def subgroup_effect(n: int, seed: int) -> Interval:
    """OLS among women on the treatment and the outcome's other cause (HC1)."""
    frame = _frame("subgroup_effect", n, seed)
    return _ols(frame[frame["sex"] == "f"], "outcome", ["age_z"])


def did_repeated_cross_section(n: int, seed: int) -> Interval:
    """OLS on region and year dummies and the treatment, row-level HC1 errors (no region-by-year shocks)."""
    f = _frame("did_repeated_cross_section", n, seed)
    f = pd.get_dummies(f, columns=["region", "year"], drop_first=True, dtype=float)
    return _ols(f, "outcome", [c for c in f if c.startswith(("region_", "year_"))])


def fuzzy_rdd(n: int, seed: int) -> Interval:
    """2SLS of the outcome on take-up instrumented by crossing the cutoff, with the true score terms (s, s²)."""
    from linearmodels.iv import IV2SLS

    f = _frame("fuzzy_rdd", n, seed).assign(above=lambda d: (d["score"] >= 0).astype(float))
    f["score2"] = f["score"] ** 2
    fit = IV2SLS.from_formula("outcome ~ 1 + score + score2 + [treated ~ above]", f).fit(cov_type="robust")
    lo, hi = fit.conf_int(0.95).loc["treated"]
    return float(fit.params["treated"]), float(lo), float(hi)


def two_instruments(n: int, seed: int) -> Interval:
    """2SLS of lwage on educ instrumented by near_college and tuition, exper exogenous (robust SEs)."""
    from linearmodels.iv import IV2SLS

    f = _frame("two_instruments", n, seed)
    fit = IV2SLS.from_formula("lwage ~ 1 + exper + [educ ~ near_college + tuition]", f).fit(cov_type="robust")
    lo, hi = fit.conf_int(0.95).loc["educ"]
    return float(fit.params["educ"]), float(lo), float(hi)


def invalid_instrument(n: int, seed: int) -> Interval:
    """2SLS instrumented by near_college alone, tuition (which moves wages directly) and exper as controls."""
    from linearmodels.iv import IV2SLS

    f = _frame("invalid_instrument", n, seed)
    fit = IV2SLS.from_formula("lwage ~ 1 + exper + tuition + [educ ~ near_college]", f).fit(cov_type="robust")
    lo, hi = fit.conf_int(0.95).loc["educ"]
    return float(fit.params["educ"]), float(lo), float(hi)


def staggered_did(n: int, seed: int) -> Interval:
    """Gardner's two-stage DiD (pyfixest did2s, errors clustered by firm): heterogeneity-robust, unlike TWFE."""
    import pyfixest as pf

    f = _frame("staggered_did", n, seed).assign(treat=lambda x: x["treated"] == 1)
    fit = pf.did2s(f, "outcome", "~ 0 | firm + year", "~ treat", treatment="treat", cluster="firm")
    est, se = float(fit.coef().iloc[0]), float(fit.se().iloc[0])
    return est, est - 1.96 * se, est + 1.96 * se


ORACLES: dict[str, Callable[[int, int], Interval]] = {
    "staggered_did": staggered_did,
    "rct": rct,
    "semi_synthetic_sites": semi_synthetic_sites,
    "continuous_instrument": continuous_instrument,
    "nonlinear_confounding": nonlinear_confounding,
    "messy_data": messy_data,
    "null_with_collider": null_with_collider,
    "poor_overlap": poor_overlap,
    "linear_10k": linear_10k,
    "change_score": change_score,
    "did_panel": did_panel,
    "sharp_rdd": sharp_rdd,
    "many_covariates": many_covariates,
    "small_n": small_n,
    "row_index": row_index,
    "log_outcome": log_outcome,
    "outcome_parts": outcome_parts,
    "followup_outcome": followup_outcome,
    "treatment_copies": treatment_copies,
    "rct_post_treatment": rct_post_treatment,
    "survey_score": survey_score,
    "rct_outcome_report": rct_outcome_report,
    "iv_treatment_copy": iv_treatment_copy,
    "did_one_treated": did_one_treated,
    "imputed_confounder": imputed_confounder,
    "trial_attrition": trial_attrition,
    "outcome_baseline": outcome_baseline,
    "stated_controls": stated_controls,
    "clustered_trial": clustered_trial,
    "subgroup_effect": subgroup_effect,
    "did_repeated_cross_section": did_repeated_cross_section,
    "fuzzy_rdd": fuzzy_rdd,
    "two_instruments": two_instruments,
    "invalid_instrument": invalid_instrument,
    "treatment_aliases": treatment_aliases,
    "dummies_beside_categorical": dummies_beside_categorical,
    "ratio_outcome": ratio_outcome,
    "numeric_identifier": numeric_identifier,
    "unit_rows_repeated": unit_rows_repeated,
}
"""Kind name -> ``(n, seed) -> (estimate, lo, hi)``, the correctly specified 95% interval."""

ORACLE_NOTES: dict[str, str] = {k: (f.__doc__ or "").strip().splitlines()[0] for k, f in ORACLES.items()}
"""Kind name -> one line saying which estimator its oracle is."""


def oracle(kind: str, seed: int, n: int | None = None) -> Interval:
    """The oracle's interval on ``make(kind, seed, n)`` (the kind's default size when None)."""
    return ORACLES[kind](n or DEFAULT_N[kind], seed)
