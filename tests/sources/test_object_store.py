"""Data in an object store: a local S3 server (moto's server mode) holds the file; the run reads a copy."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.bad_inputs.common import FAST, QUICK, T, Y, headline_row
from tests.conftest import EXAMPLE
from tests.sources.conftest import KEY
from whyflow.cli.main import main

pytestmark = pytest.mark.usefixtures("prefect_harness")


def test_an_object_is_copied_into_the_job_and_fingerprinted(s3: str, tmp_path: Path) -> None:
    """The shipped example as an object: the quick recipe analyses a byte-for-byte copy of it."""
    import hashlib

    import fsspec

    url = f"s3://{s3}/exports/latest.csv"
    with fsspec.open(url, "wb") as fh:
        fh.write(EXAMPLE.read_bytes())
    out = tmp_path / "job"
    code = main(["run", QUICK, "--data", url, "-t", "training", "-y", "earnings", "-o", str(out), *FAST])
    state = json.loads((out / "state.json").read_text())
    assert code == 0 and state["status"] == "completed", state.get("error_message")
    head = headline_row(state)
    assert head["ci_lower"] < head["estimate"] < head["ci_upper"], head
    run = json.loads((out / "run.json").read_text())
    assert run["data"] == url and run["fingerprint"]["etag"] and run["fingerprint"]["rows"] == 2000
    assert run["data_sha256"] == hashlib.sha256(EXAMPLE.read_bytes()).hexdigest()
    assert Path(run["data_local_path"]) == (out / "data" / "source-latest.csv").resolve()
    assert not [p for p in out.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("s3://exports/nope.csv", "object not found: s3://exports/nope.csv"),
        ("s3://no-bucket/x.csv", "object not found"),
    ],
)
def test_a_missing_object_or_bucket_is_one_line_and_no_job(
    s3: str, where: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", QUICK, "--data", where, *T, *Y, "-o", str(tmp_path / "job")])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert not (tmp_path / "job").exists()


def test_an_object_that_is_no_table_is_one_line_and_leaves_no_job(
    s3: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import fsspec

    url = f"s3://{s3}/broken.parquet"
    with fsspec.open(url, "wb") as fh:
        fh.write(b"PAR1 not really parquet")
    code = main(["run", QUICK, "--data", url, *T, *Y, "-o", str(tmp_path / "job")])
    err = capsys.readouterr().err
    assert code == 2 and "cannot read" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "job").exists()


def test_whyflow_ask_answers_from_an_object_and_keeps_its_copy(
    s3: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The shipped example as an object, and a question typed as people type it."""
    import fsspec

    frame = pd.read_csv(EXAMPLE)
    url = f"s3://{s3}/exports/trainees.csv"
    with fsspec.open(url, "w") as fh:
        frame.to_csv(fh, index=False)
    out = tmp_path / "job"
    args = ["--runs-dir", str(tmp_path / "runs"), "ask", "--engine", "local", "--data", url]
    code = main([*args, "What percentage of married people took the training?", "--output", str(out)])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    married = frame[frame["married"] == 1]
    share = 100 * married["training"].mean()
    assert f"{share:.2f}% of the {len(married)} rows with married = 1 have training = 1" in printed.out, printed.out
    data = json.loads((out / "state.json").read_text())["datasets"]["data"]
    assert data["source"] == url and data["rows"] == len(frame)
    assert Path(data["local_path"]).parent == (out / "data").resolve()
    assert (out / "data" / "source-trainees.csv").is_file()
    run = json.loads((out / "run.json").read_text())
    assert run["data"] == url and run["fingerprint"]["etag"] and run["fingerprint"]["rows"] == len(frame)
    assert KEY not in printed.out + printed.err
    assert not [p for p in out.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]


@pytest.mark.parametrize("where", ["s3://exports/nope.csv", "s3://no-bucket/x.csv"])
def test_whyflow_ask_on_a_missing_object_or_bucket_is_one_line_and_no_job(
    s3: str, where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--runs-dir", str(tmp_path / "runs"), "ask", "--engine", "local", "--data", where]
    code = main([*args, "mean outcome?", "--output", str(tmp_path / "job")])
    err = capsys.readouterr().err
    assert code == 2 and "object not found" in err and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err and not (tmp_path / "job").exists()


def test_a_bucket_the_login_may_not_read_is_one_line_and_no_job(
    s3: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A login the store knows but whose policy grants nothing (the server then checks every request)."""
    import boto3
    import fsspec
    import moto.settings

    boto3.client("s3").put_object(Bucket=s3, Key="exports/latest.csv", Body=EXAMPLE.read_bytes())
    iam = boto3.client("iam")
    iam.create_user(UserName="no-rights")
    login = iam.create_access_key(UserName="no-rights")["AccessKey"]
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", login["AccessKeyId"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", login["SecretAccessKey"])
    monkeypatch.setattr(moto.settings, "INITIAL_NO_AUTH_ACTION_COUNT", 0)
    fsspec.get_filesystem_class("s3").clear_instance_cache()
    url = f"s3://{s3}/exports/latest.csv"
    for command in (
        ["run", QUICK, "--data", url, "-t", "training", "-y", "earnings", "-o", str(tmp_path / "job")],
        ["--runs-dir", str(tmp_path / "runs"), "ask", "--data", url, "mean age?", "--output", str(tmp_path / "job")],
    ):
        code = main(command)
        err = capsys.readouterr().err
        assert code == 2 and f"no permission to read {url}" in err, err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err and login["SecretAccessKey"] not in err
        assert not (tmp_path / "job").exists()
