"""A causal question naming its design runs exactly that design, with the roles its words name, on
generated data with a known effect; a role it does not state unambiguously is declined in one line."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from whyflow.ask.planning import request_plan
from whyflow.ask.tools.causal_designs import DesignRequestError
from whyflow.ask.tools.causal_requests import parse_causal
from whyflow.ask.tools.request_spec import request_code

SEEDS = (1, 2, 3)


def _run(question: str, frame: pd.DataFrame) -> dict:
    parsed = parse_causal(question, frame)
    assert parsed is not None
    scope: dict = {"df": frame}
    exec(request_code(parsed[0]), scope)  # noqa: S102 - the code the sandbox would run
    result = scope["result"]
    assert result["_notes"] == {}, result["_notes"]
    return result


def _covers(effect: dict, truth: float, widen: float = 1.0) -> bool:
    lo, hi = effect["ci"]
    half = (hi - lo) / 2 * widen
    return (lo + hi) / 2 - half <= truth <= (lo + hi) / 2 + half


def _panel(seed: int, effect: float = 1.5) -> pd.DataFrame:
    """A staggered-free panel: half the states adopt in year 2003; state effects correlated with adoption."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(60):
        treated = i < 30
        level = rng.normal() + (1.0 if treated else 0.0)
        for t in range(6):
            d = int(treated and t >= 3)
            rows.append((f"s{i}", 2000 + t, d, level + 0.4 * t + effect * d + rng.normal(scale=0.3)))
    return pd.DataFrame(rows, columns=["state", "year", "policy", "sales"])


def _iv(seed: int, effect: float = 2.0) -> pd.DataFrame:
    """Schooling confounded by ability; distance shifts schooling only."""
    rng = np.random.default_rng(seed)
    n = 3000
    ability, dist = rng.normal(size=n), rng.normal(size=n)
    educ = 0.7 * dist + ability + rng.normal(size=n)
    wage = effect * educ + 2.0 * ability + rng.normal(size=n)
    return pd.DataFrame({"dist": dist, "educ": educ, "wage": wage})


def _rdd(seed: int, jump: float = 3.0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = 3000
    margin = rng.uniform(-1, 1, n)
    wealth = 1 + 2 * margin - margin**2 + jump * (margin >= 0) + rng.normal(scale=0.5, size=n)
    party = rng.choice(["tory", "labour"], n)
    return pd.DataFrame({"margin": margin, "wealth": wealth, "party": party})


def _observational(seed: int) -> pd.DataFrame:
    """A treatment confounded by two covariates, effect 2 + x1 (the ATT and the ATE differ)."""
    rng = np.random.default_rng(seed)
    n = 3000
    x1, x2 = rng.normal(size=n), rng.normal(size=n)
    t = (rng.random(n) < 1 / (1 + np.exp(-(1.0 * x1 - 0.5 * x2)))).astype(int)
    y = 1 + x1 + 0.5 * x2 + t * (2 + x1) + rng.normal(scale=0.5, size=n)
    return pd.DataFrame({"treated": t, "earnings": y, "x1": x1, "x2": x2})


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    "question",
    [
        "What is the effect of policy on sales by difference in differences, with unit column state "
        "and time column year? Round to the nearest hundredth.",
        "Using a DiD with state as the unit and year as the time, estimate the effect of (policy) on (sales). "
        "Round to the nearest hundredth.",
    ],
)
def test_difference_in_differences_recovers_the_effect(seed: int, question: str) -> None:
    frame = _panel(seed)
    got = _run(question, frame)
    effect = got["effect"]
    assert _covers(effect, 1.5, widen=1.3)
    assert got["answer"].startswith(f"{effect['estimate']:.2f} is the effect of 'policy' on 'sales'")
    assert "unit 'state', time 'year'" in got["answer"] and "clustered by 'state'" in got["answer"]
    import pyfixest as pf

    direct = pf.feols("sales ~ policy | state + year", data=frame, vcov={"CRV1": "state"})
    assert effect["estimate"] == pytest.approx(float(direct.coef()["policy"]), rel=1e-9)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    "question",
    [
        "Using dist as an instrument, what is the effect of educ on wage by two-stage least squares?",
        "What is the LATE of educ on wage, with the instrument: dist? Round to 3 decimal places.",
    ],
)
def test_instrumental_variables_undo_the_confounding(seed: int, question: str) -> None:
    frame = _iv(seed)
    got = _run(question, frame)
    effect = got["effect"]
    assert _covers(effect, 2.0, widen=1.3)
    ols = np.polyfit(frame.educ, frame.wage, 1)[0]
    assert abs(ols - 2.0) > 0.5  # the confounded slope is far off: the instrument did the work
    assert "instrument 'dist'" in got["answer"] and "first-stage F" in got["answer"]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    "question",
    [
        "What is the effect of winning on wealth by regression discontinuity, with the running variable margin "
        "and a cutoff of 0?",
        "Using an RDD, what is the effect of holding office on wealth at a zero margin of victory?",
    ],
)
def test_a_sharp_discontinuity_recovers_the_jump(seed: int, question: str) -> None:
    frame = _rdd(seed)
    got = _run("margin: margin of victory (vote share)\n\n" + question, frame)
    effect = got["effect"]
    assert _covers(effect, 3.0, widen=1.5)
    assert "running variable 'margin' at the cutoff 0" in got["answer"] and "rdrobust" in got["answer"]


def test_the_two_regressions_and_a_named_group(seed: int = 4) -> None:
    frame = _rdd(seed)
    question = (
        "What is the effect of office on wealth for tory candidates? The difference in predicted values at the "
        "point of discontinuity, a zero margin, between the two regressions. Round to the nearest hundredth."
    )
    got = _run(question, frame)
    tory = frame[frame.party == "tory"]
    import statsmodels.formula.api as smf

    direct = smf.ols("wealth ~ I(margin >= 0) * margin", data=tory).fit()
    assert got["effect"]["n"] == len(tory)
    assert got["effect"]["estimate"] == pytest.approx(float(direct.params["I(margin >= 0)[T.True]"]), rel=1e-9)
    assert got["answer"].startswith(f"{direct.params['I(margin >= 0)[T.True]']:.2f} ")
    assert "rows with party = tory" in got["answer"]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("estimand, words", [("att", "on the treated"), ("ate", "")])
def test_bias_adjusted_matching_covers_the_truth(seed: int, estimand: str, words: str) -> None:
    frame = _observational(seed)
    question = (
        f"What is the average treatment effect {words} of treated on earnings by nearest-neighbour matching with "
        "bias adjustment? Round to the nearest hundredth."
    )
    got = _run(question, frame)
    group = frame.treated == 1 if estimand == "att" else frame.treated >= 0
    truth = float((2 + frame.x1)[group].mean())
    assert _covers(got["effect"], truth, widen=1.3)
    assert "with the regression bias adjustment" in got["answer"] and "Abadie-Imbens standard error" in got["answer"]


def test_matching_is_what_the_estimator_computes() -> None:
    """Without bias adjustment and with one covariate the estimate is the plain 1-NN imputation."""
    frame = _observational(5)[["treated", "earnings", "x1"]]
    got = _run("Estimate the ATE of (treated) on (earnings) by nearest neighbor matching on x1.", frame)
    x = ((frame.x1 - frame.x1.mean()) / frame.x1.std(ddof=0)).to_numpy()
    t, y = frame.treated.to_numpy(), frame.earnings.to_numpy()
    gaps = []
    for i in range(len(t)):
        other = np.flatnonzero(t != t[i])
        j = other[np.argmin(np.abs(x[other] - x[i]))]
        gaps.append(y[i] - y[j] if t[i] == 1 else y[j] - y[i])
    assert got["effect"]["estimate"] == pytest.approx(float(np.mean(gaps)), rel=1e-9)
    assert "without bias adjustment" in got["answer"]


@pytest.mark.parametrize("seed", SEEDS)
def test_stratification_is_the_strata_weighted_difference(seed: int) -> None:
    frame = _observational(seed)
    got = _run(
        "What is the average treatment effect of treated on earnings by propensity score stratification into "
        "ten strata? Round to the nearest hundredth.",
        frame,
    )
    import statsmodels.api as sm

    x = sm.add_constant(frame[["x1", "x2"]].to_numpy())
    ps = sm.Logit(frame.treated.to_numpy(), x).fit(disp=0, method="bfgs", maxiter=500).predict(x)
    strata = pd.qcut(ps, 10, labels=False)
    cells = frame.assign(s=strata).groupby("s")
    direct = sum(
        len(c) * (c.earnings[c.treated == 1].mean() - c.earnings[c.treated == 0].mean()) for _, c in cells
    ) / len(frame)
    assert got["effect"]["estimate"] == pytest.approx(direct, rel=1e-6)
    assert abs(got["effect"]["estimate"] - float((2 + frame.x1).mean())) < 0.25  # ten strata remove most bias
    assert "10 strata" in got["answer"]


def test_synthetic_control_of_one_treated_unit() -> None:
    rng = np.random.default_rng(7)
    factors = rng.normal(size=(20, 2)).cumsum(axis=0)
    loads = rng.uniform(0, 1, size=(12, 2))
    rows = []
    for i in range(12):
        for t in range(20):
            d = int(i == 0 and t >= 14)
            value = 10 + factors[t] @ loads[i] + (5.0 if d else 0.0) + rng.normal(scale=0.05)
            rows.append((f"u{i}", t, d, value))
    frame = pd.DataFrame(rows, columns=["region", "period", "treat", "gdp"])
    got = _run(
        "What is the effect of treat on gdp by synthetic control, with unit column region and time column period?",
        frame,
    )
    assert abs(got["effect"]["estimate"] - 5.0) < 1.0
    assert got["effect"]["se"] is None and "no standard error" in got["answer"]


@pytest.mark.parametrize(
    "question, missing",
    [
        ("What is the effect of policy on sales by difference in differences?", "unit"),
        ("What is the effect of educ on wage by instrumental variables?", "instrument"),
        ("What is the effect of winning on wealth by regression discontinuity?", "running variable"),
        ("What is the effect of winning on wealth by RDD with running variable margin?", "cutoff"),
        ("What is the effect of the programme on the earnings score by matching?", "treatment"),
    ],
)
def test_an_unstated_role_is_declined_in_one_line(question: str, missing: str) -> None:
    frame = pd.concat([_panel(1).head(300), _iv(1).head(300), _rdd(1).head(300)], axis=1)
    with pytest.raises(DesignRequestError, match=missing) as caught:
        parse_causal(question, frame)
    assert "\n" not in str(caught.value)


def test_a_role_naming_several_columns_or_a_missing_one_is_declined() -> None:
    frame = _iv(1).assign(distance2=lambda d: d.dist * 2)
    with pytest.raises(DesignRequestError, match="several columns"):
        parse_causal("Using dist and distance2 as instruments, what is the effect of educ on wage by 2SLS?", frame)
    described = "ln.pay: log hourly pay of the worker\n\nWhat is the effect of educ on the log hourly pay by 2SLS, instrument: dist?"
    with pytest.raises(DesignRequestError, match="'ln.pay' in the data description"):
        parse_causal(described, frame)


def test_a_stated_restriction_is_the_subgroup_and_an_unplaced_one_declines() -> None:
    frame = _rdd(2)
    question = (
        "What is the effect of office on wealth by RDD at a zero margin? Please only consider candidates "
        "with a margin no larger than 0.5 and no smaller than -0.5."
    )
    got = _run(question, frame)
    inside = frame[frame.margin.abs() <= 0.5]
    assert got["effect"]["n"] == len(inside)
    assert "rows with margin <= 0.5, rows with margin >= -0.5" in got["answer"]
    plan = request_plan(
        "What is the effect of office on wealth by RDD at a zero margin? Please only consider people no older than 22.",
        frame,
    )
    assert plan is not None and plan.route == "unanswerable" and "restricts the rows by no column" in plan.reasoning
    assert parse_causal("What is the mean of wealth?", frame) is None
    # a design word in a question that asks for no effect is not a design
    assert parse_causal("Use a stratified split of the rows by party.", frame) is None


@pytest.mark.parametrize("seed", SEEDS)
def test_a_two_group_two_period_design_from_its_indicators(seed: int) -> None:
    """A repeated cross-section: D = treated group x post period, the groups differing in level."""
    rng = np.random.default_rng(seed)
    n = 4000
    group, post = rng.integers(0, 2, n), rng.integers(0, 2, n)
    y = 2.0 * group + 1.0 * post + 0.8 * group * post + rng.normal(size=n)
    frame = pd.DataFrame({"treated_state": group, "after_law": post, "hours": y})
    got = _run(
        "What is the effect of the law on hours by difference in differences, with treated group treated_state "
        "and post period after_law?",
        frame,
    )
    cells = frame.groupby(["treated_state", "after_law"]).hours.mean()
    direct = (cells[1, 1] - cells[1, 0]) - (cells[0, 1] - cells[0, 0])
    assert got["effect"]["estimate"] == pytest.approx(direct, rel=1e-9)
    assert _covers(got["effect"], 0.8, widen=1.3)
    assert "treated group 'treated_state', post period 'after_law'" in got["answer"]


def test_stated_matching_covariates_are_the_ones_used() -> None:
    frame = _observational(6).assign(noise=lambda d: np.random.default_rng(0).normal(size=len(d)))
    parsed = parse_causal("Estimate the ATT of (treated) on (earnings) by matching on x1 and x2.", frame)
    assert parsed is not None and parsed[0].requests[0].options["covariates"] == ["x1", "x2"]
    with pytest.raises(DesignRequestError, match="name no column"):
        parse_causal("Estimate the ATT of (treated) on (earnings) by matching on age and income.", frame)


def _ask(tmp_path: Path, frame: pd.DataFrame, question: str) -> str:
    """The answer of the ask recipe itself: the real runner and sandbox, no model."""
    from whyflow.ask.state import AskState
    from whyflow.flows.ask_jobs.job import AskRequest, prepare_ask_job
    from whyflow.flows.recipes.builtin import builtin_recipe
    from whyflow.flows.recipes.plan import load_plan
    from whyflow.flows.running.progress import Reporter
    from whyflow.flows.running.runner import LocalExecutor, Runner

    recipe = builtin_recipe("ask")
    data = tmp_path / "data.csv"
    frame.to_csv(data, index=False)
    plan = load_plan(recipe)
    folder = prepare_ask_job(AskRequest(question, [str(data)], recipe=str(recipe), output=str(tmp_path / "job")), plan)
    state = folder.load_any()
    assert isinstance(state, AskState)
    Runner(plan, folder, state, LocalExecutor(), Reporter()).run()
    assert state.final_output is not None
    return state.final_output.answer


@pytest.mark.parametrize("design", ["did", "rdd"])
def test_the_sandbox_runs_the_named_design(tmp_path: Path, design: str) -> None:
    if design == "did":
        frame = _panel(9)
        question = (
            "What is the effect of policy on sales by DiD, unit column state, time column year? Round to 2 decimals."
        )
        truth = 1.5
    else:
        frame = _rdd(9)
        question = (
            "By regression discontinuity, what is the effect of office on wealth at a zero margin? Round to 2 decimals."
        )
        truth = 3.0
    answer = _ask(tmp_path, frame, question)
    first = answer.split()[0]
    assert re.fullmatch(r"-?\d+\.\d{2}", first), answer
    assert abs(float(first) - truth) < 0.5, answer


def test_one_column_in_two_roles_is_declined() -> None:
    with pytest.raises(DesignRequestError, match="two roles"):
        parse_causal("Using educ as an instrument, what is the effect of educ on wage by 2SLS?", _iv(1))


@pytest.mark.parametrize(
    "make, question, truth",
    [
        (
            lambda s: _panel(s).rename(columns={"state": "county", "year": "quarter"}),
            "What's the impact of policy on sales using a difference-in-differences design where the unit is county "
            "and the period is quarter?",
            1.5,
        ),
        (_iv, "Estimate the causal effect of educ on wage instrumenting educ with dist.", 2.0),
        (_iv, "What is the effect of educ on wage? Use instrumental variables with dist as the instrument.", 2.0),
        (
            _rdd,
            "Using a regression discontinuity design with a threshold of 0 on margin, what is the effect of winning "
            "on wealth?",
            3.0,
        ),
    ],
)
@pytest.mark.parametrize("seed", SEEDS)
def test_other_phrasings_name_the_same_roles(
    make: Callable[[int], pd.DataFrame], question: str, truth: float, seed: int
) -> None:
    got = _run(question, make(seed))
    assert _covers(got["effect"], truth, widen=1.5), got["answer"]
