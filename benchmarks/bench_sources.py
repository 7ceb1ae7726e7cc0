"""The quick recipe on a PostgreSQL table next to the same rows in a local Parquet file.

A real PostgreSQL server (pgserver, a dev dependency) holds ROWS x 20 columns (the linear
confounding study, true effect 2.0, padded with noise columns); the same rows are written to a
Parquet file. Each is analysed by ``whyflow run quick_estimate`` in its own process, and each is
read alone (``read_sql_source`` versus ``pandas.read_parquet``) in its own process. Printed: wall
time and peak memory (the process tree's RSS) of each, and the ratios database / file. The
target is at most 1.2x in both, for the whole run.

    python benchmarks/bench_sources.py                # 1,000,000 rows (several minutes)
    python benchmarks/bench_sources.py --rows 200000  # a smaller stand-in
    python benchmarks/bench_sources.py --read-only    # the reads alone (a minute)
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_cost import measure  # noqa: E402
from benchmarks.synthetic import linear_confounding  # noqa: E402

COLUMNS = 20
FAST = ["--set", "notebook_generator.execute=false", "--set", "notebook_generator.html=false"]


def make_frame(rows: int, seed: int) -> Any:
    frame, _ = linear_confounding(n=rows, effect=2.0, seed=seed)
    rng = np.random.default_rng(seed + 1)
    for k in range(COLUMNS - frame.shape[1]):
        frame[f"w{k:02d}"] = rng.normal(size=rows)
    return frame


def load_postgres(frame: Any, uri: str, workdir: Path) -> None:
    """The rows into table ``study`` through COPY (``to_sql`` row inserts would take minutes at 1M rows)."""
    import psycopg

    csv = workdir / "load.csv"
    frame.to_csv(csv, index=False, header=False)
    types = {"i": "bigint", "u": "bigint", "b": "boolean"}
    cols = ", ".join(f'"{c}" {types.get(frame[c].dtype.kind, "double precision")}' for c in frame.columns)
    with psycopg.connect(uri) as con, con.cursor() as cur:
        cur.execute(f"CREATE TABLE study ({cols})")
        with csv.open("rb") as fh, cur.copy("COPY study FROM STDIN WITH (FORMAT csv)") as copy:
            while block := fh.read(1 << 20):
                copy.write(block)
    csv.unlink()


def read_cmd(source: str) -> list[str]:
    """A process that reads the source alone, as the run does, and prints its row count."""
    if source.endswith(".parquet"):
        code = f"import pandas as pd; print(len(pd.read_parquet({source!r})))"
    else:
        code = (
            "from whyflow.runtime.sources import SqlSource, read_sql_source; "
            f"print(len(read_sql_source(SqlSource({source!r}, table='study'))[0]))"
        )
    return [sys.executable, "-c", code]


def run_cmd(source: str, job: Path) -> list[str]:
    cmd = [str(Path(sys.executable).parent / "whyflow"), "run", "quick_estimate", "--data", source]
    cmd += ["-t", "treated", "-y", "outcome", "--output", str(job), "--llm", "off", *FAST]
    return cmd + ([] if source.endswith(".parquet") else ["--table", "study"])


def headline(job: Path) -> str:
    try:
        state = json.loads((job / "state.json").read_text())
    except OSError:
        return "no state"
    head = next((e for e in state["treatment_effects"] if e["details"].get("headline")), None)
    if head is None:
        return "no estimate"
    return f"{head['estimate']:.3f} [{head['ci_lower']:.3f}, {head['ci_upper']:.3f}] ({head['method']})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=1800, help="seconds before one run is stopped")
    parser.add_argument("--read-only", action="store_true", help="measure the reads alone, not the recipe runs")
    args = parser.parse_args()

    import os

    import pgserver

    with tempfile.TemporaryDirectory(prefix="bench-sources-") as tmp:
        work = Path(tmp)
        env = {**os.environ, "WHYFLOW_RUNS_DIR": str(work / "runs"), "MPLCONFIGDIR": str(work / "mpl")}
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
        frame = make_frame(args.rows, args.seed)
        parquet = work / "study.parquet"
        frame.to_parquet(parquet, index=False)
        server = pgserver.get_server(work / "pgdata", cleanup_mode="stop")
        try:
            server.psql("CREATE DATABASE bench;")
            uri = server.get_uri("bench")
            load_postgres(frame, uri, work)
            del frame
            print(f"{args.rows:,} rows x {COLUMNS} columns (true effect 2.0)")
            print(f"{'':28} {'wall s':>8} {'peak MB':>9}  result")
            measured: dict[str, dict[str, Any]] = {}
            for what, source in (("parquet", str(parquet)), ("postgres", uri)):
                for kind in ("read",) if args.read_only else ("read", "run"):
                    job = work / f"job-{what}"
                    cmd = read_cmd(source) if kind == "read" else run_cmd(source, job)
                    got = measure(cmd, env, args.timeout, work / f"{kind}-{what}.log")
                    measured[f"{kind}-{what}"] = got
                    note = headline(job) if kind == "run" else ""
                    if got["rc"] != 0:
                        note = f"exit {got['rc']}: " + (work / f"{kind}-{what}.log").read_text()[-300:]
                    label = f"{kind} alone, {what}" if kind == "read" else f"quick_estimate, {what}"
                    print(f"{label:28} {got['wall']:8.1f} {got['peak_mb']:9.0f}  {note}")
            for kind in ("read",) if args.read_only else ("read", "run"):
                db, file = measured[f"{kind}-postgres"], measured[f"{kind}-parquet"]
                print(
                    f"{kind}: postgres / parquet = {db['wall'] / file['wall']:.2f}x time, "
                    f"{db['peak_mb'] / file['peak_mb']:.2f}x peak memory (target <= 1.2x for the run)"
                )
        finally:
            server.cleanup()


if __name__ == "__main__":
    main()
