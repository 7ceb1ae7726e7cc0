"""Kinds of data with a known true effect, for the truth benchmark and its fast tests.

Why: the recipe must be right on data the test suite has never seen (issue 9). Each kind
reproduces one way real data goes wrong for a causal tool: an experiment with nothing to adjust
for, wide semi-synthetic covariates with one-hot site dummies, a continuous treatment with an
instrument, confounding through a square and an interaction, messy numbers, a null effect with a
collider, poor overlap, plain linear confounding at 10,000 rows, an outcome that is a change
score with both parts present, a DiD panel, a sharp discontinuity, 50+ covariates, n = 300, and a
confounder missing for a quarter of the rows.
Ten more each put one tempting column in the file that must never be a covariate (``TEMPTING``):
a row index and an id, the outcome's level next to its log, the parts of a total score, a second
outcome measured later, copies of the treatment, a post-treatment survey in a randomised trial, the
answers a score is summed from, recorded only where the score is, a self-reported copy of the
outcome in a trial the metadata does not call one, a reported copy of an instrumented treatment, and
measurements recorded at follow-up, missing with the outcome for those lost to it. Four more repeat
a column in a form the content rules must read (issue 36): a label of the arm and 1 - treatment, a
categorical beside its own dummies, a ratio outcome beside its numerator and divisor, and a
numeric registry code named like no identifier. One more puts a
baseline of the outcome in the file under a name that contains the outcome's: the column that must
be adjusted for. Three state the analyst's specification (issue 36): the right controls, where the
recipe's own choice differs (``--controls``); a cluster-randomised trial whose errors must be
clustered (``--cluster``); a subgroup with its own effect (``--where``).

Every generator is ``(n, seed) -> Case``: the frame, the true effect of the design's estimand,
the CLI/design arguments (treatment, outcome, and instrument / unit+time / running variable+cutoff
where the design has one) and an optional metadata dict (what ``--metadata`` would hold). These
generators only serve benchmarks and tests, so they live here and not in the shipped package.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from benchmarks.synthetic import job_training, linear_confounding
from benchmarks.synthetic_effects import panel_did, poor_overlap, sharp_rdd

__all__ = ["Case", "KINDS", "DEFAULT_N", "MUST_ADJUST", "TEMPTING", "make", "messy_clean"]


class Case(NamedTuple):
    """One dataset with its truth: ``frame, effect, args, metadata``."""

    frame: pd.DataFrame
    effect: float
    args: dict[str, Any]
    metadata: dict[str, Any] | None = None


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return np.asarray(1.0 / (1.0 + np.exp(-x)))


def _args(treatment: str = "treated", outcome: str = "outcome", **design: Any) -> dict[str, Any]:
    return {"treatment": treatment, "outcome": outcome, **design}


def rct(n: int, seed: int) -> Case:
    """A randomised experiment: treatment by coin flip, covariates that only predict the outcome."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    t = rng.binomial(1, 0.5, size=n)
    y = 1.0 * t + x @ np.array([1.0, 0.5, -0.5]) + rng.normal(size=n)
    frame = pd.DataFrame({"age_z": x[:, 0], "score0": x[:, 1], "income_z": x[:, 2], "treated": t, "outcome": y})
    return Case(frame, 1.0, _args())


def semi_synthetic_sites(n: int, seed: int) -> Case:
    """25 covariates: 15 continuous, 5 binary and 5 one-hot site dummies (all five present).

    Treatment depends on 6 of them (two sites among them), the outcome on 10; effect 4.
    """
    rng = np.random.default_rng(seed)
    cont = rng.normal(size=(n, 15))
    binary = rng.binomial(1, 0.4, size=(n, 5)).astype(float)
    site = rng.integers(0, 5, size=n)
    dummies = np.eye(5)[site]
    logit = 0.5 * cont[:, 0] - 0.4 * cont[:, 1] + 0.3 * cont[:, 2] + 0.5 * binary[:, 0]
    logit += 0.6 * dummies[:, 1] - 0.5 * dummies[:, 3] - 0.2
    t = rng.binomial(1, _sigmoid(logit))
    y = 4.0 * t + 1.0 * cont[:, 0] + 0.8 * cont[:, 1] - 0.6 * cont[:, 2] + 0.5 * cont[:, 3] - 0.5 * cont[:, 4]
    y += 0.7 * binary[:, 0] + 0.4 * binary[:, 1] + 1.0 * dummies[:, 1] + 0.6 * dummies[:, 3] - 0.5 * dummies[:, 4]
    y += rng.normal(scale=1.5, size=n)
    data: dict[str, Any] = {f"x{i + 1}": cont[:, i] for i in range(15)}
    data.update({f"b{i + 1}": binary[:, i].astype(int) for i in range(5)})
    data.update({f"site_{k}": dummies[:, i].astype(int) for i, k in enumerate("abcde")})
    data.update({"treated": t, "outcome": y})
    return Case(pd.DataFrame(data), 4.0, _args())


def continuous_instrument(n: int, seed: int) -> Case:
    """Years of schooling (integer, ~18 values) instrumented by a randomised ``near_college``.

    Unobserved ability raises both schooling and wages; the slope (0.1 per year) is constant, so
    2SLS recovers it while OLS is biased upward.
    """
    rng = np.random.default_rng(seed)
    z = rng.binomial(1, 0.5, size=n)
    u = rng.normal(size=n)
    exper = rng.normal(10, 4, size=n)
    educ = np.clip(np.round(12 + 1.5 * z + 1.2 * u + 0.05 * exper + rng.normal(scale=1.5, size=n)), 6, 23)
    wage = 1.0 + 0.1 * educ + 0.3 * u + 0.02 * exper + rng.normal(scale=0.3, size=n)
    frame = pd.DataFrame({"near_college": z, "exper": exper.round(1), "educ": educ.astype(int), "lwage": wage})
    return Case(frame, 0.1, _args("educ", "lwage", instrument="near_college"))


def nonlinear_confounding(n: int, seed: int) -> Case:
    """x2 enters the propensity as x2², the pair x3·x4 enters propensity and outcome; effect 2.5.

    x3 and x4 have near-zero marginal linear associations with treatment and outcome: a marginal
    linear screen would throw them away.
    """
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 5))
    x1, x2, x3, x4, x5 = x.T
    t = rng.binomial(1, _sigmoid(0.5 * x1 + 0.6 * (x2**2 - 1) + 0.9 * x3 * x4))
    y = 2.5 * t + 1.0 * x1 + 0.5 * x2 + 1.5 * x3 * x4 + 0.5 * x5 + rng.normal(size=n)
    frame = pd.DataFrame({"x1": x1, "x2": x2, "x3": x3, "x4": x4, "x5": x5, "treated": t, "outcome": y})
    return Case(frame, 2.5, _args())


def messy_clean(n: int, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    """The clean values behind :func:`messy` (before any messing) and its ×100 rows (a mask).

    The benchmark's oracle estimates on these; :func:`messy` writes them badly.
    """
    rng = np.random.default_rng(seed)
    x1 = rng.normal(5, 1, size=n)
    x2 = rng.normal(20, 3, size=n)
    x3 = rng.normal(size=n)
    t = rng.binomial(1, _sigmoid(0.8 * (x1 - 5) + 0.25 * (x2 - 20)))
    y = 3.0 * t + 1.5 * (x1 - 5) + 0.4 * (x2 - 20) + 0.5 * x3 + rng.normal(size=n)
    bad = rng.random(n) < 0.02
    return pd.DataFrame({"x1": x1, "x2": x2, "x3": x3, "treated": t, "outcome": y}), bad


def messy(n: int, seed: int) -> Case:
    """Linear confounding (effect 3) written badly: x1 with decimal commas, x2 with ×100 recording
    errors in 2% of rows, 3% duplicated rows and a constant column."""
    clean, bad = messy_clean(n, seed)
    x2_recorded = np.where(bad, clean["x2"] * 100, clean["x2"])
    frame = pd.DataFrame(
        {
            "x1": [f"{v:.3f}".replace(".", ",") for v in clean["x1"]],
            "x2": x2_recorded.round(2),
            "x3": clean["x3"],
            "site_code": 7,
            "treated": clean["treated"],
            "outcome": clean["outcome"],
        }
    )
    dup = frame.sample(frac=0.03, random_state=seed)
    frame = pd.concat([frame, dup]).sample(frac=1.0, random_state=seed + 1).reset_index(drop=True)
    return Case(frame, 3.0, _args())


def null_with_collider(n: int, seed: int) -> Case:
    """No effect; confounded by x1, x2; ``m = treat + 0.8·y + noise`` is a collider."""
    frame, _ = linear_confounding(n=n, effect=0.0, seed=seed)
    rng = np.random.default_rng(seed + 10_000)
    frame["m"] = frame["treated"] + 0.8 * frame["outcome"] + rng.normal(size=len(frame))
    return Case(frame, 0.0, _args())


def overlap(n: int, seed: int) -> Case:
    """Treatment fixed by x1 outside [-0.8, 0.8] (constant effect 2, so trimming keeps the truth)."""
    frame, truth = poor_overlap(n=n, seed=seed)
    return Case(frame, float(truth["effect"]), _args())


def linear_10k(n: int, seed: int) -> Case:
    """10 confounders with graded strengths, linear in both models; effect 1.5."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 10))
    a = np.linspace(0.5, 0.1, 10) * np.where(np.arange(10) % 2, -1, 1)
    b = np.linspace(0.3, 1.0, 10)
    t = rng.binomial(1, _sigmoid(x @ a))
    y = 1.5 * t + x @ b + rng.normal(size=n)
    frame = pd.DataFrame({f"x{i + 1}": x[:, i] for i in range(10)})
    frame["treated"], frame["outcome"] = t, y
    return Case(frame, 1.5, _args())


def change_score(n: int, seed: int) -> Case:
    """Weight gain ``= weight1 - weight0`` with both parts present; confounded by age and weight0.

    ``weight1`` is measured after the treatment and contains the outcome: adjusting for it gives
    an effect of exactly zero.
    """
    rng = np.random.default_rng(seed)
    age = rng.normal(40, 10, size=n)
    w0 = rng.normal(70, 10, size=n) + 0.1 * (age - 40)
    t = rng.binomial(1, _sigmoid(0.04 * (w0 - 70) + 0.03 * (age - 40)))
    gain = 2.0 * t + 0.05 * (w0 - 70) - 0.04 * (age - 40) + rng.normal(scale=1.5, size=n)
    w1 = w0 + gain
    frame = pd.DataFrame({"age": age.round(1), "weight0": w0.round(3), "treated": t, "weight1": w1.round(3)})
    frame["gain"] = frame["weight1"] - frame["weight0"]
    return Case(frame, 2.0, _args("treated", "gain"))


def did_panel(n: int, seed: int) -> Case:
    """Two groups, the higher-baseline one treated from mid-panel on; parallel trends hold."""
    frame, truth = panel_did(n_units=max(n // 8, 40), seed=seed)
    return Case(frame, float(truth["effect"]), _args(unit_column="unit", time_column="period"))


def rdd(n: int, seed: int) -> Case:
    """Treatment is 1 exactly when ``score`` >= 0; smooth outcome in the score."""
    frame, truth = sharp_rdd(n=n, seed=seed)
    return Case(frame, float(truth["effect"]), _args(running_variable="score", cutoff=float(truth["cutoff"])))


def many_covariates(n: int, seed: int) -> Case:
    """56 covariates: 6 confounders, 10 causes of the outcome only, 40 noise columns; effect 1."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 56))
    c = x[:, :6]
    t = rng.binomial(1, _sigmoid(c @ np.array([0.5, -0.4, 0.4, 0.3, -0.3, 0.2])))
    y = 1.0 * t + c @ np.array([1.0, 0.8, -0.6, 0.6, 0.5, -0.4]) + x[:, 6:16] @ np.full(10, 0.3)
    y += rng.normal(size=n)
    frame = pd.DataFrame({f"v{i:02d}": x[:, i] for i in range(56)})
    frame["treated"], frame["outcome"] = t, y
    return Case(frame, 1.0, _args())


def small_n(n: int, seed: int) -> Case:
    """Linear confounding at n = 300 (x1, x2 confounders, x3 outcome-only); effect 2."""
    frame, truth = linear_confounding(n=n, seed=seed)
    return Case(frame, float(truth["effect"]), _args())


def _confounded(n: int, seed: int) -> tuple[np.random.Generator, pd.DataFrame, np.ndarray]:
    """x1, x2 confound, x3 moves the outcome only; effect 2. Returns the rng, the frame, the noise."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    t = rng.binomial(1, _sigmoid(0.8 * x[:, 0] - 0.6 * x[:, 1]))
    e = rng.normal(size=n)
    y = 2.0 * t + 1.0 * x[:, 0] + 0.8 * x[:, 1] + 0.5 * x[:, 2] + e
    frame = pd.DataFrame({"x1": x[:, 0], "x2": x[:, 1], "x3": x[:, 2], "treated": t, "outcome": y})
    return rng, frame, e


def row_index(n: int, seed: int) -> Case:
    """A file sorted by the outcome, with its row index (``Unnamed: 0``) and a shuffled ``id`` key.

    The row index is a rank of the outcome: adjusting for it leaves the treatment almost nothing.
    """
    rng, frame, _ = _confounded(n, seed)
    frame = frame.sort_values("outcome").reset_index(drop=True)
    frame.insert(0, "Unnamed: 0", np.arange(n))
    frame.insert(1, "id", rng.permutation(n) + 1001)
    return Case(frame, 2.0, _args())


def log_outcome(n: int, seed: int) -> Case:
    """Log wage as the outcome with the wage level in the file; schooling and experience confound; effect 0.2."""
    rng = np.random.default_rng(seed)
    educ = rng.normal(12, 2, size=n)
    exper = rng.normal(10, 4, size=n)
    t = rng.binomial(1, _sigmoid(0.3 * (educ - 12) - 0.1 * (exper - 10)))
    lwage = 1.5 + 0.2 * t + 0.08 * educ + 0.02 * exper + rng.normal(scale=0.3, size=n)
    frame = pd.DataFrame({"educ": educ.round(1), "exper": exper.round(1), "treated": t, "log_wage": lwage})
    frame["wage"] = np.exp(frame["log_wage"]).round(2)
    return Case(frame, 0.2, _args("treated", "log_wage"))


def outcome_parts(n: int, seed: int) -> Case:
    """A total score that is the sum of three sub-scores (all in the file); each moves by 1 with treatment.

    Effect 3 on the total; adjusting for the sub-scores gives zero with a zero-width interval.
    """
    rng, frame, _ = _confounded(n, seed)
    x1, x2, t = frame["x1"].to_numpy(), frame["x2"].to_numpy(), frame["treated"].to_numpy()
    parts = {
        k: t + a * x1 + b * x2 + rng.normal(size=n)
        for k, a, b in (("reading", 0.5, 0.3), ("maths", 0.4, 0.5), ("science", 0.3, 0.2))
    }
    frame = frame.drop(columns="outcome").assign(**{k: v.round(3) for k, v in parts.items()})
    frame["total_score"] = frame["reading"] + frame["maths"] + frame["science"]
    return Case(frame, 3.0, _args("treated", "total_score"))


def followup_outcome(n: int, seed: int) -> Case:
    """A second outcome measured later (``outcome_followup``, mostly the outcome plus noise); effect 2."""
    rng, frame, _ = _confounded(n, seed)
    frame["outcome_followup"] = 0.9 * frame["outcome"] + rng.normal(scale=0.5, size=n)
    return Case(frame, 2.0, _args())


def treatment_copies(n: int, seed: int) -> Case:
    """A recorded copy of the treatment (``enrolled``, 1% of rows differ) and a treatment x x1 term; effect 2."""
    rng, frame, _ = _confounded(n, seed)
    t = frame["treated"].to_numpy()
    frame["enrolled"] = np.where(rng.random(n) < 0.01, 1 - t, t)
    frame["treated_x1"] = t * frame["x1"]
    return Case(frame, 2.0, _args())


def rct_post_treatment(n: int, seed: int) -> Case:
    """A randomised trial (the metadata says so) with a post-treatment ``satisfaction`` survey.

    Satisfaction rises with the treatment and shares the outcome's noise: adjusting for it is
    conditioning on a common effect of the treatment and the outcome's noise; effect 1.
    """
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    t = rng.binomial(1, 0.5, size=n)
    e = rng.normal(size=n)
    y = 1.0 * t + x @ np.array([0.8, 0.5, -0.4]) + e
    sat = 0.6 * t + 0.8 * e + rng.normal(scale=0.4, size=n)
    frame = pd.DataFrame({"age_z": x[:, 0], "score0": x[:, 1], "income_z": x[:, 2], "treated": t, "outcome": y})
    frame["satisfaction"] = sat.round(3)
    meta = {"description": "A randomised trial of a coaching programme; outcome measured at six months."}
    return Case(frame, 1.0, _args(), meta)


def survey_score(n: int, seed: int) -> Case:
    """A knowledge score (the sum of four answers) recorded only for the 80% who responded; the
    answers are in the file, missing exactly where the score is. Confounded by x1, x2; effect 2."""
    rng, frame, _ = _confounded(n, seed)
    ability = frame["x1"].to_numpy() + rng.normal(size=n)
    t = frame["treated"].to_numpy()
    answers = {f"answer_{k}": 0.5 * t + ability + 0.3 * frame["x2"].to_numpy() + rng.normal(size=n) for k in "abcd"}
    frame = frame.drop(columns="outcome").assign(**{k: v.round(3) for k, v in answers.items()})
    frame["score"] = frame[list(answers)].sum(axis=1)
    silent = rng.random(n) < 0.2
    frame.loc[silent, [*answers, "score"]] = np.nan
    return Case(frame, 2.0, _args("treated", "score"))


def rct_outcome_report(n: int, seed: int) -> Case:
    """A randomised trial the metadata does not call one, with the outcome as the participants reported it.

    ``outcome_reported`` is a noisy report of the outcome that the treatment also nudges (the treated
    report more readily); every other covariate is balanced and prognostic. Adjusting for the report
    conditions on the outcome itself; effect 1.
    """
    rng = np.random.default_rng([seed, 21])
    x = rng.normal(size=(n, 4))
    t = rng.binomial(1, 0.5, size=n)
    y = 1.0 * t + x @ np.array([0.8, 0.5, -0.4, 0.3]) + rng.normal(size=n)
    report = 0.8 * y + 0.2 * t + rng.normal(scale=0.8, size=n)
    names = ["age_z", "score0", "income_z", "visits0"]
    frame = pd.DataFrame({**dict(zip(names, x.T, strict=True)), "treated": t, "outcome": y})
    frame["outcome_reported"] = report.round(3)
    return Case(frame, 1.0, _args())


def iv_treatment_copy(n: int, seed: int) -> Case:
    """:func:`continuous_instrument` with ``educ_reported``, schooling as reported in a later survey
    (the treatment plus reporting noise, r about 0.94): as an IV control it absorbs about 85% of the
    first stage and 2SLS turns negative with a tight interval. Effect 0.1.
    """
    rng = np.random.default_rng([seed, 26])
    z = rng.binomial(1, 0.5, size=n)
    u = rng.normal(size=n)
    exper = rng.normal(10, 4, size=n)
    educ = np.clip(np.round(12 + 1.5 * z + 1.2 * u + 0.05 * exper + rng.normal(scale=1.5, size=n)), 6, 23)
    wage = 1.0 + 0.1 * educ + 0.3 * u + 0.02 * exper + rng.normal(scale=0.3, size=n)
    reported = np.round(educ + rng.normal(scale=0.7, size=n))
    frame = pd.DataFrame(
        {"near_college": z, "exper": exper.round(1), "educ": educ.astype(int), "educ_reported": reported.astype(int)}
    )
    frame["lwage"] = wage
    return Case(frame, 0.1, _args("educ", "lwage", instrument="near_college"))


def did_one_treated(n: int, seed: int) -> Case:
    """One treated state among ``n // 8`` observed over 8 quarters, treated from the fifth on; state and
    quarter effects, AR(1) errors within a state; effect -0.5 (the treated state's ATT).

    Standard errors clustered by state cannot measure one treated cluster; placebo-in-space permutation can.
    """
    rng = np.random.default_rng([seed, 22])
    units, periods = max(n // 8, 2), 8
    e = np.zeros((units, periods))
    e[:, 0] = rng.normal(size=units)
    for k in range(1, periods):
        e[:, k] = 0.5 * e[:, k - 1] + np.sqrt(0.75) * rng.normal(size=units)
    u, q = np.meshgrid(np.arange(units), np.arange(periods), indexing="ij")
    d = ((u == 0) & (q >= periods // 2)).astype(int)
    y = rng.normal(scale=2.0, size=units)[u] + np.cumsum(rng.normal(scale=0.5, size=periods))[q] - 0.5 * d + e
    frame = pd.DataFrame({"state": [f"state_{k:02d}" for k in u.ravel()], "quarter": q.ravel()})
    frame = frame.assign(treated=d.ravel(), outcome=y.ravel().round(4))
    return Case(frame, -0.5, _args(unit_column="state", time_column="quarter"))


def imputed_confounder(n: int, seed: int) -> Case:
    """Linear confounding (effect 2) by age and income, with income missing for a random quarter of the
    rows: data repair fills the gaps with the median and a flag, which adjusts for income only where it
    was measured (an answer on all rows is biased by about 1.5 standard errors; the complete cases are not).
    """
    rng = np.random.default_rng([seed, 27])
    income = rng.normal(size=n)
    age = rng.normal(size=n)
    t = rng.binomial(1, _sigmoid(0.5 * income + 0.4 * age))
    y = 2.0 * t + 0.6 * income + 0.8 * age + rng.normal(size=n)
    recorded = np.where(rng.random(n) < 0.25, np.nan, income)
    frame = pd.DataFrame({"age": age.round(3), "income": recorded.round(3), "treated": t, "outcome": y})
    return Case(frame, 2.0, _args())


def trial_attrition(n: int, seed: int) -> Case:
    """Treatment confounded by x1, x2 (effect 2); the outcome is lost to follow-up for a random 15%, and
    ``diagnosed`` and ``days_to_test``, recorded at that follow-up (both move with the outcome's value),
    are missing on the same rows (``days_to_test`` on a few more): as covariates they absorb the effect.
    """
    rng, frame, _ = _confounded(n, seed)
    y = frame["outcome"].to_numpy()
    frame["diagnosed"] = (0.5 * y + rng.normal(scale=2.0, size=n) > 1.0).astype(float)
    frame["days_to_test"] = np.clip(np.round(30 - 2 * y + rng.normal(scale=9.0, size=n)), 0, 60)
    lost = rng.random(n) < 0.15
    frame.loc[lost, ["outcome", "diagnosed", "days_to_test"]] = np.nan
    frame.loc[~lost & (rng.random(n) < 0.01), "days_to_test"] = np.nan
    return Case(frame, 2.0, _args())


def outcome_baseline(n: int, seed: int) -> Case:
    """The shipped example's study (:func:`benchmarks.synthetic.job_training`) without its metadata.

    Enrolment depends on past earnings, which predict later earnings: the baseline of the outcome
    (``re75`` for ``re78`` on even seeds, ``earnings_lag`` for ``earnings`` on odd ones) is the
    strongest confounder and must be adjusted for; ``skills_score``, measured after training,
    carries a third of the effect (total effect 1,500).
    """
    frame, truth = job_training(n, seed)
    y_name, base_name = ("re78", "re75") if seed % 2 == 0 else ("earnings", "earnings_lag")
    frame = frame.rename(columns={"earnings": y_name, "prior_earnings": base_name})
    return Case(frame, float(truth["effect"]), _args("training", y_name))


def treatment_aliases(n: int, seed: int) -> Case:
    """The treatment written twice more: ``arm``, a label of the arm (control, or voucher_A / voucher_B at
    random among the treated), and ``untreated`` = 1 - treated. Either as a covariate leaves the treatment
    no variation (the design is singular); effect 2."""
    rng, frame, _ = _confounded(n, seed)
    t = frame["treated"].to_numpy()
    frame["arm"] = np.where(t == 1, np.where(rng.random(n) < 0.5, "voucher_A", "voucher_B"), "control")
    frame["untreated"] = 1 - t
    return Case(frame, 2.0, _args())


def dummies_beside_categorical(n: int, seed: int) -> Case:
    """A five-level ``city`` that confounds (it moves both enrolment and the outcome), written as the text
    column and as its complete set of dummies ``city_A`` .. ``city_E``; x1, x2 confound too, x3 moves the
    outcome only; effect 2. Both representations in one design make it singular."""
    rng = np.random.default_rng([seed, 40])
    x = rng.normal(size=(n, 3))
    city = rng.choice(list("ABCDE"), size=n, p=[0.3, 0.25, 0.2, 0.15, 0.1])
    shift = pd.Series({"A": 0.0, "B": 0.6, "C": -0.5, "D": 0.9, "E": -0.8})
    level = shift[city].to_numpy()
    t = rng.binomial(1, _sigmoid(0.8 * x[:, 0] - 0.6 * x[:, 1] + level))
    y = 2.0 * t + 1.0 * x[:, 0] + 0.8 * x[:, 1] + 0.5 * x[:, 2] + 1.5 * level + rng.normal(size=n)
    frame = pd.DataFrame({"x1": x[:, 0], "x2": x[:, 1], "x3": x[:, 2], "city": city})
    frame = frame.assign(**{f"city_{k}": (city == k).astype(int) for k in "ABCDE"})
    frame["treated"], frame["outcome"] = t, y
    return Case(frame, 2.0, _args())


def ratio_outcome(n: int, seed: int) -> Case:
    """Revenue per worker as the outcome with its numerator ``revenue`` and its divisor ``workers`` in the file.

    The firm's size (``workers``, counted before the treatment) confounds with x1 and x2: it must be
    adjusted for; ``revenue`` = the outcome x workers carries the outcome and must not be. Effect 5.
    """
    rng = np.random.default_rng([seed, 41])
    x = rng.normal(size=(n, 2))
    workers = rng.integers(20, 201, size=n)
    t = rng.binomial(1, _sigmoid(0.7 * x[:, 0] - 0.5 * x[:, 1] + 0.01 * (workers - 110)))
    per_worker = 50 + 5.0 * t + 3.0 * x[:, 0] + 2.0 * x[:, 1] + 0.05 * workers + rng.normal(scale=4.0, size=n)
    revenue = (per_worker * workers).round(2)
    frame = pd.DataFrame({"x1": x[:, 0].round(4), "x2": x[:, 1].round(4), "workers": workers, "treated": t})
    frame["revenue"] = revenue
    frame["revenue_per_worker"] = revenue / workers
    return Case(frame, 5.0, _args("treated", "revenue_per_worker"))


def numeric_identifier(n: int, seed: int) -> Case:
    """:func:`_confounded` (effect 2) with ``firm``, a six-digit registry number per row (drawn from a range
    30 times the rows, so about 2% repeat), named like no identifier: a code, not a quantity."""
    rng, frame, _ = _confounded(n, seed)
    frame.insert(0, "firm", rng.integers(100_000, 100_000 + 30 * n, size=n))
    return Case(frame, 2.0, _args())


def stated_controls(n: int, seed: int) -> Case:
    """The analyst states the right adjustment set (``--controls x1,x2``): two confounders.

    Three more columns cause only the outcome; the recipe, left to itself, adjusts for them too
    (every covariate that may precede the treatment), so its own choice differs from the stated one
    while both are valid. The run must adjust for exactly x1 and x2 and show its own choice beside them.
    """
    rng = np.random.default_rng(seed)
    x1, x2 = rng.normal(size=n), rng.normal(size=n)
    w = rng.normal(size=(n, 3))
    t = rng.binomial(1, _sigmoid(0.8 * x1 - 0.6 * x2))
    y = 1.5 * t + 1.2 * x1 + 0.8 * x2 + w @ np.array([0.7, -0.5, 0.4]) + rng.normal(size=n)
    frame = pd.DataFrame({"x1": x1, "x2": x2, "w1": w[:, 0], "w2": w[:, 1], "w3": w[:, 2], "treated": t, "outcome": y})
    return Case(frame, 1.5, _args(controls=["x1", "x2"]))


def clustered_trial(n: int, seed: int) -> Case:
    """A cluster-randomised trial: 40 schools, each wholly treated or not, with a shared school shock.

    Errors that treat pupils as independent are several times too narrow (the intraclass correlation
    is 0.5); stated ``--cluster school``, the interval must be the clustered one.
    """
    rng = np.random.default_rng(seed)
    schools = 40
    school = rng.integers(0, schools, size=n)
    arm = rng.permutation(np.arange(schools) % 2)
    shock = rng.normal(scale=1.0, size=schools)
    t = arm[school]
    x = rng.normal(size=n)
    y = 0.5 * t + 0.5 * x + shock[school] + rng.normal(size=n)
    names = np.array([f"s{i:02d}" for i in range(schools)])
    frame = pd.DataFrame({"school": names[school], "prior": x, "treated": t, "outcome": y})
    return Case(frame, 0.5, _args(cluster="school"))


def subgroup_effect(n: int, seed: int) -> Case:
    """A randomised trial whose effect is 2 among women and 0.5 among men; the question is about women.

    Stated ``--where "sex == 'f'"``, the answer is the women's effect (2), not the pooled one (about 1.25).
    """
    rng = np.random.default_rng(seed)
    female = rng.binomial(1, 0.5, size=n)
    x = rng.normal(size=n)
    t = rng.binomial(1, 0.5, size=n)
    y = np.where(female == 1, 2.0, 0.5) * t + 0.8 * x + 0.3 * female + rng.normal(size=n)
    frame = pd.DataFrame({"sex": np.where(female == 1, "f", "m"), "age_z": x, "treated": t, "outcome": y})
    return Case(frame, 2.0, _args(where="sex == 'f'"))


def did_repeated_cross_section(n: int, seed: int) -> Case:
    """Individuals surveyed once, in 2 regions (even seeds) or 4 (odd seeds) over two years; half the
    regions (higher at baseline) are treated in the second year. No region-by-year shocks; effect 1.5.

    Seeds 0, 1 (mod 4) state it as ``--group region --period year``; seeds 2, 3 as ``--unit region --time
    year``, a few groups with many rows per group and year: both must get row-level robust errors (errors
    clustered on two groups gave an interval 4 × 10⁻⁹ wide).
    """
    rng = np.random.default_rng([seed, 36])
    groups = 2 if seed % 2 == 0 else 4
    g = rng.integers(groups, size=n)
    year = rng.integers(2, size=n)
    treated_region = g < groups // 2
    d = (treated_region & (year == 1)).astype(int)
    age = rng.normal(40, 10, size=n)
    base = rng.normal(scale=1.0, size=groups) + 1.5 * (np.arange(groups) < groups // 2)
    y = base[g] + 0.7 * year + 1.5 * d + 0.03 * age + rng.normal(scale=1.5, size=n)
    names = np.array(["north", "south", "east", "west"])[:groups]
    frame = pd.DataFrame({"region": names[g], "year": 2019 + year, "age": age.round(1), "treated": d})
    frame["outcome"] = y.round(4)
    stated = {"repeated_cross_section": True} if (seed // 2) % 2 == 0 else {}
    return Case(frame, 1.5, _args(unit_column="region", time_column="year", **stated))


def fuzzy_rdd(n: int, seed: int) -> Case:
    """Take-up jumps from about 20% to about 70% at ``score`` = 0 and never follows it exactly; unobserved
    motivation raises both take-up and the outcome, so comparing takers with others is biased. The effect
    is 2 for everyone, so the local effect on compliers is 2."""
    rng = np.random.default_rng([seed, 37])
    s = rng.uniform(-1, 1, size=n)
    u = rng.normal(size=n)
    t = rng.binomial(1, _sigmoid(-1.4 + 2.4 * (s >= 0) + 0.8 * u))
    w = rng.normal(size=n)
    y = 1.0 + 0.8 * s + 0.5 * s**2 + 2.0 * t + 0.7 * u + 0.4 * w + rng.normal(scale=0.5, size=n)
    frame = pd.DataFrame({"score": s.round(5), "w": w.round(4), "treated": t, "outcome": y.round(4)})
    return Case(frame, 2.0, _args(running_variable="score", cutoff=0.0))


def two_instruments(n: int, seed: int, direct: float = 0.0) -> Case:
    """Schooling instrumented by a randomised ``near_college`` and a local ``tuition`` (both valid, stated as
    ``--instrument near_college,tuition``); unobserved ability raises schooling and wages; slope 0.1 per year."""
    rng = np.random.default_rng([seed, 38])
    z = rng.binomial(1, 0.5, size=n)
    tuition = rng.normal(size=n)
    u = rng.normal(size=n)
    exper = rng.normal(10, 4, size=n)
    educ = np.clip(
        np.round(12 + 1.0 * z - 0.6 * tuition + 1.2 * u + 0.05 * exper + rng.normal(scale=1.5, size=n)), 6, 23
    )
    wage = 1.0 + 0.1 * educ + 0.3 * u + 0.02 * exper + direct * tuition + rng.normal(scale=0.3, size=n)
    frame = pd.DataFrame({"near_college": z, "tuition": tuition.round(3), "exper": exper.round(1)})
    frame = frame.assign(educ=educ.astype(int), lwage=wage)
    return Case(frame, 0.1, _args("educ", "lwage", instrument="near_college", extra_instruments=["tuition"]))


def invalid_instrument(n: int, seed: int) -> Case:
    """:func:`two_instruments` where ``tuition`` also moves wages directly (local prices): the exclusion fails for
    it, 2SLS with both is pulled far from the slope 0.1, and the over-identification test must refuse it."""
    return two_instruments(n, seed, direct=0.08)


def staggered_did(n: int, seed: int) -> Case:
    """Firms over 10 years adopting in 2003 (an effect growing by 0.6 a year since adoption), in 2006 (a flat
    0.5) or never; firm and year effects, parallel trends. The truth is the ATT over treated firm-years; TWFE,
    which compares late with early adopters, is biased below it."""
    rng = np.random.default_rng([seed, 37])
    units, years = max(n // 10, 30), np.arange(2001, 2011)
    start = np.array([2003, 2006, 10_000])[rng.choice(3, size=units, p=[0.35, 0.35, 0.3])]
    u, yr = np.repeat(np.arange(units), years.size), np.tile(years, units)
    d = (yr >= start[u]).astype(int)
    effect = np.where(start[u] == 2003, 0.6 * (yr - 2002), 0.5) * d
    y = rng.normal(size=units)[u] + 0.2 * (yr - 2001) + effect + rng.normal(size=u.size)
    frame = pd.DataFrame({"firm": u + 1000, "year": yr, "treated": d, "outcome": y.round(4)})
    return Case(frame, float(effect[d == 1].mean()), _args(unit_column="firm", time_column="year"))


def unit_rows_repeated(n: int, seed: int) -> Case:
    """Country-level data written on one row per country and donor type (as a replication file does).

    ``n // 8`` countries, each on 8 rows: ``donor_type`` 1-8 (evenly spaced whole numbers, read as
    periods by a panel search) and that donor's ``donor_amount``, which differ by row; the treatment (a
    partnership level 0-3), the outcome and the confounders gdp and democracy are the country's, the
    same on its 8 rows. Slope 0.5 per level. The observations are the countries: an interval on all rows
    is about three times too narrow, and ``donor_amount`` (the outcome is built from the amounts) is no
    covariate.
    """
    rng = np.random.default_rng([seed, 42])
    units, k = max(n // 8, 40), 8
    gdp = rng.normal(9, 1, size=units)
    democracy = rng.integers(0, 11, size=units)
    level = np.clip(np.round(1.5 + 0.6 * (gdp - 9) - 0.1 * (democracy - 5) + rng.normal(size=units)), 0, 3)
    y = 1.0 + 0.5 * level + 0.4 * (gdp - 9) + 0.05 * democracy + rng.normal(scale=0.8, size=units)
    c = np.repeat(np.arange(units), k)
    share = rng.dirichlet(np.ones(k), size=units).ravel()
    frame = pd.DataFrame(
        {
            "country_code": 100 + c * 5,
            "donor_type": np.tile(np.arange(1, k + 1), units),
            "donor_amount": (np.exp(y[c]) * share).round(4),
            "gdp_log": gdp[c].round(4),
            "democracy": democracy[c],
            "partnership": level[c].astype(int),
            "aid_log": y[c].round(5),
        }
    )
    return Case(frame, 0.5, _args("partnership", "aid_log"))


Generator = Callable[[int, int], Case]

KINDS: dict[str, Generator] = {
    "rct": rct,
    "semi_synthetic_sites": semi_synthetic_sites,
    "continuous_instrument": continuous_instrument,
    "nonlinear_confounding": nonlinear_confounding,
    "messy_data": messy,
    "null_with_collider": null_with_collider,
    "poor_overlap": overlap,
    "linear_10k": linear_10k,
    "change_score": change_score,
    "did_panel": did_panel,
    "sharp_rdd": rdd,
    "many_covariates": many_covariates,
    "small_n": small_n,
    "row_index": row_index,
    "log_outcome": log_outcome,
    "outcome_parts": outcome_parts,
    "followup_outcome": followup_outcome,
    "treatment_copies": treatment_copies,
    "rct_post_treatment": rct_post_treatment,
    "survey_score": survey_score,
    "iv_treatment_copy": iv_treatment_copy,
    "imputed_confounder": imputed_confounder,
    "rct_outcome_report": rct_outcome_report,
    "did_one_treated": did_one_treated,
    "trial_attrition": trial_attrition,
    "outcome_baseline": outcome_baseline,
    "stated_controls": stated_controls,
    "clustered_trial": clustered_trial,
    "subgroup_effect": subgroup_effect,
    "did_repeated_cross_section": did_repeated_cross_section,
    "fuzzy_rdd": fuzzy_rdd,
    "two_instruments": two_instruments,
    "invalid_instrument": invalid_instrument,
    "staggered_did": staggered_did,
    "treatment_aliases": treatment_aliases,
    "dummies_beside_categorical": dummies_beside_categorical,
    "ratio_outcome": ratio_outcome,
    "numeric_identifier": numeric_identifier,
    "unit_rows_repeated": unit_rows_repeated,
}
"""Kind name -> ``(n, seed) -> Case``."""

TEMPTING: dict[str, tuple[str, ...]] = {
    "row_index": ("Unnamed: 0", "id"),
    "log_outcome": ("wage",),
    "outcome_parts": ("reading", "maths", "science"),
    "followup_outcome": ("outcome_followup",),
    "treatment_copies": ("enrolled", "treated_x1"),
    "rct_post_treatment": ("satisfaction",),
    "survey_score": ("answer_a", "answer_b", "answer_c", "answer_d"),
    "iv_treatment_copy": ("educ_reported",),
    "rct_outcome_report": ("outcome_reported",),
    "trial_attrition": ("diagnosed", "days_to_test"),
    "treatment_aliases": ("arm", "untreated"),
    "dummies_beside_categorical": tuple(f"city_{k}" for k in "ABCDE"),
    "ratio_outcome": ("revenue",),
    "numeric_identifier": ("firm",),
    "unit_rows_repeated": ("country_code",),
}
"""Kind name -> the columns that must never be covariates (the recipe must name them as left out)."""

MUST_ADJUST: dict[str, tuple[str, ...]] = {
    "outcome_baseline": ("re75", "earnings_lag"),
    "dummies_beside_categorical": ("city",),
    "ratio_outcome": ("workers",),
}
"""Kind name -> confounders the recipe must adjust for, those of them in the file (a seed writes one name)."""

DEFAULT_N: dict[str, int] = {
    "rct": 1000,
    "semi_synthetic_sites": 2000,
    "continuous_instrument": 2000,
    "nonlinear_confounding": 3000,
    "messy_data": 2000,
    "null_with_collider": 2000,
    "poor_overlap": 2500,
    "linear_10k": 10000,
    "change_score": 1500,
    "did_panel": 2400,
    "sharp_rdd": 2000,
    "many_covariates": 2000,
    "small_n": 300,
    "row_index": 1500,
    "log_outcome": 1500,
    "outcome_parts": 1500,
    "followup_outcome": 1500,
    "treatment_copies": 1500,
    "rct_post_treatment": 1500,
    "survey_score": 1500,
    "iv_treatment_copy": 2000,
    "imputed_confounder": 2000,
    "rct_outcome_report": 1500,
    "did_one_treated": 240,
    "trial_attrition": 1500,
    "outcome_baseline": 2000,
    "stated_controls": 1500,
    "clustered_trial": 2000,
    "subgroup_effect": 2000,
    "did_repeated_cross_section": 2000,
    "fuzzy_rdd": 3000,
    "two_instruments": 2000,
    "invalid_instrument": 2000,
    "staggered_did": 2000,
    "treatment_aliases": 1500,
    "dummies_beside_categorical": 2000,
    "ratio_outcome": 1500,
    "numeric_identifier": 1500,
    "unit_rows_repeated": 800,
}
"""The benchmark's size for each kind (the unit tests pass a smaller one)."""


def make(kind: str, seed: int, n: int | None = None) -> Case:
    """One seeded case of ``kind`` at ``n`` rows (the kind's default size when None)."""
    return KINDS[kind](n or DEFAULT_N[kind], seed)
