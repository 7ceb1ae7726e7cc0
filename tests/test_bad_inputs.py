"""The battery of bad inputs and faults (issue 12): what a new user feeds whyflow must not make it fall over.

Every case is a real `whyflow` run on a generated file. Bad input ends before any agent runs
with exit 2 and one sentence naming the file/column (the file byte-identical afterwards);
inputs that only look odd (semicolons, Latin-1, `?`, dates, infinities) are read as the user
meant and analysed; faults (Ctrl-C to the process group, a damaged state, a full disk, a
notebook past its time limit) end in a clear state that can be resumed.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmarks.synthetic import linear_confounding
from flows.cli import main
from tests.conftest import start_whyflow

ROOT = Path(__file__).resolve().parents[1]
QUICK = str(ROOT / "pipelines" / "quick_estimate.yaml")
FULL = str(ROOT / "pipelines" / "causal_analysis.yaml")
TOY = str(ROOT / "tests" / "fixtures" / "recipes" / "valid_toy.yaml")
FAST = ("--set", "notebook_generator.execute=false", "--set", "notebook_generator.html=false")
pytestmark = pytest.mark.usefixtures("prefect_harness")


def study(n: int = 600, seed: int = 11) -> pd.DataFrame:
    """Linear confounding with a true effect of 2.0 (treated -> outcome; x1..x3 confound)."""
    frame, _ = linear_confounding(n, effect=2.0, seed=seed)
    return frame


@pytest.fixture(scope="module")
def good_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("good") / "study.csv"
    study().to_csv(path, index=False)
    return path


@contextlib.contextmanager
def tmpfs(path: Path, options: str) -> Iterator[Path]:
    """A tmpfs mounted at ``path`` (needs root; the test is skipped where mounting is not allowed)."""
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.decode().strip() or 'not root'})")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


# ---- bad input: exit 2, one sentence, before any agent runs ------------------------------------
def _write(text: str | bytes) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        path = folder / "data.csv"
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        return path

    return make


def _frame(frame: pd.DataFrame, name: str = "data.csv") -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        path = folder / name
        frame.to_parquet(path) if name.endswith(".parquet") else frame.to_csv(path, index=False)
        return path

    return make


def _with(column: str, values: list[object]) -> Callable[[Path], Path]:
    frame = study(60)
    frame[column] = (values * len(frame))[: len(frame)]
    return _frame(frame)


def _corrupt_parquet(folder: Path) -> Path:
    path = folder / "data.parquet"
    path.write_bytes(b"PAR1" + os.urandom(200))
    return path


def _folder(folder: Path) -> Path:
    (folder / "a_folder.csv").mkdir()
    return folder / "a_folder.csv"


def _zip_of_two(folder: Path) -> Path:
    import zipfile

    path = folder / "data.csv.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("a.csv", "treated,outcome\n1,2\n")
        archive.writestr("b.csv", "treated,outcome\n0,3\n")
    return path


def _workbook(folder: Path) -> Path:
    """An .xlsx is a zip of XML parts, ``[Content_Types].xml`` first."""
    import zipfile

    path = folder / "data.xlsx"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("xl/workbook.xml", "<workbook/>")
    return path


def _named(name: str, data: bytes) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        path = folder / name
        path.write_bytes(data)
        return path

    return make


T, Y = ("-t", "treated"), ("-y", "outcome")
BAD_INPUTS = [
    ("empty", _write(""), (*T, *Y), "data file is empty"),
    ("header-only", _write("treated,outcome\n"), (*T, *Y), "has a header but no rows"),
    ("ragged", _write("treated,outcome\n1,2\n0,3,4,5\n1,2\n"), (*T, *Y), "malformed CSV"),
    ("ragged-first-row", _write("treated,outcome\n1,2,3\n0,3\n1,2\n"), (*T, *Y), "malformed CSV"),
    ("unclosed-quote", _write('treated,outcome\n1,"2\n0,3\n'), (*T, *Y), "malformed CSV"),
    ("binary", _write(b"\x00\x01\x02PK\x03\x04" * 100), (*T, *Y), "is binary, not a CSV or Parquet file"),
    ("folder", _folder, (*T, *Y), "data path is a folder, not a file"),
    ("missing-path", lambda f: f / "nope.csv", (*T, *Y), "data file not found"),
    ("corrupt-parquet", _corrupt_parquet, (*T, *Y), "cannot read"),
    ("zip-of-two-files", _zip_of_two, (*T, *Y), "holds 2 files (a.csv, b.csv); give a zip of one CSV file"),
    ("excel-workbook", _workbook, (*T, *Y), "is an Office document (an Excel workbook?), not a CSV: save the sheet"),
    ("damaged-gzip", _named("data.csv.gz", b"\x1f\x8b\x08\x00" + b"\x00garbage" * 20), (*T, *Y), "cannot read"),
    ("duplicate-names", _write("x2,treated,x2,outcome\n1,0,2,3\n2,1,3,4\n"), (*T, *Y), "names column 'x2' twice"),
    ("constant-treatment", _with("treated", [1]), (*T, *Y), "treatment column 'treated' is constant (1 in every row)"),
    ("all-missing-outcome", _with("outcome", [None]), (*T, *Y), "outcome column 'outcome' has no values"),
    (
        "three-level-text-treatment",
        _with("treated", ["a", "b", "c"]),
        (*T, *Y),
        "treatment column 'treated' has 3 text levels ('a', 'b', 'c')",
    ),
    (
        "text-outcome",
        _with("outcome", ["low", "medium", "high"]),
        (*T, *Y),
        "outcome column 'outcome' holds text ('low', 'medium', 'high'), not numbers",
    ),
    ("case-typo", _frame(study(60)), ("-t", "Treated", *Y), "(did you mean 'treated'?)"),
    ("id-as-outcome", _with("patient_id", list(range(60))), (*T, "-y", "patient_id"), "looks like an identifier"),
    ("same-column", _frame(study(60)), ("-t", "outcome", *Y), "treatment and outcome are the same column"),
]


@pytest.mark.parametrize(("make", "args", "message"), [c[1:] for c in BAD_INPUTS], ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_exits_2_with_one_sentence(
    make: Callable[[Path], Path], args: tuple[str, ...], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = make(tmp_path)
    before = path.read_bytes() if path.is_file() else None
    code = main(["run", QUICK, "--data", str(path), *args, "-o", str(tmp_path / "job")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert message in err and "Traceback" not in err and "np.int64" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "job" / "state.json").exists()  # nothing ran
    if before is not None:
        assert path.read_bytes() == before


def test_zstandard_without_its_package_is_one_sentence(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    if importlib.util.find_spec("zstandard") is not None:
        pytest.skip("zstandard is installed: pandas reads .zst here")
    path = tmp_path / "data.csv.zst"
    path.write_bytes(b"\x28\xb5\x2f\xfd" + bytes(40))  # a Zstandard frame's magic number
    code = main(["run", QUICK, "--data", str(path), *T, *Y, "-o", str(tmp_path / "job")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "is Zstandard-compressed; reading it needs the zstandard package" in err


def test_invalid_metadata_is_one_located_sentence(good_csv: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    meta = tmp_path / "meta.yaml"
    meta.write_text("columns:\n  x1: [unclosed\n  x2: pre\n")
    code = main(["run", QUICK, "--data", str(good_csv), *T, *Y, "--metadata", str(meta), "-o", str(tmp_path / "j")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert f"{meta}:3:" in err and "metadata is not valid YAML" in err and "<unicode string>" not in err


@pytest.mark.parametrize("setting", ["max_iterations=abc", "task_runner=foo"])
def test_set_on_a_recipe_without_settings_is_a_recipe_error(
    setting: str, good_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text("name: r\nsteps:\n  - agent: data_profiler\n")
    code = main(["run", str(recipe), "--data", str(good_csv), *T, *Y, "--set", setting, "-o", str(tmp_path / "j")])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err and "key_pos" not in err
    assert setting.split("=")[0] in err


def test_output_under_a_regular_file(good_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    code = main(["run", QUICK, "--data", str(good_csv), *T, *Y, "-o", str(blocker / "job")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert f"{blocker} is a file, not a folder" in err


def test_read_only_output_folder(good_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with tmpfs(tmp_path / "ro", "ro,size=1m") as folder:
        code = main(["run", QUICK, "--data", str(good_csv), *T, *Y, "-o", str(folder / "job")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert f"cannot write the job folder {folder / 'job'}: read-only file system" in err


def test_multi_valued_and_continuous_treatments_pass_the_checks(tmp_path: Path) -> None:
    """Not rejected up front: a numeric dose gets a slope estimate (issue 9)."""
    from flows.jobs import RunRequest, prepare_job
    from flows.plan import load_plan

    frame = study(200)
    frame["dose"] = np.random.default_rng(0).integers(0, 4, len(frame))
    frame["hours"] = np.random.default_rng(1).normal(10, 2, len(frame))
    path = tmp_path / "d.csv"
    frame.to_csv(path, index=False)
    plan = load_plan(QUICK)
    for i, t in enumerate(("dose", "hours")):
        request = RunRequest(recipe=QUICK, data=str(path), treatment=t, outcome="outcome", output=str(tmp_path / f"j{i}"))
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
    head = _headline(state)
    assert head["estimand"] == "slope" and head["treatment_variable"] == "hours"
    assert "per one-unit increase in hours" in head["details"]["extras"]["estimand_description"]
    assert head["ci_lower"] <= 0.5 <= head["ci_upper"], head


# ---- odd but valid input: read as meant, analysed ----------------------------------------------
def _quick(data: Path, out: Path, *extra: str) -> dict:  # type: ignore[type-arg]
    code = main(["run", QUICK, "--data", str(data), *T, *Y, "-o", str(out), *FAST, *extra])
    state = json.loads((out / "state.json").read_text())
    assert code == 0, state.get("error_message")
    return state


def _headline(state: dict) -> dict:  # type: ignore[type-arg]
    effects = state["treatment_effects"]
    return next(e for e in effects if e["details"].get("headline")) if effects else {}


@pytest.mark.parametrize("compression", ["gzip", "bz2", "zip", "xz"])
def test_a_compressed_csv_is_read_as_pandas_reads_it(compression: str, tmp_path: Path) -> None:
    from agents.base.data import describe_read, read_table

    frame = study(300)
    path = tmp_path / f"study.csv.{ {'gzip': 'gz'}.get(compression, compression)}"
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
    state = _quick(path, tmp_path / "job")
    assert "columns separated by semicolons, decimal points" in capsys.readouterr().out
    assert state["data_profile"]["feature_types"]["outcome"] == "numeric"
    head = _headline(state)
    assert head["ci_lower"] <= 2.0 <= head["ci_upper"], head


def test_the_decimal_mark_of_a_semicolon_file_is_read_from_its_numbers(tmp_path: Path) -> None:
    """``0,5`` is a decimal comma, ``0.5`` a decimal point; ``1.234`` (a thousand, or not) decides nothing."""
    from agents.base.data import describe_read, read_table

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
    state = _quick(path, out)
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
    pinned = ("--set", "effect_estimator.methods=[naive,ols,aipw]", "--set", "effect_estimator.propensity_model=logistic")
    state = _quick(path, tmp_path / "job", *pinned)
    printed = capsys.readouterr().out
    assert "5 infinite values in x1 read as missing" in printed and "visit_on holds dates" in printed
    profile = state["data_profile"]
    assert profile["feature_types"]["visit_on"] == "datetime" and profile["time_column"] == "visit_on"
    assert "visit_on" not in profile["potential_confounders"]
    head = _headline(state)
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

    trace = next(t for t in map(json.loads, (out / "traces.jsonl").read_text().splitlines())
                 if t["agent_name"] == "data_repair")  # fmt: skip
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
    assert np.isfinite(_headline(state)["estimate"])


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
    trace = next(t for t in map(json.loads, (out / "traces.jsonl").read_text().splitlines())
                 if t["agent_name"] == "notebook_generator")  # fmt: skip
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
def _slow_recipe(folder: Path, sleep: float = 30) -> Path:
    recipe = folder / "slow.yaml"
    recipe.write_text(f"name: slow\nsteps:\n  - agent: toy_profiler\n  - agent: toy_estimator\n    with: {{sleep: {sleep}}}\n")
    return recipe


def _wait_for(out: Path, status: str, proc: subprocess.Popen[bytes], seconds: float = 120) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline and proc.poll() is None:
        with contextlib.suppress(OSError, ValueError):
            if json.loads((out / "state.json").read_text())["status"] == status:
                return
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"the run never reached {status}: {proc.communicate()[1].decode()[-2000:]}")


@pytest.mark.slow
def test_ctrl_c_to_the_process_group_cancels_within_seconds(good_csv: Path, tmp_path: Path) -> None:
    """Prefect's temporary server is in the group too (no PREFECT_API_URL): it must survive the Ctrl-C."""
    out = tmp_path / "job"
    argv = ["run", str(_slow_recipe(tmp_path)), "--data", str(good_csv), *T, *Y, "-o", str(out)]
    proc = start_whyflow(argv, ephemeral=True)
    _wait_for(out, "estimating_effects", proc)
    os.killpg(proc.pid, signal.SIGINT)
    sent = time.time()
    try:
        _, err = proc.communicate(timeout=30)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert time.time() - sent < 20, "Ctrl-C took too long"
    assert proc.returncode == 130 and b"Traceback" not in err, err.decode()[-2000:]
    state = json.loads((out / "state.json").read_text())
    assert state["status"] == "cancelled" and state["completed_steps"] == ["toy_profiler"]
    recipe = out / "recipe.yaml"
    recipe.write_text(recipe.read_text().replace("sleep: 30", "sleep: 0"))  # resume quickly
    assert main(["resume", str(out)]) == 0
    assert json.loads((out / "state.json").read_text())["status"] == "completed"


def test_ctrl_c_during_start_up_leaves_no_traceback_and_no_pending_job(good_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "job"
    proc = start_whyflow(["run", str(_slow_recipe(tmp_path)), "--data", str(good_csv), *T, *Y, "-o", str(out)])
    deadline = time.time() + 60
    while not (out / "state.json").exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.02)  # the job exists; Prefect is still being imported
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and b"Traceback" not in err, err.decode()[-2000:]
    state = json.loads((out / "state.json").read_text())
    assert state["status"] == "cancelled"


@pytest.mark.parametrize("damage", ["truncated", "empty-object"])
def test_damaged_state_is_named_listed_and_recovered(
    damage: str, good_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    assert main(["--runs-dir", str(runs), "run", TOY, "--data", str(good_csv), *T, *Y, "--job-id", "job-d"]) == 0
    folder = runs / "job-d"
    state_file = folder / "state.json"
    assert json.loads((folder / "state.json.prev").read_text())["job_id"] == "job-d"  # the previous good state
    text = state_file.read_text()
    state_file.write_text(text[: len(text) // 2] if damage == "truncated" else "{}")
    capsys.readouterr()

    assert main(["--runs-dir", str(runs), "status", "job-d"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert str(state_file) in err and ("truncated" if damage == "truncated" else "not a valid job state") in err
    assert "state.json.prev" in err and "traces.jsonl" in err

    assert main(["--runs-dir", str(runs), "list"]) == 0
    assert "job-d" in (listing := capsys.readouterr().out) and "damaged" in listing

    assert main(["--runs-dir", str(runs), "resume", "job-d"]) == 0
    assert "using the previous good state" in capsys.readouterr().out
    assert json.loads(state_file.read_text())["status"] == "completed"
    assert (folder / "state.json.damaged").exists()


def test_full_disk_ends_failed_with_the_reason_and_no_temporary_files(tmp_path: Path) -> None:
    """The analysis copy of a 300,000-row file does not fit a 2 MB disk."""
    rng = np.random.default_rng(0)
    n = 300_000
    frame = pd.DataFrame({"treated": rng.integers(0, 2, n), "x1": rng.normal(size=n), "outcome": rng.normal(size=n)})
    path = tmp_path / "big.csv"
    frame.to_csv(path, index=False)
    with tmpfs(tmp_path / "small", "size=2m") as disk:
        out = disk / "job"
        proc = start_whyflow(["run", QUICK, "--data", str(path), *T, *Y, "-o", str(out), *FAST])  # the console a user sees
        stdout, stderr = (b.decode() for b in proc.communicate(timeout=180))
        state = json.loads((out / "state.json").read_text())
        leftovers = [p.name for p in out.rglob("*.tmp")]
    assert proc.returncode == 1
    assert state["status"] == "failed" and state["error_agent"] == "data_profiler"
    assert "No space left on device" in state["error_message"] and "analysis.parquet" in state["error_message"]
    assert leftovers == []
    assert "Traceback" not in stdout + stderr, stdout + stderr  # the traceback is in errors.log
    assert f"whyflow: run failed in data_profiler: {state['error_message']}" in stderr



def test_resume_after_the_data_file_is_deleted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No copy yet (nothing ran): one line naming the file, exit 2, the job untouched. Once the
    profiler has written the job's own copy, the resume goes on with it and says so."""
    from flows.dispatch import run_single_agent
    from flows.jobs import RunRequest, prepare_job
    from flows.plan import load_plan

    recipe = tmp_path / "r.yaml"
    recipe.write_text("name: r\nsteps:\n  - agent: data_profiler\n  - agent: toy_estimator\n")
    plan = load_plan(str(recipe))
    for case in ("no-copy", "copy"):
        data = tmp_path / f"{case}.csv"
        study(300).to_csv(data, index=False)
        out = tmp_path / case
        folder = prepare_job(RunRequest(recipe=str(recipe), data=str(data), treatment="treated",
                                        outcome="outcome", output=str(out)), plan)  # fmt: skip
        if case == "copy":  # the profiler ran, then the run stopped
            state = folder.load()
            run_single_agent("data_profiler", state, out)
            state.completed_steps = ["data_profiler"]
            folder.save(state)
        data.unlink()
        capsys.readouterr()
        code = main(["resume", str(out)])
        printed = capsys.readouterr()
        if case == "no-copy":
            assert code == 2 and len(printed.err.strip().splitlines()) == 1 and "Traceback" not in printed.err
            assert f"data file not found: {data}" in printed.err and "holds no copy" in printed.err
            assert json.loads((out / "state.json").read_text())["status"] == "pending"
        else:
            assert code == 0, printed.err
            assert f"data file {data} is gone; the job goes on with its own copy {out / 'data'}" in printed.out
            assert json.loads((out / "state.json").read_text())["status"] == "completed"


def test_resume_of_a_question_after_its_data_file_is_deleted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`whyflow ask` keeps its own copy of each file from the start: the resume says so and answers;
    with that copy gone too, one line and exit 2."""
    from flows.ask import AskRequest, prepare_ask_job
    from flows.plan import load_plan

    plan = load_plan(str(ROOT / "pipelines" / "ask.yaml"))
    for case in ("copy", "no-copy"):
        data = tmp_path / f"{case}.csv"
        study(300).to_csv(data, index=False)
        out = tmp_path / case
        prepare_ask_job(AskRequest("average outcome by treated", [str(data)], output=str(out)), plan)  # not run yet
        data.unlink()
        if case == "no-copy":
            (out / "data" / "data.parquet").unlink()
        capsys.readouterr()
        code = main(["resume", str(out)])
        printed = capsys.readouterr()
        if case == "copy":
            assert code == 0, printed.err
            assert f"data file {data} is gone; the job goes on with its own copy {out / 'data'}" in printed.out
        else:
            assert code == 2 and len(printed.err.strip().splitlines()) == 1, printed.err
            assert f"the job's copy of {data} is missing" in printed.err


def _cancel_once(out: Path, status: str) -> None:
    """`whyflow cancel` as soon as the job reaches ``status``: it stops before the next agent."""
    deadline = time.time() + 120
    while time.time() < deadline:
        with contextlib.suppress(OSError, ValueError):
            if json.loads((out / "state.json").read_text())["status"] == status:
                main(["cancel", str(out)])
                return
        time.sleep(0.02)


def _fill_inodes(folder: Path) -> int:
    """Create empty files in ``folder`` until the disk refuses one (ENOSPC); return how many fit."""
    folder.mkdir()
    n = 0
    while True:
        try:
            (folder / str(n)).touch()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
            return n
        n += 1


@pytest.mark.slow
def test_disk_full_at_the_notebook_ends_failed_and_resume_completes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The disk fills up after the estimate: the notebook cannot be written; FAILED, no .tmp, resumable.

    The run is stopped before the notebook step (`whyflow cancel` while the estimator runs), the
    disk (a tmpfs with few inodes: out of inodes is as full as out of bytes, ENOSPC) is filled
    but for one file, which the notebook step's report_state.json takes: report.ipynb is refused.
    """
    path = tmp_path / "study.csv"
    study(300).to_csv(path, index=False)
    with tmpfs(tmp_path / "disk", "size=64m,nr_inodes=300") as disk:
        out = disk / "job"
        watcher = threading.Thread(target=_cancel_once, args=(out, "estimating_effects"))
        watcher.start()
        code = main(["run", QUICK, "--data", str(path), *T, *Y, "-o", str(out), *FAST])
        watcher.join()
        state = json.loads((out / "state.json").read_text())
        assert code == 130 and state["status"] == "cancelled", state.get("error_message")
        assert state["completed_steps"] == ["data_profiler", "effect_estimator"]
        (out / "CANCEL").unlink()  # what resume does, done first so the filler takes its inode too
        filler = disk / "filler"
        assert _fill_inodes(filler) > 0
        (filler / "0").unlink()

        capsys.readouterr()
        code = main(["resume", str(out)])
        err = capsys.readouterr().err
        state = json.loads((out / "state.json").read_text())
        leftovers = [p.name for p in out.rglob("*.tmp")]
        assert code == 1 and state["status"] == "failed" and state["error_agent"] == "notebook_generator", err
        message = state["error_message"]
        assert "No space left on device" in message and "report.ipynb" in message, message
        assert f"run failed in notebook_generator: {message}" in err and "Traceback" not in err
        assert leftovers == [] and not (out / "report.ipynb").exists()

        shutil.rmtree(filler)  # space freed
        assert main(["resume", str(out)]) == 0
        state = json.loads((out / "state.json").read_text())
        assert state["status"] == "completed" and (out / "report.ipynb").exists()
        assert state["completed_steps"][-1] == "notebook_generator" and not list(out.rglob("*.tmp"))

def test_notebook_time_limit_holds_and_no_kernel_is_left(tmp_path: Path) -> None:
    from agents.base.children import kernel_processes
    from flows.dispatch import run_single_agent
    from tests.helpers import make_state

    state = make_state(study(200), tmp_path, "treated", "outcome")
    started = time.perf_counter()
    result = run_single_agent("notebook_generator", state, tmp_path, {"timeout": 1, "html": False})
    took = time.perf_counter() - started
    errors = result.outputs["execution_errors"]
    assert any(e["ename"] == "TimeLimit" for e in errors), errors
    assert took < 30 and kernel_processes() == []
    assert (tmp_path / "report.ipynb").exists() and not list(tmp_path.glob("*.tmp"))


def test_eda_figures_that_cannot_be_written_are_a_recorded_skip(tmp_path: Path) -> None:
    """A file where the plots folder should be: the figures are skipped with the reason, the EDA still answers."""
    from flows.dispatch import run_single_agent
    from tests.helpers import make_state

    state = make_state(study(300), tmp_path, "treated", "outcome")
    (tmp_path / "plots").write_text("not a folder")
    result = run_single_agent("eda_agent", state, tmp_path)
    assert "skipped the plots (reason in the trace)" in result.summary
    assert "Skipped the EDA plots: FileExistsError" in result.reasoning
    assert state.eda_result is not None and state.eda_result.plot_paths == {} and state.eda_result.covariate_balance


def test_a_url_that_fails_and_a_second_run_on_one_folder(good_csv: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    import socket

    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = main(["run", TOY, "--data", f"http://127.0.0.1:{port}/study.csv", *T, *Y, "-o", str(tmp_path / "u")])
    err = capsys.readouterr().err
    assert code == 2 and "cannot download" in err and len(err.strip().splitlines()) == 1

    out = tmp_path / "job"
    assert main(["run", TOY, "--data", str(good_csv), *T, *Y, "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["run", TOY, "--data", str(good_csv), *T, *Y, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "already holds a job" in err and len(err.strip().splitlines()) == 1
    assert json.loads((out / "state.json").read_text())["status"] == "completed"  # the first run is untouched


def test_torn_traces_and_a_damaged_run_record(good_csv: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from flows.store import JobFolder

    runs = tmp_path / "runs"
    assert main(["--runs-dir", str(runs), "run", TOY, "--data", str(good_csv), *T, *Y, "--job-id", "job-t"]) == 0
    folder = JobFolder(runs / "job-t")
    n = len(folder.read_traces())
    with folder.traces_path.open("a") as fh:
        fh.write('{"agent_name": "cut sho')  # a crash in the middle of a line
    assert len(folder.read_traces()) == n and main(["--runs-dir", str(runs), "status", "job-t"]) == 0
    folder.run_path.write_text("{")
    capsys.readouterr()
    assert main(["--runs-dir", str(runs), "list"]) == 0
    assert "job-t" in (listing := capsys.readouterr().out) and "damaged" in listing


def test_a_cell_that_runs_past_the_time_limit_is_stopped_mid_cell(tmp_path: Path) -> None:
    """The kernel is killed in the middle of a long cell; execution ends at once (no wait on a dead kernel)."""
    import nbformat

    from agents.base.children import kernel_processes, time_limit
    from agents.stats.notebook import execute_notebook

    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("import time\ntime.sleep(120)"), nbformat.v4.new_code_cell("print('after')")]
    )
    started = time.perf_counter()
    with time_limit(6) as expired:
        report = execute_notebook(nb, tmp_path, 300)
    assert expired.is_set() and time.perf_counter() - started < 40
    assert not report.completed and "DeadKernelError" in report.message
    assert kernel_processes() == []
