"""A design's own checks, end to end through the CLI as a user runs it (whyflow/recipes/causal_analysis.yaml).

A panel the user did not declare is refused with the flags that declare it; staggered adoption whose
adopters drift before they adopt is refused on its pre-trend test, and the notebook draws the event-time
coefficients beside the test's result; a fuzzy discontinuity is estimated from ``--running-variable`` and
``--cutoff`` alone and refused when take-up barely jumps. Generated data with a known effect each time.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import numpy as np
import pandas as pd
import pytest

from whyflow.cli.main import main

pytestmark = [pytest.mark.usefixtures("prefect_harness"), pytest.mark.slow]
FAST = ["--set", "causal_discovery.bootstrap=0", "--set", "effect_estimator.bootstrap=30"]
NOT_EXECUTED = ["--set", "notebook_generator.execute=false", "--set", "notebook_generator.html=false"]


def _run(frame: pd.DataFrame, tmp_path: Path, *flags: str) -> tuple[dict[str, Any], Any]:
    """The CLI on ``frame`` with ``flags``: the saved state and the notebook."""
    data = tmp_path / "study.csv"
    frame.to_csv(data, index=False)
    out = tmp_path / "job"
    assert main(["run", "causal_analysis", "--data", str(data), *flags, "-o", str(out), *FAST]) == 0
    state = json.loads((out / "state.json").read_text())
    assert state["status"] == "completed"
    return state, nbformat.read(out / "report.ipynb", as_version=4)


def _headline(state: dict[str, Any]) -> dict[str, Any]:
    (head,) = [e for e in state["treatment_effects"] if e["details"].get("headline")]
    return head


def _text(nb: Any) -> str:
    return "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


def test_an_undeclared_panel_is_refused_with_the_flags_that_declare_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Counties over eight periods in a column named 't' (no time word, so the profile names no time column):
    the unit effect drives both treatment and outcome, and rows of one county are not independent."""
    rng = np.random.default_rng(5)
    units, periods = 60, 8
    u, t = np.repeat(np.arange(units), periods), np.tile(np.arange(1, periods + 1), units)
    a = rng.normal(size=units)
    x = 0.5 * a[u] + rng.normal(size=u.size)
    d = rng.binomial(1, 1 / (1 + np.exp(-a[u])))
    y = 2 * a[u] + 0.1 * t + 1.0 * d + 0.5 * x + rng.normal(size=u.size)
    frame = pd.DataFrame({"county": u + 100, "t": t, "x": x.round(4), "treated": d, "y": y.round(4)})
    state, nb = _run(frame, tmp_path, "-t", "treated", "-y", "y", *NOT_EXECUTED)
    assert state["data_profile"]["time_column"] is None
    last = state["critique_history"][-1]
    assert last["decision"] != "APPROVE"
    flags = "--unit county --time t"
    assert flags in last["verdict"]
    printed = capsys.readouterr().out
    assert flags in printed and "'t' is read as the time from the data" in printed
    assert flags in _text(nb)


def _pre_trend(seed: int, firms: int = 80, drift: float = 0.5) -> pd.DataFrame:
    """Firms over 2001-2010 adopting in 2005, in 2008 or never, with an effect of 1; the adopters' outcome grows
    by ``drift`` a year more than the never-treated's from the start: parallel trends fail before adoption."""
    rng = np.random.default_rng(seed)
    years = np.arange(2001, 2011)
    start = np.array([2005, 2008, 10_000])[rng.choice(3, size=firms, p=[0.35, 0.35, 0.3])]
    u, yr = np.repeat(np.arange(firms), years.size), np.tile(years, firms)
    d = (yr >= start[u]).astype(int)
    adopter = (start[u] < 10_000).astype(float)
    y = rng.normal(size=firms)[u] + 0.2 * (yr - 2001) + drift * adopter * (yr - 2001) + d + rng.normal(size=u.size)
    return pd.DataFrame({"firm": u + 1000, "year": yr, "treated": d, "outcome": y.round(4)})


def test_staggered_adoption_with_a_pre_trend_is_refused_and_the_notebook_draws_it(tmp_path: Path) -> None:
    state, nb = _run(_pre_trend(0), tmp_path, "-t", "treated", "-y", "outcome", "--unit", "firm", "--time", "year")
    head = _headline(state)
    assert "two-stage" in head["method"]
    study = head["details"]["extras"]["event_study"]
    assert study["pretrend_p"] < 0.05
    last = state["critique_history"][-1]
    assert last["decision"] != "APPROVE" and "pre-trends" in last["verdict"]
    assert not head["ci_lower"] <= 1.0 <= head["ci_upper"]  # the drift biases it: refusing is what is right
    (figure,) = [c for c in nb.cells if "figure-event-study" in c.metadata.get("tags", [])]
    assert [o for o in figure.outputs if o.output_type == "error"] == []
    assert any("image/png" in o.get("data", {}) for o in figure.outputs), "the event-time figure was not drawn"
    assert "**Pre-trends: rejected.**" in _text(nb) and f"p = {study['pretrend_p']:.3g}" in _text(nb)


def test_parallel_trends_draw_the_figure_with_the_test_not_rejecting(tmp_path: Path) -> None:
    state, nb = _run(
        _pre_trend(1, drift=0.0),
        tmp_path,
        "-t",
        "treated",
        "-y",
        "outcome",
        "--unit",
        "firm",
        "--time",
        "year",
        *NOT_EXECUTED,
    )
    head = _headline(state)
    assert head["details"]["extras"]["event_study"]["pretrend_p"] >= 0.05
    assert state["critique_history"][-1]["decision"] == "APPROVE"
    assert head["ci_lower"] <= 1.0 <= head["ci_upper"]
    assert [c for c in nb.cells if "figure-event-study" in c.metadata.get("tags", [])]
    assert "**Pre-trends: not rejected.**" in _text(nb)


_SCORE_AT_ZERO = ("-t", "treated", "-y", "outcome", "--running-variable", "score", "--cutoff", "0")
"""A discontinuity in ``treated`` at ``score`` = 0, its effect on ``outcome``."""


@pytest.mark.parametrize("stated", [[], ["--fuzzy"]], ids=["read-from-data", "stated"])
def test_a_fuzzy_discontinuity_is_estimated_from_the_running_variable_and_cutoff(
    stated: list[str], tmp_path: Path
) -> None:
    from benchmarks.truth_kinds import make

    case = make("fuzzy_rdd", seed=0, n=2000)
    state, _ = _run(case.frame, tmp_path, *_SCORE_AT_ZERO, *stated, *NOT_EXECUTED)
    head = _headline(state)
    assert head["details"]["family"] == "rdd" and head["details"]["extras"]["design"] == "fuzzy"
    assert head["details"]["extras"]["first_stage_f"] >= 10
    assert head["ci_lower"] <= case.effect <= head["ci_upper"]
    assert state["critique_history"][-1]["decision"] == "APPROVE"


def test_a_stated_fuzzy_design_on_a_sharp_cutoff_says_it_is_sharp(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from benchmarks.truth_kinds import make

    case = make("sharp_rdd", seed=0, n=800)
    rv, cut = case.args["running_variable"], str(case.args["cutoff"])
    flags = ["-t", case.args["treatment"], "-y", case.args["outcome"], "--running-variable", rv, "--cutoff", cut]
    state, _ = _run(case.frame, tmp_path, *flags, "--fuzzy", *NOT_EXECUTED)
    head = _headline(state)
    assert head["details"]["extras"]["design"] == "sharp"
    assert head["ci_lower"] <= case.effect <= head["ci_upper"]
    assert any(i.startswith("Sharp, not fuzzy: --fuzzy was stated") for i in state["critique_history"][-1]["issues"])
    assert "Sharp, not fuzzy" in capsys.readouterr().out


def test_a_fuzzy_discontinuity_whose_take_up_barely_jumps_is_refused(tmp_path: Path) -> None:
    """Take-up rises by about 4 points at the cutoff: the ratio of the jumps divides by almost nothing."""
    rng = np.random.default_rng(3)
    n = 2000
    s, u = rng.uniform(-1, 1, n), rng.normal(size=n)
    t = rng.binomial(1, 1 / (1 + np.exp(-(-0.1 + 0.15 * (s >= 0) + 0.8 * u))))
    y = 1 + 0.8 * s + 2 * t + 0.7 * u + rng.normal(scale=0.5, size=n)
    frame = pd.DataFrame({"score": s.round(5), "treated": t, "outcome": y.round(4)})
    state, _ = _run(frame, tmp_path, *_SCORE_AT_ZERO, *NOT_EXECUTED)
    assert _headline(state)["details"]["extras"]["design"] == "fuzzy"
    last = state["critique_history"][-1]
    assert last["decision"] == "REJECT" and "weak first stage of the fuzzy discontinuity" in last["verdict"]
