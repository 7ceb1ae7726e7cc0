"""effect_estimator's fan-out under Prefect's task runners: sequential, threads and a local Dask cluster.

The estimator splits its costly work into independent parts (:func:`whyflow.runtime.parallel.map_parts`:
the nuisance learners' cross-fitting folds, the DR-learner's folds, the S/T/X/DR learners), which
a flow run maps as Prefect tasks over its task runner (:class:`whyflow.flows.running.compile.PrefectPartMapper`).
This benchmark runs the agent as a task of a flow, on the same data, under

* ``plain``: no flow, no mapper (what tests and the truth benchmark do: parts in order, in-process);
* ``sequential``: ``ThreadPoolTaskRunner(max_workers=1)`` (``task_runner: sequential``);
* ``threads``: ``ThreadPoolTaskRunner(max_workers=W)`` (``task_runner: threads``);
* ``dask``: ``DaskTaskRunner`` on a ``LocalCluster`` of 2 worker processes, 1 thread each, started
  before the clock (``task_runner: dask`` with ``dask_address``),

and prints each wall time, its speed-up over ``sequential`` and the largest absolute difference
of any estimate or interval bound from ``plain`` (0 under threads; Dask runs the parts in other
processes, where BLAS may sum in another order: differences in the last bits at most).

    python benchmarks/bench_dask.py                 # 100k x 20, every mode
    python benchmarks/bench_dask.py --n 20000 --modes plain,threads

Each mode starts from an empty job folder, so each fits the propensity itself (in a recipe run
ps_diagnostics has fitted and stored it). The agent's heavy modules are imported before the clock,
here and on the Dask workers, and the flows report to one temporary Prefect server
(:func:`whyflow.flows.running.temp_server.temporary_server`) that the Dask workers reach through
``PREFECT_API_URL``. Wall times depend on the machine's free cores: on a shared machine they
are noisy, the differences are not.
"""

from __future__ import annotations

import argparse
import importlib
import os
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.synthetic import linear_confounding  # noqa: E402
from tests.helpers import make_state  # noqa: E402
from whyflow.flows.running.compile import PrefectPartMapper  # noqa: E402
from whyflow.flows.running.dispatch import run_single_agent  # noqa: E402
from whyflow.flows.running.temp_server import temporary_server  # noqa: E402
from whyflow.runtime.parallel import use_mapper  # noqa: E402

Row = tuple[str, float, float, float]
PRELOAD = (
    "dowhy",
    "lightgbm",
    "causalml.inference.meta",
    "sklearn.linear_model",
    "statsmodels.api",
    "whyflow.causal.estimation.effect_estimator",
)


def preload() -> None:
    """Import what the estimator's parts use, so no mode pays for the imports on the clock."""
    for name in PRELOAD:
        importlib.import_module(name)


def make_frame(n: int, p: int, seed: int) -> Any:
    """``linear_confounding`` padded with independent columns to ``p`` columns (as bench_cost's rows)."""
    frame, _ = linear_confounding(n=n, effect=2.0, seed=seed)
    rng = np.random.default_rng(seed + 1)
    for k in range(max(0, p - frame.shape[1])):
        frame[f"w{k:02d}"] = rng.normal(size=n)
    return frame


def _cpu() -> float:
    """CPU seconds of this process so far (every thread; not the Dask workers)."""
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime


def _estimate(frame: Any, job: Path, params: dict[str, Any]) -> tuple[list[Row], float, float]:
    state = make_state(frame, job, "treated", "outcome")
    started, cpu = time.perf_counter(), _cpu()
    run_single_agent("effect_estimator", state, job, params, seed=0)
    wall, cpu = time.perf_counter() - started, _cpu() - cpu
    return [(e.details.method_key, e.estimate, e.ci_lower, e.ci_upper) for e in state.treatment_effects], wall, cpu


def in_flow(
    frame: Any, job: Path, params: dict[str, Any], runner: Any, width: int | None
) -> tuple[list[Row], float, float]:
    """The agent as a task of a flow on ``runner``, its parts mapped as Prefect tasks."""
    from prefect import flow, task

    @task(name="effect_estimator", persist_result=False)
    def estimate() -> tuple[list[Row], float, float]:
        return _estimate(frame, job, params)

    @flow(name="bench_dask", task_runner=runner, persist_result=False)
    def bench() -> tuple[list[Row], float, float]:
        with use_mapper(PrefectPartMapper(threading.get_ident(), width)):
            return estimate()

    return bench()


def max_diff(a: list[Row], b: list[Row]) -> float:
    """Largest absolute difference of an estimate or bound (inf if the methods differ)."""
    if [r[0] for r in a] != [r[0] for r in b]:
        return float("inf")
    return max(abs(x - y) for ra, rb in zip(a, b, strict=True) for x, y in zip(ra[1:], rb[1:], strict=True))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--p", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--modes", default="plain,sequential,threads,dask")
    ap.add_argument("--threads", type=int, default=max(2, os.cpu_count() or 2))
    ap.add_argument("--bootstrap", type=int, default=200)
    args = ap.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    frame = make_frame(args.n, args.p, args.seed)
    params = {"bootstrap": args.bootstrap}
    print(f"bench_dask: effect_estimator on {args.n:,} x {args.p}, default menu, {os.cpu_count()} CPUs")
    results: dict[str, tuple[list[Row], float, float]] = {}
    mode_names: list[str] = []
    with temporary_server(preload), tempfile.TemporaryDirectory(prefix="bench_dask_") as tmp:
        for mode in modes:
            job = Path(tmp) / mode
            if mode == "plain":
                results[mode] = _estimate(frame, job, params)
            elif mode in ("sequential", "threads"):
                from prefect.task_runners import ThreadPoolTaskRunner

                workers = 1 if mode == "sequential" else args.threads
                results[mode] = in_flow(frame, job, params, ThreadPoolTaskRunner(max_workers=workers), workers)
            elif mode == "dask":
                from distributed import LocalCluster
                from prefect_dask import DaskTaskRunner

                started = time.perf_counter()
                with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cl:
                    from distributed import Client

                    with Client(cl) as client:
                        client.run(preload)
                    print(
                        f"  (local Dask cluster of 2 workers started and their imports done in {time.perf_counter() - started:.1f}s)"
                    )
                    results[mode] = in_flow(frame, job, params, DaskTaskRunner(address=cl.scheduler_address), None)
            else:
                raise SystemExit(f"unknown mode {mode!r}")
            print(f"  {mode:<10} {results[mode][1]:7.1f}s", flush=True)
            mode_names.append(mode)
        from prefect.logging.handlers import APILogWorker

        APILogWorker.drain_all(timeout=5)  # the runs' logs reach the server before it stops
    base = results.get("sequential", next(iter(results.values())))[1]
    ref_name = "plain" if "plain" in results else mode_names[0]
    ref = results[ref_name][0]
    print(f"\n{'mode':<11}{'seconds':>8}{'speed-up':>10}{'cpu/wall':>10}  max |diff| vs {ref_name}")
    for mode, (rows, wall, cpu) in results.items():
        busy = "   (work on the workers)" if mode == "dask" else f"{cpu / wall:10.2f}"
        print(f"{mode:<11}{wall:8.1f}{base / wall:9.2f}x{busy}  {max_diff(ref, rows):.3g}")
    print("cpu/wall: the cores this process kept busy on average (near 1 with no free core to spread onto)")
    head = next(iter(results.values()))[0]
    print("\nestimates: " + "; ".join(f"{k} {e:.4f} [{lo:.4f}, {hi:.4f}]" for k, e, lo, hi in head))


if __name__ == "__main__":
    main()
