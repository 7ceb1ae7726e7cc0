"""Bad input ends before any agent runs: exit 2, one sentence naming the file or column, the file untouched."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.bad_inputs.common import (
    QUICK,
    T,
    Y,
    frame_file,
    study,
    tmpfs,
    with_column,
    write_file,
)
from whyflow.cli.main import main

pytestmark = pytest.mark.usefixtures("prefect_harness")


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


BAD_INPUTS = [
    ("empty", write_file(""), (*T, *Y), "data file is empty"),
    ("header-only", write_file("treated,outcome\n"), (*T, *Y), "has a header but no rows"),
    ("ragged", write_file("treated,outcome\n1,2\n0,3,4,5\n1,2\n"), (*T, *Y), "malformed CSV"),
    ("ragged-first-row", write_file("treated,outcome\n1,2,3\n0,3\n1,2\n"), (*T, *Y), "malformed CSV"),
    ("unclosed-quote", write_file('treated,outcome\n1,"2\n0,3\n'), (*T, *Y), "malformed CSV"),
    ("binary", write_file(b"\x00\x01\x02PK\x03\x04" * 100), (*T, *Y), "is binary, not a CSV or Parquet file"),
    ("folder", _folder, (*T, *Y), "data path is a folder, not a file"),
    ("missing-path", lambda f: f / "nope.csv", (*T, *Y), "data file not found"),
    ("corrupt-parquet", _corrupt_parquet, (*T, *Y), "cannot read"),
    ("zip-of-two-files", _zip_of_two, (*T, *Y), "holds 2 files (a.csv, b.csv); give a zip of one CSV file"),
    ("excel-workbook", _workbook, (*T, *Y), "is an Office document (an Excel workbook?), not a CSV: save the sheet"),
    ("damaged-gzip", _named("data.csv.gz", b"\x1f\x8b\x08\x00" + b"\x00garbage" * 20), (*T, *Y), "cannot read"),
    ("duplicate-names", write_file("x2,treated,x2,outcome\n1,0,2,3\n2,1,3,4\n"), (*T, *Y), "names column 'x2' twice"),
    (
        "constant-treatment",
        with_column("treated", [1]),
        (*T, *Y),
        "treatment column 'treated' is constant (1 in every row)",
    ),
    ("all-missing-outcome", with_column("outcome", [None]), (*T, *Y), "outcome column 'outcome' has no values"),
    (
        "three-level-text-treatment",
        with_column("treated", ["a", "b", "c"]),
        (*T, *Y),
        "treatment column 'treated' has 3 text levels ('a', 'b', 'c')",
    ),
    (
        "text-outcome",
        with_column("outcome", ["low", "medium", "high"]),
        (*T, *Y),
        "outcome column 'outcome' holds text ('low', 'medium', 'high'), not numbers",
    ),
    ("case-typo", frame_file(study(60)), ("-t", "Treated", *Y), "(did you mean 'treated'?)"),
    ("id-as-outcome", with_column("patient_id", list(range(60))), (*T, "-y", "patient_id"), "looks like an identifier"),
    ("same-column", frame_file(study(60)), ("-t", "outcome", *Y), "treatment and outcome are the same column"),
    (
        "group-typo",
        frame_file(study(60).assign(region="north", year=2020)),
        (*T, *Y, "--group", "regoin", "--period", "year"),
        "group column 'regoin' is not in",
    ),
    (
        "second-instrument-typo",
        frame_file(study(60).assign(lottery=1, distance=0.5)),
        (*T, *Y, "--instrument", "lottery,distnce"),
        "instrument column 'distnce' is not in",
    ),
]


@pytest.mark.parametrize(("make", "args", "message"), [c[1:] for c in BAD_INPUTS], ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_exits_2_with_one_sentence(
    make: Callable[[Path], Path],
    args: tuple[str, ...],
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
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


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--running-variable", "x1"], "--running-variable and --cutoff go together"),
        (["--unit", "x1"], "--unit and --time go together"),
        (["--group", "x1"], "--group and --period go together"),
        (["--fuzzy"], "--fuzzy is a regression discontinuity's form: give it with --running-variable and --cutoff"),
        (["--unit", "x1", "--time", "x2", "--group", "x3", "--period", "x2"], "not both"),
        (["--instrument", "x1,,x2"], "--instrument expects COLUMN or COLUMN,COLUMN"),
        (["--set", "novalue"], "--set expects KEY=VALUE, got 'novalue'"),
    ],
    ids=["rdd-half", "panel-half", "rcs-half", "fuzzy-alone", "panel-and-rcs", "empty-instrument", "set-without-value"],
)
def test_options_that_do_not_fit_together_exit_2_with_one_line(
    options: list[str], message: str, good_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", QUICK, "--data", str(good_csv), *T, *Y, *options, "-o", str(tmp_path / "job")])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert not (tmp_path / "job").exists()
