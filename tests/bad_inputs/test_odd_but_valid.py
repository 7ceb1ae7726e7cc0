"""Input that only looks odd (compressed, semicolons, Latin-1, `?`, dates, infinities, duplicates) is read as meant and analysed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.bad_inputs.common import (
    FAST,
    FULL,
    QUICK,
    TOY,
    T,
    Y,
    headline_row,
    quick_run,
    study,
)
from whyflow.cli.main import main

pytestmark = pytest.mark.usefixtures("prefect_harness")


def test_multi_valued_and_continuous_treatments_pass_the_checks(tmp_path: Path) -> None:
    """Not rejected up front: a numeric dose gets a slope estimate (issue 9)."""
    from whyflow.flows.jobstore.jobs import RunRequest, prepare_job
    from whyflow.flows.recipes.plan import load_plan

    frame = study(200)
    frame["dose"] = np.random.default_rng(0).integers(0, 4, len(frame))
    frame["hours"] = np.random.default_rng(1).normal(10, 2, len(frame))
    path = tmp_path / "d.csv"
    frame.to_csv(path, index=False)
    plan = load_plan(QUICK)
    for i, t in enumerate(("dose", "hours")):
        request = RunRequest(
            recipe=QUICK, data=str(path), treatment=t, outcome="outcome", output=str(tmp_path / f"j{i}")
        )
        assert prepare_job(request, plan).exists()


@pytest.mark.slow
def test_a_continuous_treatment_gets_a_slope_through_the_cli(tmp_path: Path) -> None:
    """No design given: hours of training (many values) -> a slope per hour, named as such in the state."""
    frame = study(300)
    rng = np.random.default_rng(5)
    frame["hours"] = 10 + 2 * frame["x1"] + rng.normal(0, 2, len(frame))
    frame["outcome"] = 0.5 * frame["hours"] + frame["x1"] + rng.normal(size=len(frame))
    path = tmp_path / "training.csv"
    frame.drop(columns="treated").to_csv(path, index=False)
    out = tmp_path / "job"
    code = main(["run", QUICK, "--data", str(path), "-t", "hours", *Y, "-o", str(out), *FAST])
    state = json.loads((out / "state.json").read_text())
    assert code == 0 and state["status"] == "completed", state.get("error_message")
    head = headline_row(state)
    assert head["estimand"] == "slope" and head["treatment_variable"] == "hours"
    assert "per one-unit increase in hours" in head["details"]["extras"]["estimand_description"]
    assert head["ci_lower"] <= 0.5 <= head["ci_upper"], head


# ---- odd but valid input: read as meant, analysed ----------------------------------------------
@pytest.mark.parametrize("compression", ["gzip", "bz2", "zip", "xz"])
def test_a_compressed_csv_is_read_as_pandas_reads_it(compression: str, tmp_path: Path) -> None:
    from whyflow.runtime.data import describe_read, read_table

    frame = study(300)
    path = tmp_path / f"study.csv.{ {'gzip': 'gz'}.get(compression, compression) }"
    frame.to_csv(path, index=False, compression=compression)
    read = read_table(path)
    pd.testing.assert_frame_equal(read, frame, check_dtype=False)
    assert describe_read(read).startswith(("gzip", "bzip2", "zip", "xz")) and "-compressed" in describe_read(read)
    misnamed = tmp_path / "plain_name.csv"  # recognised by its first bytes, not its name
    misnamed.write_bytes(path.read_bytes())
    pd.testing.assert_frame_equal(read_table(misnamed), frame, check_dtype=False)


def test_a_gzipped_csv_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "study.csv.gz"
    study(300).to_csv(path, index=False)
    out = tmp_path / "job"
    code = main(["run", TOY, "--data", str(path), *T, *Y, "-o", str(out)])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert "gzip-compressed" in printed.out and json.loads((out / "state.json").read_text())["status"] == "completed"


def test_semicolons_with_decimal_points_are_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`x1;x2;treated;outcome` / `0.94;-1.39;1;1.47`: numbers, not one text column."""
    path = tmp_path / "points.csv"
    study(600).round(4).to_csv(path, sep=";", index=False)
    state = quick_run(path, tmp_path / "job")
    assert "columns separated by semicolons, decimal points" in capsys.readouterr().out
    assert state["data_profile"]["feature_types"]["outcome"] == "numeric"
    head = headline_row(state)
    assert head["ci_lower"] <= 2.0 <= head["ci_upper"], head


def test_the_decimal_mark_of_a_semicolon_file_is_read_from_its_numbers(tmp_path: Path) -> None:
    """``0,5`` is a decimal comma, ``0.5`` a decimal point; ``1.234`` (a thousand, or not) decides nothing."""
    from whyflow.runtime.data import describe_read, read_table

    commas = tmp_path / "commas.csv"
    commas.write_text("a;b;y\n1.234;0,5;2,5\n2.345;1,5;3,5\n")
    points = tmp_path / "points.csv"
    points.write_text("a;b;y\n1.234;0.5;2.5\n2.345;1.5;3.5\n")
    read = read_table(commas)
    assert read["b"].tolist() == [0.5, 1.5] and read["a"].tolist() == ["1.234", "2.345"]  # data repair parses them
    assert describe_read(read) == "columns separated by semicolons, decimal commas"
    read = read_table(points)
    assert read["a"].tolist() == [1.234, 2.345] and read["y"].tolist() == [2.5, 3.5]
    assert describe_read(read) == "columns separated by semicolons, decimal points"


def test_a_header_of_numbered_placeholders_gives_way_to_the_names_below_it(tmp_path: Path) -> None:
    """R writes a table without names as "V1","V2": the first row then holds the real names, and
    the columns keep their types; columns really called x1, x2 (their first row a value) stay."""
    from whyflow.runtime.data import describe_read, read_table

    path = tmp_path / "survey.csv"
    path.write_text('"v1","v2","v3"\n"position","college_grad","age"\n"support","yes",31\n"oppose","no",45\n')
    before = path.read_bytes()
    read = read_table(path)
    assert list(read.columns) == ["position", "college_grad", "age"] and read["age"].tolist() == [31, 45]
    assert describe_read(read) == "column names from line 2 (line 1 holds the placeholders v1, v2, v3)"
    assert path.read_bytes() == before
    kept = tmp_path / "kept.csv"
    kept.write_text("x1,x2\nlow,a\nhigh,b\nlow,a\n")  # 'low' recurs below: a value, not a name
    assert list(read_table(kept).columns) == ["x1", "x2"]
    gapped = tmp_path / "gapped.csv"
    gapped.write_text("V1,V3\nname,size\nx,y\n")  # not numbered in order: names, however odd
    assert list(read_table(gapped).columns) == ["V1", "V3"]


@pytest.mark.parametrize("kind", ["continuous", "discrete"])
def test_duplicates_are_counted_and_dropped_only_when_they_are_copies(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """300 repeated rows of 2,000: copies where x1 is continuous (dropped); ordinary where every column is discrete."""
    rng = np.random.default_rng(7)
    if kind == "continuous":
        base = study(1700, seed=3)
        frame = pd.concat([base, base.iloc[:300]], ignore_index=True).sample(frac=1, random_state=1)
        said, rows = "300 exact duplicate rows dropped: x1 is continuous", 1700
    else:
        n = 2000
        frame = pd.DataFrame({"age_band": rng.integers(0, 4, n), "region": rng.integers(0, 3, n)})
        frame["treated"] = rng.binomial(1, 0.3 + 0.2 * (frame["region"] == 1))
        frame["outcome"] = rng.integers(0, 5, n) + frame["treated"] + frame["age_band"]
        repeats = int(frame.duplicated().sum())
        said, rows = f"{repeats:,} exact duplicate rows kept: every column is discrete", n
    path = tmp_path / "d.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "job"
    state = quick_run(path, out)
    printed = capsys.readouterr().out
    profiler_line = next(line for line in printed.splitlines() if "✓ data_profiler" in line)
    assert said in profiler_line and f"Data: {said}" in printed, printed
    assert state["data_profile"]["n_samples"] == rows == len(pd.read_parquet(state["dataframe_path"]))
    assert said in state["data_profile"]["duplicates_note"]
    report = json.loads((out / "report.ipynb").read_text())
    assert any(said in "".join(c["source"]) for c in report["cells"] if c["cell_type"] == "markdown")


def test_old_mac_line_endings_are_read(tmp_path: Path) -> None:
    """A CSV whose lines end in a bare carriage return (old Mac exports) runs like any other."""
    frame = study(300)
    path = tmp_path / "mac.csv"
    path.write_bytes(frame.to_csv(index=False, lineterminator="\r").encode())
    before = path.read_bytes()
    out = tmp_path / "job"
    code = main(["run", QUICK, "--data", str(path), *T, *Y, "-o", str(out), *FAST])
    state = json.loads((out / "state.json").read_text())
    assert code == 0 and state["status"] == "completed", state.get("error_message")
    assert state["data_profile"]["n_samples"] == 300 and path.read_bytes() == before


def test_european_csv_is_read_as_a_spreadsheet_user_expects(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """Semicolons, decimal commas, Windows-1252 text, '?' for missing: read, said, repaired; no GE noise."""
    frame = study(300)
    frame["région"] = np.where(np.arange(len(frame)) % 2 == 0, "Île-de-France", "Rhône")
    frame["outcome"] = frame["outcome"].round(4).astype(object)
    frame.loc[frame.index[::30], "outcome"] = "?"
    path = tmp_path / "etude.csv"
    frame.to_csv(path, sep=";", decimal=",", index=False, encoding="cp1252")
    before = path.read_bytes()
    recipe = tmp_path / "repair.yaml"
    recipe.write_text("name: repair\nsteps:\n  - agent: data_profiler\n  - agent: data_repair\n")
    out = tmp_path / "job"
    code = main(["run", str(recipe), "--data", str(path), *T, *Y, "-o", str(out)])
    printed = "".join(capfd.readouterr())
    assert code == 0, printed
    assert "read as Windows-1252" in printed and "semicolons, decimal commas" in printed and "10 '?'" in printed
    assert "Created temporary directory" not in printed and "Traceback" not in printed
    state = json.loads((out / "state.json").read_text())
    assert state["data_profile"]["feature_types"]["outcome"] == "numeric"
    repaired = pd.read_parquet(state["dataframe_path"])  # rows without an outcome dropped, never imputed
    expected = pd.to_numeric(frame["outcome"], errors="coerce").dropna().to_numpy(dtype=float)
    assert np.allclose(repaired["outcome"].to_numpy(dtype=float), expected)
    assert set(repaired["région"]) == {"Île-de-France", "Rhône"}
    assert path.read_bytes() == before


@pytest.mark.slow
def test_dates_and_infinities_are_handled_and_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    frame = study(800)
    frame["visit_on"] = pd.date_range("2022-01-01", periods=len(frame), freq="D").strftime("%Y-%m-%d")
    frame["x1"] = frame["x1"].astype(float)
    frame.loc[frame.index[100:105], "x1"] = np.inf
    frame.loc[frame.index[200:202], "outcome"] = -np.inf
    path = tmp_path / "dated.csv"
    frame.to_csv(path, index=False)
    pinned = (
        "--set",
        "effect_estimator.methods=[naive,ols,aipw]",
        "--set",
        "effect_estimator.propensity_model=logistic",
    )
    state = quick_run(path, tmp_path / "job", *pinned)
    printed = capsys.readouterr().out
    assert "5 infinite values in x1 read as missing" in printed and "visit_on holds dates" in printed
    profile = state["data_profile"]
    assert profile["feature_types"]["visit_on"] == "datetime" and profile["time_column"] == "visit_on"
    assert "visit_on" not in profile["potential_confounders"]
    head = headline_row(state)
    assert head["ci_lower"] <= 2.0 <= head["ci_upper"], head


def _repair_recipe(folder: Path) -> Path:
    recipe = folder / "repair.yaml"
    recipe.write_text(
        "name: repair\nsteps:\n  - agent: data_profiler\n  - agent: data_repair\n  - agent: effect_estimator\n"
    )
    return recipe


@pytest.mark.slow
def test_dropped_duplicates_and_an_empty_column_are_said_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The full recipe: 300 exact repeats and an all-empty column are dropped, never silently."""
    frame = study(300)
    frame["notes"] = np.nan
    frame = pd.concat([frame, frame], ignore_index=True)  # 600 rows, 300 exact repeats
    path = tmp_path / "twice.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "job"
    code = main(["run", FULL, "--data", str(path), *T, *Y, "-o", str(out), *FAST])
    printed = capsys.readouterr().out
    state = json.loads((out / "state.json").read_text())
    assert code == 0 and state["status"] == "completed", state.get("error_message")
    said = ("300 duplicate rows removed", "notes: empty column (no value in any row")
    assert all(s in printed for s in said), printed
    assert "300 exact duplicate rows dropped: x1 is continuous" in printed  # the profiler's copy holds none
    assert "300 -> 300 rows, 6 -> 5 columns" in printed

    trace = next(
        t for t in map(json.loads, (out / "traces.jsonl").read_text().splitlines()) if t["agent_name"] == "data_repair"
    )
    assert all(s in trace["outputs"]["summary"] for s in said), trace["outputs"]["summary"]
    assert "exact duplicate rows [None]: dropped the repeats, kept the first (data profiler)" in trace["reasoning"]
    assert "empty column [notes]: dropped from the analysis" in trace["reasoning"]
    assert "[notes]: 300 of 300 values missing" in trace["reasoning"]
    assert trace["outputs"]["rows"] == [300, 300] and trace["outputs"]["columns"] == [6, 5]

    repairs = {(r["kind"], r.get("issue") or r.get("expectation"), r["column"]): r for r in state["data_repairs"]}
    dups = repairs["repair", "exact duplicate rows", None]
    assert (dups["n_before"], dups["n_after"]) == (600, 300)
    unique_count = repairs["expectation", "expect_column_unique_value_count_to_be_between", "notes"]
    assert unique_count["detail"] == "empty column: every value is missing" and unique_count["repaired"]
    empty = repairs["repair", "empty column", "notes"]
    assert empty["action"] == "dropped from the analysis" and (empty["n_before"], empty["n_after"]) == (6, 5)
    assert not [r for r in state["data_repairs"] if r["kind"] == "unrepaired"]
    repaired = pd.read_parquet(state["dataframe_path"])
    assert len(repaired) == 300 and "notes" not in repaired.columns
    assert not [e for e in state["treatment_effects"] if "notes" in e["details"].get("adjustment_set", [])]


@pytest.mark.slow
def test_an_infinite_outcome_is_read_as_missing_and_its_rows_dropped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    frame = study(300)
    frame.loc[frame.index[[10, 50, 90, 130]], "outcome"] = -np.inf
    path = tmp_path / "inf.csv"
    frame.to_csv(path, index=False)  # written as "-inf"
    out = tmp_path / "job"
    code = main(["run", str(_repair_recipe(tmp_path)), "--data", str(path), *T, *Y, "-o", str(out)])
    printed = capsys.readouterr().out
    state = json.loads((out / "state.json").read_text())
    assert code == 0 and state["status"] == "completed", state.get("error_message")
    assert "4 infinite values in outcome read as missing" in printed, printed
    assert "outcome: infinite values (4 infinite values set to missing)" in printed
    assert "4 rows without an outcome value removed" in printed
    repaired = pd.read_parquet(state["dataframe_path"])
    assert Path(state["dataframe_path"]).parent == out / "data"
    assert len(repaired) == 296 and np.isfinite(repaired.select_dtypes("number").to_numpy()).all()
    assert np.isfinite(headline_row(state)["estimate"])


@pytest.mark.slow
def test_a_date_column_with_the_notebook_executed(tmp_path: Path) -> None:
    """The executed notebook runs every cell on data with an ISO date column; the dates are no covariate."""
    frame = study(300)
    frame["visit_on"] = pd.date_range("2022-01-01", periods=len(frame), freq="D").strftime("%Y-%m-%d")
    path = tmp_path / "visits.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "job"
    executed = ("--set", "notebook_generator.timeout=120", "--set", "notebook_generator.html=false")
    code = main(["run", QUICK, "--data", str(path), *T, *Y, "-o", str(out), *executed])
    state = json.loads((out / "state.json").read_text())
    assert code == 0 and state["status"] == "completed", state.get("error_message")
    assert state["data_profile"]["feature_types"]["visit_on"] == "datetime"
    details = [e["details"] for e in state["treatment_effects"] if "adjustment_set" in e["details"]]
    assert details and all("visit_on" not in d["adjustment_set"] for d in details)
    assert any({"x1", "x2", "x3"} <= set(d["adjustment_set"]) for d in details)
    trace = next(
        t
        for t in map(json.loads, (out / "traces.jsonl").read_text().splitlines())
        if t["agent_name"] == "notebook_generator"
    )
    assert trace["outputs"]["execution_errors"] == [] and "execution_s" in trace["outputs"]
    nb = json.loads((out / "report.ipynb").read_text())
    code_cells = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code_cells and all(c["execution_count"] for c in code_cells)
    assert not [o for c in code_cells for o in c["outputs"] if o["output_type"] == "error"]


@pytest.mark.slow
@pytest.mark.parametrize("case", ["covariate-99pct-missing", "twenty-rows"])
def test_hard_but_legitimate_data_end_with_an_answer_or_a_recorded_skip(case: str, tmp_path: Path) -> None:
    frame = study(20 if case == "twenty-rows" else 600, seed=4)
    if case != "twenty-rows":
        frame["x4"] = np.nan
        frame.loc[frame.index[:6], "x4"] = np.arange(6.0)
    path = tmp_path / "d.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "job"
    code = main(["run", QUICK, "--data", str(path), *T, *Y, "-o", str(out), *FAST])
    state = json.loads((out / "state.json").read_text())
    assert code == 0 and state["status"] == "completed", state.get("error_message")
    assert state["treatment_effects"]
    if case != "twenty-rows":  # x4 is left out of the adjustment, and the answer says so
        details = [e["details"] for e in state["treatment_effects"]]
        assert all("x4" not in d.get("adjustment_set", []) for d in details)
        assert "Not adjusted for x4" in json.dumps(state["treatment_effects"])


# ---- faults ------------------------------------------------------------------------------------
