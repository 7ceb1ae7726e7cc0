"""Data read from a database by URL: SQLite, DuckDB and a real PostgreSQL server.

Each run keeps the rows it read in its job folder with their fingerprint, so a resume after the
table changed analyses what the run read; the password never reaches a file of the job folder or
a message; a source that cannot be read is one line, exit 2, and no job folder.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

from tests.bad_inputs.common import FAST, QUICK, T, Y, headline_row, study
from tests.conftest import EXAMPLE
from tests.sources.conftest import SECRET, Postgres
from whyflow.cli.main import main
from whyflow.runtime.sources import SourceError, SqlSource, content_sha256, read_sql_source, redact

pytestmark = pytest.mark.usefixtures("prefect_harness")


def _sqlite(frame: pd.DataFrame, path: Path, table: str = "visits") -> Path:
    with sqlite3.connect(path) as con:
        frame.to_sql(table, con, index=False)
    return path


def _files_holding(folder: Path, secret: str) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


def test_a_table_and_a_query_read_the_same_rows_from_sqlite_and_duckdb(tmp_path: Path) -> None:
    frame = study(200)
    lite = _sqlite(frame, tmp_path / "study.db")
    duck = tmp_path / "study.duckdb"
    with duckdb.connect(str(duck)) as con:
        con.execute("CREATE TABLE visits AS SELECT * FROM frame")
    for url in (f"sqlite:///{lite}", f"duckdb:///{duck}"):
        table, identity = read_sql_source(SqlSource(url, table="visits"))
        pd.testing.assert_frame_equal(table, frame, check_dtype=False)
        assert identity["table"] == "visits" and identity["database"].split()[0] in ("sqlite", "duckdb")
        picked, identity = read_sql_source(SqlSource(url, query="SELECT * FROM visits WHERE treated = 1"))
        assert len(picked) == int(frame["treated"].sum()) and identity["query"].startswith("SELECT")
    assert content_sha256(frame) == content_sha256(frame.copy())
    changed = frame.copy()
    changed.loc[5, "outcome"] += 1e-9
    assert content_sha256(changed) != content_sha256(frame)


def test_a_query_that_writes_changes_nothing(tmp_path: Path) -> None:
    lite = _sqlite(study(50), tmp_path / "study.db")
    before = lite.read_bytes()
    with pytest.raises(SourceError, match="readonly database"):
        read_sql_source(SqlSource(f"sqlite:///{lite}", query="DELETE FROM visits"))
    assert lite.read_bytes() == before


def test_the_password_is_hidden_wherever_the_url_is_shown() -> None:
    url = f"postgresql://analyst:{SECRET}@db.example.org:5432/shop"
    assert redact(url) == "postgresql://analyst:***@db.example.org:5432/shop"
    source = SqlSource(url, table="sales")
    assert SECRET not in source.describe()
    assert source.scrub(f"failed for {url} with {SECRET}") == f"failed for {redact(url)} with ***"
    # one history for one table, whether the password came in the URL, from PGPASSWORD or from a Prefect block
    assert source.name == SqlSource("postgresql://analyst@db.example.org:5432/shop", table="sales").name
    assert source.name == "postgresql://analyst@db.example.org:5432/shop --table sales"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (lambda db, pg: (f"sqlite:///{db}", "--table", "visit"), "table 'visit' is not in sqlite:///"),
        (lambda db, pg: (f"sqlite:///{db}", "--query", "SELEC 1"), 'near "SELEC": syntax error'),
        (
            lambda db, pg: (f"sqlite:///{db}", "--query", "SELECT * FROM visits WHERE x1 > 1e9"),
            "returned no rows",
        ),
        (lambda db, pg: (f"sqlite:///{db}.missing", "--table", "visits"), "database file not found"),
        (lambda db, pg: (f"sqlite:///{db}",), "name what to read with --table NAME or --query"),
        (lambda db, pg: (pg.url("wrong-Passw0rd"), "--table", "visits"), "password authentication failed"),
        (lambda db, pg: (pg.url(), "--table", "sales"), "table 'sales' is not in postgresql://analyst:***@"),
        (lambda db, pg: (pg.url(), "--query", "SELECT nope FROM visits"), 'column "nope" does not exist'),
        (
            lambda db, pg: ("postgresql://analyst:pw-unreachable@127.0.0.1:9/shop", "--table", "visits"),
            "Connection refused",
        ),
    ],
    ids=[
        "missing-table",
        "query-error",
        "empty-result",
        "missing-file",
        "no-table",
        "refused-login",
        "missing-pg-table",
        "pg-query-error",
        "unreachable",
    ],
)
def test_a_source_that_cannot_be_read_is_one_line_and_no_job(
    source, message: str, postgres: Postgres, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:  # type: ignore[no-untyped-def]
    db = _sqlite(study(60), tmp_path / "study.db")
    postgres.load(study(60), "visits")
    url, *what = source(db, postgres)
    code = main(["run", QUICK, "--data", url, *what, *T, *Y, "-o", str(tmp_path / "job")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert SECRET not in err and "wrong-Passw0rd" not in err and "pw-unreachable" not in err, err
    assert not (tmp_path / "job").exists()  # nothing half-written


@pytest.mark.slow
def test_a_postgres_table_is_snapshot_so_a_resume_reads_what_the_run_read(
    postgres: Postgres, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job keeps the rows it read; the table then changes (a true effect of 7, not 2) before the run."""
    from whyflow.flows.jobstore.jobs import RunRequest, prepare_job
    from whyflow.flows.recipes.plan import load_plan

    frame = study(600)
    postgres.load(frame, "visits")
    monkeypatch.setenv("PGPASSWORD", SECRET)  # libpq's own variable: the URL names no password
    out = tmp_path / "job"
    fast = {"notebook_generator.execute": "false", "notebook_generator.html": "false"}
    plan = load_plan(QUICK, fast)
    request = RunRequest(
        recipe=QUICK,
        data=postgres.url(None),
        table="visits",
        treatment="treated",
        outcome="outcome",
        output=str(out),
        overrides=fast,
    )
    prepare_job(request, plan)
    changed = frame.assign(outcome=frame["outcome"] + 5.0 * frame["treated"])
    postgres.load(changed, "visits")

    assert main(["resume", str(out)]) == 0
    state = json.loads((out / "state.json").read_text())
    assert state["status"] == "completed", state.get("error_message")
    head = headline_row(state)
    assert head["ci_lower"] <= 2.0 <= head["ci_upper"] and head["ci_upper"] < 7.0, head  # the snapshot's rows
    run = json.loads((out / "run.json").read_text())
    prints = run["fingerprint"]
    assert prints["rows"] == 600 and prints["table"] == "visits" and prints["database"].startswith("postgresql 16")
    assert prints["content_sha256"] == content_sha256(pd.read_parquet(out / "data" / "snapshot.parquet"))
    assert prints["content_sha256"] != content_sha256(read_sql_source(SqlSource(postgres.url(), table="visits"))[0])
    assert run["data"] == f"{redact(postgres.url(None))} --table visits" and state["dataset_info"]["name"] == "visits"
    notebook = (out / "report.ipynb").read_text()
    assert f"SHA-256 of the rows read (their content, whatever file holds them) | `{prints['sha256']}`" in notebook
    assert "--table visits" in notebook

    with_password = tmp_path / "job2"  # the shipped example, and the password in the URL: shown nowhere either
    postgres.load(pd.read_csv(EXAMPLE), "trainees")
    question = ["-t", "training", "-y", "earnings"]
    code = main(
        ["run", QUICK, "--data", postgres.url(), "--table", "trainees", *question, "-o", str(with_password), *FAST]
    )
    printed = capsys.readouterr()
    state = json.loads((with_password / "state.json").read_text())
    assert code == 0 and state["status"] == "completed", state.get("error_message")
    assert np.isfinite(headline_row(state)["estimate"]) and state["dataset_info"]["n_samples"] == 2000
    assert "postgresql://analyst:***@/shop" in printed.out
    assert SECRET not in printed.out + printed.err
    assert _files_holding(out, SECRET) == [] and _files_holding(with_password, SECRET) == []


@pytest.mark.slow
def test_a_scheduled_deployment_on_a_table_reuses_an_unchanged_table_and_flags_a_changed_one(
    postgres: Postgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deployment's flow as a schedule runs it: the same rows are not recomputed; new rows are, with drift."""
    from whyflow.deployments import whyflow_deployment

    frame = study(600, seed=4)
    postgres.load(frame, "sales")
    monkeypatch.setenv("PGPASSWORD", SECRET)  # a deployment's parameters are stored by Prefect: no password there
    monkeypatch.setenv("WHYFLOW_RUNS_DIR", str(tmp_path / "runs"))
    params = {
        "recipe": "quick_estimate",
        "data": postgres.url(None),
        "table": "sales",
        "treatment": "treated",
        "outcome": "outcome",
        "overrides": {"notebook_generator.execute": "false", "notebook_generator.html": "false"},
    }
    first = whyflow_deployment(**params)
    assert first["status"] == "completed" and first["reused"] is False
    again = whyflow_deployment(**params)
    assert again["reused"] is True and again["job_id"] == first["job_id"]

    postgres.load(frame.assign(outcome=frame["outcome"] + 5.0 * frame["treated"]), "sales")
    changed = whyflow_deployment(**params)
    assert changed["reused"] is False and changed["job_id"] != first["job_id"]
    run = json.loads((Path(changed["job_dir"]) / "run.json").read_text())
    assert run["drift"]["previous_job"] == first["job_id"] and run["drift"]["flags"], run["drift"]
    head = headline_row(json.loads((Path(changed["job_dir"]) / "state.json").read_text()))
    assert head["ci_lower"] <= 7.0 <= head["ci_upper"], head
    assert all(_files_holding(p, SECRET) == [] for p in (tmp_path / "runs").iterdir())


def test_whyflow_ask_answers_from_a_postgres_query_and_keeps_its_rows(
    postgres: Postgres, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The shipped example in a table, a query of one region's rows, and a question typed as people type it."""
    frame = pd.read_csv(EXAMPLE)
    postgres.load(frame, "trainees")
    out = tmp_path / "job"
    query = "SELECT * FROM trainees WHERE region = 'north'"
    args = ["--runs-dir", str(tmp_path / "runs"), "ask", "--engine", "local", "--data", postgres.url()]
    code = main([*args, "--query", query, "What is the average age of people who did not train?", "--output", str(out)])
    printed = capsys.readouterr()
    north = frame[frame["region"] == "north"]
    untrained = north.loc[north["training"] == 0, "age"]
    assert code == 0, printed.err
    assert f"The average age is {untrained.mean():.2f} over the {len(untrained)} rows with training = 0" in printed.out
    state = json.loads((out / "state.json").read_text())
    data = state["datasets"]["data"]
    assert data["rows"] == len(north) and data["source"].endswith(f"--query {query}")
    assert Path(data["local_path"]).parent == (out / "data").resolve()
    assert SECRET not in printed.out + printed.err and _files_holding(out, SECRET) == []


def test_whyflow_ask_on_a_missing_table_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = _sqlite(study(30), tmp_path / "study.db")
    args = ["--runs-dir", str(tmp_path / "runs"), "ask", "--engine", "local", "--data", f"sqlite:///{db}"]
    code = main([*args, "--table", "visitz", "mean outcome?", "--output", str(tmp_path / "job")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "(did you mean 'visits'?)" in err, err
    assert not (tmp_path / "job").exists()


def test_a_deployment_password_comes_from_a_secret_block_and_a_missing_block_is_one_line(postgres: Postgres) -> None:
    from prefect.blocks.system import Secret

    from whyflow.deployments import _credentials

    Secret(value=SECRET).save("shop-login", overwrite=True)
    postgres.load(study(40, seed=3), "ledger")
    with _credentials(postgres.url(None), "shop-login") as url:
        table, identity = read_sql_source(SqlSource(url, table="ledger"))
    assert len(table) == 40 and SECRET not in json.dumps(identity) and SECRET not in SqlSource(url, "ledger").name
    with (
        pytest.raises(SourceError, match="credentials_block 'no-such-block': Unable to find block") as missing,
        _credentials(postgres.url(None), "no-such-block"),
    ):
        pass
    assert len(str(missing.value).splitlines()) == 1
    with (
        pytest.raises(SourceError, match="is for a database or object-store URL"),
        _credentials("study.csv", "shop-login"),
    ):
        pass
    Secret(value={"key": "k", "secret": "s"}).save("store-keys", overwrite=True)
    with (
        pytest.raises(SourceError, match="must hold the database login's password, as text"),
        _credentials(postgres.url(None), "store-keys"),
    ):
        pass


def test_postgres_rows_read_through_adbc_equal_pandas_read_sql(postgres: Postgres) -> None:
    """The fast path (ADBC into Arrow) reads exactly what pandas' read_sql reads, for a table and a query."""
    pytest.importorskip("adbc_driver_postgresql")
    import sqlalchemy as sa

    frame = study(500, seed=12).assign(label=lambda f: np.where(f["treated"] == 1, "a", None))
    postgres.load(frame, "mixed")
    engine = sa.create_engine(postgres.superuser_uri.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        for source in (
            SqlSource(postgres.url(), table="mixed"),
            SqlSource(postgres.url(), query="SELECT * FROM mixed"),
        ):
            fast, _ = read_sql_source(source)
            with engine.connect() as conn:
                slow = pd.read_sql("SELECT * FROM mixed", conn)
            pd.testing.assert_frame_equal(fast, slow, check_dtype=False)
            assert content_sha256(fast) == content_sha256(slow)  # the same digest: a run history does not split
    finally:
        engine.dispose()
