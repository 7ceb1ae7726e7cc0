"""Column roles: identifiers, functions of the outcome or the treatment and post-treatment columns
are named and left out, on generated data with a known effect; real confounders are never touched."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from benchmarks.truth_kinds import KINDS, TEMPTING, make
from whyflow.causal.dataprep.column_names import outcome_baseline
from whyflow.causal.dataprep.column_roles import classify_columns, left_out_table
from whyflow.causal.dataprep.unit_rows import one_row_per_unit, repeated_unit_rows
from whyflow.causal.discovery.adjustment import choose_adjustment
from whyflow.causal.discovery.adjustment_rules import known_pre_treatment
from whyflow.causal.discovery.iv_controls import iv_treatment_copies
from whyflow.causal.discovery.randomised_move import randomised_move, says_randomised
from whyflow.causal.estimation.designs_iv import iv_2sls
from whyflow.causal.knowledge import DomainKnowledge

SEEDS = range(5)


def _left_out(kind: str, seed: int, n: int = 800) -> tuple[list[str], float, float, float]:
    """The columns the rules leave out, and the OLS effect (95% interval) adjusting for the rest."""
    case = make(kind, seed, n)
    f, t, y = case.frame, case.args["treatment"], case.args["outcome"]
    repeated = repeated_unit_rows(f, t, y)
    if repeated is not None:  # one unit on several rows: data repair keeps one row per unit first
        f = one_row_per_unit(f, repeated)
    z = case.args.get("instrument")
    cands = [c for c in f.columns if c not in (t, y, z)]
    left = [r.column for r in classify_columns(f, t, y, cands, instrument=z) if r.leave_out]
    rest = [c for c in cands if c not in left]
    if z:  # an instrumented treatment: its near-copies go (whyflow.causal.discovery.iv_controls), and 2SLS estimates
        left += [r.column for r in iv_treatment_copies(f, t, z, rest)]
        rest = [c for c in rest if c not in left]
        e = iv_2sls(f[y], f[t], f[z], f[rest], z, t)
        return left, e.estimate, e.ci[0], e.ci[1]
    known = DomainKnowledge.model_validate(case.metadata) if case.metadata else None
    move = randomised_move(f, t, y, rest, stated_randomised=says_randomised(known))
    left += [r.column for r in move.carriers]
    rest = [c for c in rest if c not in left]
    d = f[[y, t, *rest]].dropna()  # the rows with an outcome, as data repair keeps them
    X = pd.get_dummies(d[[t, *rest]], drop_first=True, dtype=float)  # a text categorical as its dummies
    fit = sm.OLS(d[y].astype(float), sm.add_constant(X.astype(float))).fit(cov_type="HC1")
    lo, hi = fit.conf_int().loc[t]
    return left, float(fit.params[t]), float(lo), float(hi)


@pytest.mark.parametrize("kind", list(TEMPTING))
def test_tempting_columns_are_named_and_the_estimate_covers_the_truth(kind: str) -> None:
    truth = make(kind, 0, 300).effect
    covered = 0
    for seed in SEEDS:
        left, est, lo, hi = _left_out(kind, seed)
        assert set(TEMPTING[kind]) <= set(left), f"{kind} seed {seed}: left out only {left}"
        covered += lo <= truth <= hi
    assert covered >= len(SEEDS) - 1, f"{kind}: the truth {truth} covered in {covered} of {len(SEEDS)} seeds"


@pytest.mark.parametrize("kind", [k for k in KINDS if k not in TEMPTING])
def test_no_column_of_the_other_kinds_is_left_out(kind: str) -> None:
    for seed in (0, 1):
        case = make(kind, seed, 600)
        f, t, y = case.frame, case.args["treatment"], case.args["outcome"]
        cands = [c for c in f.columns if c not in (t, y)]
        if not pd.api.types.is_numeric_dtype(f[t]):
            continue
        roles = classify_columns(f, t, y, cands)
        assert not [r for r in roles if r.leave_out], [r.reason for r in roles]
        move = randomised_move(f, t, y, cands) if set(f[t].unique()) <= {0, 1} else None
        assert move is None or not move.carriers, move


def test_the_shipped_example_keeps_every_confounder() -> None:
    f = pd.read_csv("examples/job_training.csv")
    cands = [c for c in f.columns if c not in ("training", "earnings")]
    assert not [r for r in classify_columns(f, "training", "earnings", cands) if r.leave_out]


def _base(n: int = 600, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    t = rng.binomial(1, 1 / (1 + np.exp(-x)))
    y = 1.0 * t + 2.0 * x + rng.normal(size=n)
    return pd.DataFrame({"x": x, "t": t, "y": y})


def test_identifiers_are_found_and_integer_quantities_kept() -> None:
    rng = np.random.default_rng(1)
    f = _base()
    n = len(f)
    f["row"] = np.arange(1, n + 1)  # counts the rows
    f["key"] = rng.permutation(n) + 5000  # a shuffled run of distinct integers
    f["income"] = np.sort(rng.integers(10_000, 90_000, n))  # sorted, distinct-ish, but a quantity
    f["age"] = rng.integers(18, 80, n)  # repeated integers
    f["person_id"] = rng.integers(0, 200, n)  # named like an id, many codes
    f["name"] = [f"p{i}" for i in range(n)]
    f["towncode"] = rng.integers(0, 300, n).astype(float)  # a place code, stored as float
    roles = {
        r.column: r
        for r in classify_columns(f, "t", "y", ["x", "row", "key", "income", "age", "person_id", "name", "towncode"])
    }
    assert {c for c, r in roles.items() if r.role == "identifier"} == {"row", "key", "person_id", "name", "towncode"}
    assert "income" not in roles and "age" not in roles and "x" not in roles


def test_outcome_transforms_proxies_and_parts() -> None:
    rng = np.random.default_rng(2)
    f = _base()
    f["y_scaled"] = 100 * f["y"] + 7
    f.loc[:59, "y"] = np.nan  # a non-response: the outcome and its proxy are missing together
    f["answer"] = f["y"] + rng.normal(scale=1.0, size=len(f))
    f.loc[:59, "answer"] = np.nan
    f["prior_y"] = f["y"] + rng.normal(scale=0.01, size=len(f))  # named as a baseline: never classified
    roles = {r.column: r.role for r in classify_columns(f, "t", "y", ["x", "y_scaled", "answer", "prior_y"])}
    assert roles == {"y_scaled": "outcome_transform", "answer": "outcome_proxy"}


def test_strong_cause_is_not_a_part_of_the_outcome() -> None:
    """A cause explaining 90% of the outcome stays; the 0.95 rule needs a near-deterministic fit."""
    rng = np.random.default_rng(3)
    f = _base()
    f["y"] = f["t"] + 3.0 * f["x"] + rng.normal(scale=1.0, size=len(f))
    assert classify_columns(f, "t", "y", ["x"]) == []


def test_treatment_copies_interactions_and_protected_columns() -> None:
    rng = np.random.default_rng(4)
    f = _base()
    f["dose"] = f["t"] * rng.uniform(1, 3, len(f))  # 0 whenever untreated
    f["eligible"] = np.where(f["t"] == 1, 1, rng.binomial(1, 0.5, len(f)))  # constant among the treated: kept
    f["copy"] = f["t"]
    roles = {r.column: r.role for r in classify_columns(f, "t", "y", ["x", "dose", "eligible", "copy"])}
    assert roles == {"dose": "treatment_interaction", "copy": "treatment_copy"}
    assert classify_columns(f, "t", "y", ["dose", "copy"], protected={"dose", "copy"}) == []


def test_post_treatment_names_need_an_association_and_squares_are_not_waves() -> None:
    rng = np.random.default_rng(5)
    f = _base()
    f["y_followup"] = f["y"] + rng.normal(scale=3, size=len(f))
    f["after_noise"] = rng.normal(size=len(f))
    f["age"] = rng.normal(40, 10, len(f))
    f["age2"] = f["age"] ** 2
    roles = {r.column: r for r in classify_columns(f, "t", "y", ["x", "y_followup", "after_noise", "age", "age2"])}
    assert roles["y_followup"].leave_out and roles["y_followup"].role == "post_treatment"
    assert not roles["after_noise"].leave_out
    assert "age2" not in roles and "age" not in roles


def test_choose_adjustment_without_discovery_leaves_the_row_index_out() -> None:
    case = make("row_index", 0, 600)
    f = case.frame
    cands = [c for c in f.columns if c not in ("treated", "outcome")]
    adj = choose_adjustment(f, "treated", "outcome", cands)
    assert set(adj.covariates) == {"x1", "x2", "x3"}
    assert adj.excluded["Unnamed: 0"].startswith("identifier")


def test_left_out_table_names_each_role() -> None:
    rows = left_out_table({"a": "identifier: a row index", "b": "domain knowledge says it is post-treatment"}, [])
    assert rows == [
        {"column": "a", "role": "identifier", "reason": "identifier: a row index"},
        {"column": "b", "role": "post_treatment", "reason": "domain knowledge says it is post-treatment"},
    ]
    # A graph's mediator lies on a path "to the outcome": post-treatment, not a part of the outcome.
    mediator = "a mediator: on a directed path from the treatment to the outcome (every edge ...)"
    collider = "a collider or later measurement: caused by the outcome (every edge ...)"
    assert [r["role"] for r in left_out_table({"m": mediator, "c": collider}, [])] == ["post_treatment"] * 2
    assert left_out_table({"p": "part of the outcome: ..."}, [])[0]["role"] == "outcome_part"


@pytest.mark.parametrize(
    ("column", "outcome", "earlier"),
    [
        ("prior_earnings", "earnings", True),
        ("earnings_lag1", "earnings", True),
        ("lag_sales", "sales", True),
        ("baselineScore", "score", True),
        ("pre_bmi", "bmi", True),
        ("re74", "re78", True),
        ("sales_2019", "sales_2021", True),
        ("re78", "re74", False),  # a later period
        ("prior_income", "earnings", False),  # a baseline of something else
        ("skills_score", "earnings", False),
        ("earnings_followup", "earnings", False),
        ("weight0", "weight_gain", False),
    ],
)
def test_a_baseline_of_the_outcome_is_read_from_its_name(column: str, outcome: str, earlier: bool) -> None:
    assert (outcome_baseline(column, outcome) is not None) is earlier


def test_a_named_baseline_of_the_outcome_is_known_pre_treatment_unless_knowledge_says_otherwise() -> None:
    cands = ["age", "prior_earnings", "re74"]
    pre = known_pre_treatment(None, {}, "training", cands, "earnings")
    assert list(pre) == ["prior_earnings"] and "baseline of the outcome" in pre["prior_earnings"]
    assert list(known_pre_treatment(None, {}, "training", cands, "re78")) == ["re74"]
    stated = DomainKnowledge(post_treatment=["prior_earnings"])
    assert known_pre_treatment(stated, {}, "training", cands, "earnings") == {}
    tiers = {"training": 0, "prior_earnings": 1}  # the metadata's order puts it after the treatment
    assert known_pre_treatment(None, tiers, "training", cands, "earnings") == {}


def test_parts_of_a_declared_instrument_are_left_out() -> None:
    """Arm indicators that sum to the instrument would leave it no variation as controls."""
    rng = np.random.default_rng(6)
    n = 800
    arm = rng.integers(0, 4, n)  # 0 = no call, 1-3 = three call timings
    f = pd.DataFrame({f"arm{k}": (arm == k).astype(int) for k in (1, 2, 3)})
    f["no_call"] = (arm == 0).astype(int)
    f["age"] = rng.normal(50, 10, n)
    f["t"] = (arm > 0) * rng.binomial(1, 0.4, n)
    f["y"] = 0.1 * f["t"] + 0.01 * f["age"] + rng.normal(size=n)
    roles = {
        r.column: r.role for r in classify_columns(f, "t", "y", ["arm1", "arm2", "arm3", "age"], instrument="no_call")
    }
    assert roles == {"arm1": "instrument_part", "arm2": "instrument_part", "arm3": "instrument_part"}


def _trial(seed: int, post_effect: float | None, n: int = 20000) -> pd.DataFrame:
    """A coin-flip treatment (effect 0.5), three prognostic covariates and, if asked, a column
    measured afterwards that shares the outcome's noise and moves a little with the treatment."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    t = rng.binomial(1, 0.5, n)
    e = rng.normal(size=n)
    f = pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "c": x[:, 2], "t": t})
    f["y"] = 0.5 * t + x @ np.array([1.0, 0.5, -0.5]) + e
    if post_effect is not None:
        f["m"] = e + post_effect * t + rng.normal(scale=0.2, size=n)
    return f


def test_a_balanced_trial_names_the_column_that_moves_the_estimate() -> None:
    """Every covariate balanced (|SMD| < 0.1), yet adjusting for m moves 0.51 to 0.42 with SE 0.003."""
    move = randomised_move(_trial(1, 0.08), "t", "y", ["a", "b", "c", "m"])
    assert move.applies and move.why.startswith("balanced on every covariate")
    assert [c.column for c in move.carriers] == ["m"] and move.resolved
    assert move.carriers[0].role == "post_treatment_move"


def test_a_clean_trial_keeps_its_prognostic_covariates() -> None:
    for seed in range(4):
        move = randomised_move(_trial(seed, None, n=4000), "t", "y", ["a", "b", "c"])
        assert move.applies and not move.carriers, move


def _firms(n: int = 800, seed: int = 7) -> pd.DataFrame:
    """Positive parts a, b of an outcome, a confounder x and a 0/1 treatment."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    t = rng.binomial(1, 1 / (1 + np.exp(-x)))
    a = np.exp(3 + 0.2 * t + 0.3 * x + rng.normal(scale=0.3, size=n))
    b = rng.integers(20, 200, n).astype(float)
    return pd.DataFrame({"x": x, "t": t, "a": a.round(3), "b": b})


def test_a_ratio_leaves_its_numerator_out_and_keeps_its_divisor_with_a_flag() -> None:
    f = _firms()
    f["y"] = f["a"] / f["b"]
    roles = {r.column: r for r in classify_columns(f, "t", "y", ["x", "a", "b"])}
    assert set(roles) == {"a", "b"}
    assert roles["a"].leave_out and roles["a"].role == "outcome_component"
    assert not roles["b"].leave_out and roles["b"].role == "outcome_divisor"
    assert "y ≈ k * a^1 / b^1" in roles["a"].reason


def test_a_product_leaves_both_factors_out() -> None:
    f = _firms()
    f["y"] = f["a"] * f["b"]
    roles = classify_columns(f, "t", "y", ["x", "a", "b"])
    assert {(r.column, r.leave_out) for r in roles} == {("a", True), ("b", True)}


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_a_sum_or_a_difference_of_unnamed_columns_leaves_both_out(sign: float) -> None:
    f = _firms()
    f["y"] = f["a"] + sign * f["b"]
    roles = classify_columns(f, "t", "y", ["x", "a", "b"])
    assert {(r.column, r.role) for r in roles} == {("a", "outcome_component"), ("b", "outcome_component")}


def test_a_noisy_power_of_a_cause_is_no_ratio() -> None:
    """log y linear in log a with R² about 0.9: a cause of the outcome, not a column it is computed from."""
    f = _firms()
    rng = np.random.default_rng(8)
    f["y"] = np.sqrt(f["a"]) * np.exp(rng.normal(scale=0.05, size=len(f)))
    assert classify_columns(f, "t", "y", ["x", "a", "b"]) == []


def _coded(n: int = 1500, seed: int = 9) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    f = _base(n, seed)
    f["firm"] = rng.integers(100_000, 100_000 + 30 * n, n)  # six digits, about 2% repeated
    return f


def test_a_numeric_code_is_an_identifier_by_its_values() -> None:
    roles = classify_columns(_coded(), "t", "y", ["x", "firm"])
    assert [(r.column, r.role) for r in roles] == [("firm", "identifier")]
    assert "all 6 digits" in roles[0].reason


def test_near_unique_integers_that_are_measurements_are_kept() -> None:
    rng = np.random.default_rng(10)
    f = _coded()
    n = len(f)
    # Enrolment numbers issued in order, the treated enrolled later: related to the treatment, so kept.
    enrolled_at = rng.normal(size=n) + 0.5 * f["t"].to_numpy()
    f["firm"] = 100_000 + 7 * pd.Series(enrolled_at).rank(method="first").astype(int).to_numpy()
    f["salary"] = rng.integers(10_000, 99_999, n)  # five digits, near-unique, and it moves the outcome
    f["y"] = f["y"] + f["salary"] / 10_000
    f["sales"] = rng.lognormal(8, 1.5, n).round()  # near-unique whole numbers of many widths
    assert classify_columns(f, "t", "y", ["x", "firm", "salary", "sales"]) == []


def test_a_baseline_of_the_outcome_is_kept_however_close_to_it() -> None:
    """re75 next to re78 (rank correlation above the transform rule's 0.99): known pre-treatment by its
    name, so it is protected and never classified; without the protection the content rules would take it."""
    rng = np.random.default_rng(11)
    f = _base()
    f["re75"] = f["y"] - f["t"] + rng.normal(scale=0.05, size=len(f))
    f = f.rename(columns={"y": "re78"})
    cands = ["x", "re75"]
    pre = known_pre_treatment(None, {}, "t", cands, "re78")
    assert list(pre) == ["re75"]
    assert classify_columns(f, "t", "re78", cands, protected=set(pre)) == []
    assert [r.column for r in classify_columns(f, "t", "re78", cands)] == ["re75"]
