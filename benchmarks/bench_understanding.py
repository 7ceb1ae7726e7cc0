"""Benchmark the data-understanding agents (profile -> repair -> EDA) on growing tables.

Usage::

    python benchmarks/bench_understanding.py [--rows 10000,100000,1000000] [--seed 0]

For each size it builds a 20-column synthetic table with the usual problems (numbers stored as
text, missing values, duplicate rows, outliers, a constant column, an id) and runs the three
agents in a chain. Each agent runs in a forked child process so its peak resident memory
(``resource.getrusage``) and CPU time are its own (CPU time is the steadier figure on a busy
machine); heavy libraries are imported once in the parent first, so
wall times exclude import time. Prints one table row per (size, agent).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from whyflow.causal.state import AnalysisState, DatasetInfo  # noqa: E402
from whyflow.flows.running.dispatch import run_single_agent  # noqa: E402

AGENTS = ("data_profiler", "data_repair", "eda_agent")


def synthetic_table(n: int, seed: int = 0) -> pd.DataFrame:
    """A 20-column table: id, treatment, outcome, 10 covariates, categoricals and planted problems."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 8))
    age = rng.integers(18, 80, size=n).astype(float)
    income = np.exp(rng.normal(10, 0.6, size=n)).round(0)
    region = rng.choice(["north", "south", "east", "west"], size=n)
    segment = rng.choice(["a", "b", "c"], size=n, p=[0.5, 0.3, 0.2])
    channel = rng.choice(["web", "store", "phone", "partner", "other"], size=n)
    satisfaction = rng.integers(1, 6, size=n)
    logit = 0.6 * x[:, 0] - 0.4 * x[:, 1] + 0.02 * (age - 45)
    treated = rng.binomial(1, 1 / (1 + np.exp(-logit)))
    outcome = 2.0 * treated + x[:, 0] + 0.5 * x[:, 1] - 0.3 * x[:, 2] + 0.01 * age + rng.normal(size=n)
    frame = pd.DataFrame({"customer_id": np.arange(n), "treated": treated})
    for j in range(8):
        frame[f"x{j + 1}"] = x[:, j]
    frame["age"] = age
    frame["income"] = [f"{v:,.0f}" for v in income]  # numbers stored as text
    frame["region"] = region
    frame["segment"] = segment
    frame["channel"] = channel
    frame["satisfaction"] = satisfaction
    frame["country"] = "US"  # constant
    frame["spend"] = rng.gamma(2.0, 50.0, size=n)
    frame.loc[rng.choice(n, max(1, n // 200), replace=False), "spend"] = 1e6  # outliers
    frame["outcome"] = outcome
    frame.loc[rng.choice(n, n // 10, replace=False), "x3"] = np.nan  # 10% missing
    frame.loc[rng.choice(n, n // 50, replace=False), "age"] = np.nan  # 2% missing
    dups = frame.iloc[rng.choice(n, max(1, n // 100), replace=False)]
    return pd.concat([frame, dups], ignore_index=True)  # 1% duplicate rows


def _child(name: str, state_json: str, job: str, queue: Any) -> None:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    baseline, cpu0 = usage.ru_maxrss, usage.ru_utime + usage.ru_stime
    state = AnalysisState.from_json(state_json)
    started = time.perf_counter()
    try:
        run_single_agent(name, state, job)
        error = None
    except Exception as exc:  # noqa: BLE001 - reported in the table
        error = f"{type(exc).__name__}: {exc}"
    wall = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime - cpu0
    queue.put((state.to_json(), wall, cpu, usage.ru_maxrss / 1024, baseline / 1024, error))


def run_size(n: int, seed: int, workdir: Path) -> list[dict[str, Any]]:
    """Run the three agents on a table of ``n`` (+1% duplicate) rows; one record per agent."""
    job = workdir / f"job_{n}"
    (job / "data").mkdir(parents=True, exist_ok=True)
    frame = synthetic_table(n, seed)
    source = job / "input.parquet"
    frame.to_parquet(source, index=False)
    state = AnalysisState(
        job_id=f"bench-{n}",
        dataset_info=DatasetInfo(url=str(source), name="bench", local_path=str(source)),
        treatment_variable="treated",
        outcome_variable="outcome",
    )
    del frame
    ctx = mp.get_context("fork")
    rows: list[dict[str, Any]] = []
    for name in AGENTS:
        queue = ctx.Queue()
        proc = ctx.Process(target=_child, args=(name, state.to_json(), str(job), queue))
        proc.start()
        state_json, wall, cpu, peak, base, error = queue.get()
        proc.join()
        state = AnalysisState.from_json(state_json)
        rows.append(
            {
                "rows": n,
                "agent": name,
                "wall_s": wall,
                "cpu_s": cpu,
                "peak_mb": peak,
                "delta_mb": peak - base,
                "error": error,
            }
        )
        if error:
            break
    return rows


def _preimport() -> None:
    """Import the heavy libraries once, so the children's wall times exclude import time."""
    import great_expectations  # noqa: F401
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401
    import scipy.stats  # noqa: F401
    import statsmodels.api  # noqa: F401


def main(argv: list[str] | None = None) -> int:
    """Parse the sizes, run them and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="10000,100000,1000000", help="comma-separated table sizes")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    sizes = [int(s.replace("_", "")) for s in args.rows.split(",") if s.strip()]
    _preimport()
    print(f"{'rows':>10} {'agent':<14} {'wall s':>8} {'cpu s':>8} {'peak RSS MB':>12} {'delta MB':>9}  note")
    with tempfile.TemporaryDirectory(prefix="whyflow-bench-") as tmp:
        for n in sizes:
            for r in run_size(n, args.seed, Path(tmp)):
                note = r["error"] or ""
                print(
                    f"{r['rows']:>10,} {r['agent']:<14} {r['wall_s']:>8.2f} {r['cpu_s']:>8.2f} {r['peak_mb']:>12.0f} "
                    f"{r['delta_mb']:>9.0f}  {note}",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
