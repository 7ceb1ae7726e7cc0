"""Whatever the rows hold: values that overflow a sum and a megabyte of text in one cell."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.bad_inputs.common import QUICK, T, Y, headline_row, study
from whyflow.causal.dataprep.implausible import overflow_limit, overflowing
from whyflow.causal.dataprep.profiling import build_profile
from whyflow.cli.main import main

pytestmark = pytest.mark.usefixtures("prefect_harness")


def test_values_whose_squares_overflow_a_sum_are_flagged_and_read_as_missing() -> None:
    frame = study(500)
    frame["outcome"] = frame["outcome"].astype(float)
    frame.loc[frame.index[[3, 40, 77]], "outcome"] = 1e308
    frame.loc[frame.index[[5]], "x1"] = -1.5e200
    frame.loc[frame.index[[6]], "x2"] = 1e120  # large, but 500 of them square-sum to 5e242: a number
    report = build_profile(frame, "treated", "outcome")
    assert report.overflowing == {"outcome": 3, "x1": 1}
    assert report.profile.missing_values["outcome"] == 3 and report.profile.missing_values["x2"] == 0
    stats = report.profile.numeric_stats["outcome"]
    assert np.isfinite(stats["mean"]) and stats["max"] < 1e3  # the profile's figures leave the values out
    assert any("outcome: 3 implausibly large values (up to 1e+308" in r for r in report.reasons)
    values = np.array([1.0, np.nan, np.inf, 2e160, -3.0])
    assert overflow_limit(4) == pytest.approx(np.sqrt(np.finfo(float).max / 4))
    assert overflowing(values).tolist() == [False, False, False, True, False]


def test_an_exports_1e308_outcome_gives_an_answer_with_no_warning_on_the_terminal(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Ten outcome values of 1e308 once failed every estimator after a screen of NumPy overflow warnings."""
    frame = study(600)
    frame.loc[frame.index[::60], "outcome"] = 1e308  # ten rows
    path = tmp_path / "overflow.csv"
    frame.to_csv(path, index=False)
    before = path.read_bytes()
    recipe = tmp_path / "repair.yaml"
    recipe.write_text(
        "name: repair\nsteps:\n  - agent: data_profiler\n  - agent: data_repair\n  - agent: effect_estimator\n"
    )
    out = tmp_path / "job"
    code = main(["run", str(recipe), "--data", str(path), *T, *Y, "-o", str(out)])
    printed = capfd.readouterr()
    state = json.loads((out / "state.json").read_text())
    assert code == 0 and state["status"] == "completed", state.get("error_message")
    assert "Warning" not in printed.err and "Warning" not in printed.out, printed.err
    assert "10 implausibly large values in outcome" in printed.out
    repair = next(r for r in state["data_repairs"] if r.get("issue") == "implausibly large values")
    assert repair["column"] == "outcome" and repair["n_before"] == 10
    repaired = pd.read_parquet(state["dataframe_path"])
    assert len(repaired) == 590 and repaired["outcome"].abs().max() < 1e3
    head = headline_row(state)
    assert head["ci_lower"] <= 2.0 <= head["ci_upper"], head
    assert path.read_bytes() == before


def test_warnings_of_a_run_go_to_the_job_folders_log(tmp_path: Path) -> None:
    import warnings

    from whyflow.runtime.warnings_log import WARNINGS_LOG, warnings_to_log

    shown_before = warnings.showwarning
    with warnings_to_log(tmp_path), warnings.catch_warnings():
        warnings.simplefilter("always")
        np.add.reduce(np.array([1e308, 1e308]))  # NumPy's "overflow encountered in reduce"
        warnings.warn("a library's note", UserWarning, stacklevel=1)
    assert warnings.showwarning is shown_before
    logged = (tmp_path / WARNINGS_LOG).read_text()
    assert "RuntimeWarning: overflow encountered in reduce" in logged and "UserWarning: a library's note" in logged


def test_two_jobs_at_once_each_keep_their_own_warnings(tmp_path: Path) -> None:
    """The chat page runs jobs in threads side by side: a warning goes to the log of the job that raised it."""
    import threading
    import warnings

    from whyflow.runtime.warnings_log import WARNINGS_LOG, warnings_to_log

    shown_before = warnings.showwarning
    both_open = threading.Barrier(2)

    def job(name: str) -> None:
        folder = tmp_path / name
        folder.mkdir()
        with warnings_to_log(folder):
            both_open.wait(timeout=10)
            warnings.warn_explicit(f"note of {name}", UserWarning, name, 1)  # a place of its own: shown once
            both_open.wait(timeout=10)

    threads = [threading.Thread(target=job, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert warnings.showwarning is shown_before
    for name, other in (("a", "b"), ("b", "a")):
        logged = (tmp_path / name / WARNINGS_LOG).read_text()
        assert f"note of {name}" in logged and f"note of {other}" not in logged


def test_a_deployments_run_keeps_library_warnings_off_the_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """The runner routes them, so a deployment (and the chat page) logs them as `whyflow run` does."""
    import warnings

    from tests.bad_inputs.common import TOY
    from whyflow.deployments import whyflow_deployment
    from whyflow.runtime.warnings_log import WARNINGS_LOG

    monkeypatch.setenv("WHYFLOW_RUNS_DIR", str(tmp_path / "runs"))
    data = tmp_path / "study.csv"
    study(300).to_csv(data, index=False)
    with warnings.catch_warnings():  # shown on stderr, as outside pytest (which would collect it itself)
        warnings.simplefilter("default")
        warnings.showwarning = lambda message, category, filename, lineno, file=None, line=None: sys.stderr.write(
            warnings.formatwarning(message, category, filename, lineno, line)
        )
        done = whyflow_deployment(
            recipe=TOY,
            data=str(data),
            treatment="treated",
            outcome="outcome",
            metadata=None,
            overrides={"toy_estimator.warn": "true"},
        )
    printed = capfd.readouterr()
    assert done["status"] == "completed"
    assert "toy estimator: overflow" not in printed.err + printed.out, printed.err
    assert "RuntimeWarning: toy estimator: overflow" in (Path(done["job_dir"]) / WARNINGS_LOG).read_text()


_MEASURED = """
import json, resource, sys, threading, time
import psutil
own = psutil.Process()
peak = [own.memory_info().rss]
def sample():
    while True:
        peak[0] = max(peak[0], own.memory_info().rss)
        time.sleep(0.05)
threading.Thread(target=sample, daemon=True).start()
from whyflow.cli.main import main
code = main(sys.argv[1:])
children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(json.dumps({"code": code, "peak_mb": max(peak[0], own.memory_info().rss, children) / 2**20}))
"""
"""The run's peak memory: its own resident size sampled while it runs (its ``RUSAGE_SELF`` would
count the test process it was started from, whose pages it held until ``exec``) and the largest of
its children's, the notebook's kernel among them."""


@pytest.mark.slow
def test_a_megabyte_text_cell_is_shown_cut_and_the_notebook_stays_small(tmp_path: Path) -> None:
    """One 1 MB category label in 2,000 rows once grew the notebook's kernel to 12.6 GB over four minutes."""
    frame = study(2000)
    rng = np.random.default_rng(3)
    frame["region"] = rng.choice(["north", "south", "east"], len(frame)).astype(object)
    frame.loc[7, "region"] = "x" * 1_000_000
    path = tmp_path / "long_cell.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "job"
    args = ["run", QUICK, "--data", str(path), *T, *Y, "-o", str(out)]
    args += ["--set", "notebook_generator.html=false", "--set", "notebook_generator.timeout=240"]
    done = subprocess.run([sys.executable, "-c", _MEASURED, *args], capture_output=True, text=True, timeout=600)
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    state = json.loads((out / "state.json").read_text())
    assert measured["code"] == 0 and state["status"] == "completed", state.get("error_message")
    assert measured["peak_mb"] < 1024, measured
    notebook = json.loads((out / "report.ipynb").read_text())
    errors = [o for c in notebook["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, errors
    assert (out / "state.json").stat().st_size < 200_000  # the label is stored cut, not whole
    levels = state["data_profile"]["categorical_stats"]["region"]
    long = [k for k in levels if k.startswith("x" * 80)]
    assert long and long[0].startswith("x" * 80 + "… (1,000,000 characters, #") and levels[long[0]] == 1
    assert pd.read_parquet(state["dataframe_path"])["region"].str.len().max() == 1_000_000  # the data keep it
