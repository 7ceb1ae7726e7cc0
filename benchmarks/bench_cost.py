"""What a whyflow run costs next to the floor: a plain script doing the same core computations.

For each size, generates data with a known effect, runs ``whyflow run
whyflow/recipes/causal_analysis.yaml`` as a user would (a subprocess, Prefect's ephemeral mode, the
notebook executed, ``--llm off``) and then ``benchmarks/floor.py`` on the same file (read,
profile, correlations, OLS, logistic propensity, IPW, balance, cross-fitted gradient-boosting
AIPW, PC on 5,000 rows, 20 placebo refits; see its docstring). Both wall times include start-up
and imports. Prints one row a size: whyflow and floor seconds, their ratio, the issue-11 target
and whether it is met, peak memory against the in-memory data frame, the agents' shares of the
run, the headline against the truth and what causal discovery cut (its ``limits`` and
``screened_out`` outputs). Then the cost curves in rows and in columns with fitted log-log
exponents (rows should be close to 1, columns no worse than 2).

    python benchmarks/bench_cost.py                            # every size and both curves (long)
    python benchmarks/bench_cost.py --sizes demo,100k --curves none
    python benchmarks/bench_cost.py --quick                    # small stand-ins: a smoke check

Sizes (``--sizes``): ``demo`` (examples/job_training.csv, 2k x 8, target <= 20 s), ``100k``
(100k x 20, <= floor + 20 s), ``1m`` (1M x 20, <= 2 x floor and peak memory <= 4 x the frame),
``wide80`` (5k x 80, <= 60 s), ``wide200`` (1k x 200, completes within 120 s saying what it
cut). Row data: a binary treatment confounded by x1 and x2 (linear), padded with independent
columns; wide data: ``wide_linear`` (covariates caused by one another, so correlated). With
``--quick`` the shapes shrink (targets still printed, but they are for the full sizes).

Peak memory is the largest summed RSS of the run's process tree (psutil, sampled every 0.1 s;
the kernel executing the notebook included), else the largest single process (``wait4``).
For ``1m`` the same is measured on the file's first 2,000 rows (the fixed footprint: the
interpreter, the statistics libraries, Prefect's server, the notebook's kernel; about 1.1 GB
for whyflow, 0.3 GB for the floor) and the memory target is read as the data's share, the peak
above that footprint, <= 4 x the frame. The raw peaks are printed beside it.
``OMP_NUM_THREADS`` defaults to 1 as in the Makefile, for both whyflow and the floor.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from whyflow.flows.recipes.builtin import builtin_recipe

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.synthetic import linear_confounding  # noqa: E402
from benchmarks.synthetic_graphs import wide_linear  # noqa: E402

try:
    import psutil
except ImportError:  # pragma: no cover - psutil is optional
    psutil = None

RECIPE = builtin_recipe("causal_analysis")
DEMO = ROOT / "examples" / "job_training.csv"
DEMO_META = ROOT / "examples" / "job_training.meta.yaml"


@dataclass(frozen=True)
class Shape:
    """One data set: ``kind`` is demo (the shipped example), rows (linear confounding) or wide."""

    kind: str
    n: int
    p: int

    @property
    def label(self) -> str:
        return f"{self.n:,} x {self.p}"


@dataclass(frozen=True)
class Target:
    text: str
    met: Callable[[Run], bool]


@dataclass
class Run:
    """One measured whyflow run and floor run on the same file."""

    shape: Shape
    frame_mb: float
    truth: float
    wall: float = 0.0
    ok: bool = False
    error: str = ""
    peak_mb: float = 0.0
    max_process_mb: float = 0.0
    agents: dict[str, float] = field(default_factory=dict)
    busy: float = 0.0
    """Seconds in which at least one agent ran (agents of a ``parallel:`` group overlap)."""
    headline: dict[str, Any] | None = None
    cut: str = ""
    floor_wall: float = 0.0
    floor_steps: dict[str, float] = field(default_factory=dict)
    floor_done: bool = False
    floor_peak_mb: float = 0.0
    fixed_peak_mb: float = 0.0
    floor_fixed_peak_mb: float = 0.0

    @property
    def ratio(self) -> float:
        return self.wall / self.floor_wall if self.floor_wall else float("nan")

    @property
    def data_mb(self) -> float:
        """The peak above the fixed footprint (the same run on 2,000 rows); the raw peak when not measured."""
        return self.peak_mb - self.fixed_peak_mb


FULL = {
    "demo": Shape("demo", 2000, 8),
    "100k": Shape("rows", 100_000, 20),
    "1m": Shape("rows", 1_000_000, 20),
    "wide80": Shape("wide", 5000, 80),
    "wide200": Shape("wide", 1000, 200),
}
QUICK = {
    "demo": Shape("demo", 2000, 8),
    "100k": Shape("rows", 5000, 20),
    "1m": Shape("rows", 20_000, 20),
    "wide80": Shape("wide", 1000, 30),
    "wide200": Shape("wide", 500, 50),
}
TARGETS = {
    "demo": Target("<= 20 s", lambda r: r.ok and r.wall <= 20),
    "100k": Target("<= floor + 20 s", lambda r: r.ok and r.floor_done and r.wall <= r.floor_wall + 20),
    "1m": Target(
        "<= 2 x floor, data mem <= 4 x frame",
        lambda r: r.ok and r.floor_done and r.wall <= 2 * r.floor_wall and r.data_mb <= 4 * r.frame_mb,
    ),
    "wide80": Target("<= 60 s", lambda r: r.ok and r.wall <= 60),
    "wide200": Target("<= 120 s, cut stated", lambda r: r.ok and r.wall <= 120),
}
ROW_CURVE = {
    "full": [Shape("rows", n, 20) for n in (10_000, 30_000, 100_000)],
    "quick": [Shape("rows", n, 20) for n in (5000, 20_000)],
}
COL_CURVE = {
    "full": [Shape("wide", 2000, p) for p in (10, 20, 40, 80)],
    "quick": [Shape("wide", 1000, p) for p in (10, 30)],
}


def make_data(shape: Shape, workdir: Path, seed: int) -> tuple[Path, str, str, float, float]:
    """Write the data set; return its path, treatment, outcome, true effect and frame size (MB)."""
    if shape.kind == "demo":
        frame = pd.read_csv(DEMO)
        return DEMO, "training", "earnings", 1500.0, frame.memory_usage(deep=True).sum() / 2**20
    if shape.kind == "rows":
        frame, truth = linear_confounding(n=shape.n, effect=2.0, seed=seed)
        rng = np.random.default_rng(seed + 1)
        for k in range(max(0, shape.p - frame.shape[1])):
            frame[f"w{k:02d}"] = rng.normal(size=shape.n)
    else:
        frame, truth = wide_linear(n=shape.n, p=shape.p, seed=seed)
    path = workdir / f"{shape.kind}_{shape.n}x{shape.p}.csv"
    frame.to_csv(path, index=False)
    mb = frame.memory_usage(deep=True).sum() / 2**20
    return path, truth["treatment"], truth["outcome"], float(truth["effect"]), mb


def measure(cmd: list[str], env: dict[str, str], timeout: float, log: Path) -> dict[str, Any]:
    """Run ``cmd``; return wall seconds, exit code, peak tree RSS and largest-process RSS (MB)."""
    with open(log, "wb") as sink:
        proc = subprocess.Popen(cmd, env=env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
        started = time.perf_counter()
        tree_peak, timed_out, status, usage = 0.0, False, 0, None
        root = psutil.Process(proc.pid) if psutil else None
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if root is not None:
                tree_peak = max(tree_peak, _tree_rss(root))
            if time.perf_counter() - started > timeout and not timed_out:
                timed_out = True
                os.killpg(proc.pid, signal.SIGKILL)
            time.sleep(0.1)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
    biggest = usage.ru_maxrss / 1024 if usage else 0.0
    return {
        "wall": wall,
        "rc": proc.returncode,
        "timed_out": timed_out,
        "peak_mb": tree_peak or biggest,
        "max_process_mb": biggest,
    }


def _tree_rss(root: Any) -> float:
    total = 0
    try:
        for proc in [root, *root.children(recursive=True)]:
            try:
                total += proc.memory_info().rss
            except psutil.Error:
                continue
    except psutil.Error:
        return 0.0
    return total / 2**20


def _cut(traces: list[dict[str, Any]]) -> str:
    """What causal discovery left out, from its outputs."""
    found = [t for t in traces if t.get("agent_name") == "causal_discovery"]
    if not found:
        return "no discovery trace"
    out = found[-1].get("outputs", {})
    parts = []
    used, complete = out.get("n_rows_used"), out.get("n_rows_complete")
    if used and complete and used < complete:
        parts.append(f"discovery on {used:,} of {complete:,} rows")
    screened = out.get("screened_out") or []
    if screened:
        parts.append(f"{len(screened)} column(s) screened out")
    parts += [str(x) for x in out.get("limits") or [] if not str(x).startswith("screened ")]
    return "; ".join(parts) or "nothing cut"


def whyflow_cmd(data: Path, t: str, y: str, job: Path, demo: bool) -> list[str]:
    cmd = [
        str(Path(sys.executable).parent / "whyflow"),
        "run",
        str(RECIPE),
        "--data",
        str(data),
        "--treatment",
        t,
        "--outcome",
        y,
        "--output",
        str(job),
        "--llm",
        "off",
    ]
    return cmd + (["--metadata", str(DEMO_META)] if demo else [])


def floor_cmd(data: Path, t: str, y: str, seed: int) -> list[str]:
    return [sys.executable, str(ROOT / "benchmarks" / "floor.py"), str(data), "-t", t, "-y", y, "--seed", str(seed)]


def measure_fixed(
    run: Run, data: Path, t: str, y: str, workdir: Path, args: argparse.Namespace, env: dict[str, str]
) -> None:
    """The peaks of whyflow and the floor on the file's first 2,000 rows: their fixed footprints."""
    small = workdir / f"fixed_{data.name}"
    pd.read_csv(data, nrows=2000).to_csv(small, index=False)
    print("  fixed footprint (the first 2,000 rows): whyflow ...", end=" ", flush=True)
    got = measure(
        whyflow_cmd(small, t, y, workdir / f"job_fixed_{data.stem}", False),
        env,
        args.timeout,
        workdir / "fixed.whyflow.log",
    )
    run.fixed_peak_mb = got["peak_mb"]
    got = measure(floor_cmd(small, t, y, args.seed), env, args.floor_timeout, workdir / "fixed.floor.log")
    run.floor_fixed_peak_mb = got["peak_mb"]
    print(f"{run.fixed_peak_mb:,.0f} MB; floor {run.floor_fixed_peak_mb:,.0f} MB", flush=True)


def run_size(shape: Shape, workdir: Path, args: argparse.Namespace, env: dict[str, str], fixed: bool = False) -> Run:
    data, t, y, truth, frame_mb = make_data(shape, workdir, args.seed)
    tag = f"{shape.kind}_{shape.n}x{shape.p}"
    job = workdir / f"job_{tag}"
    cmd = whyflow_cmd(data, t, y, job, shape.kind == "demo")
    run = Run(shape, frame_mb, truth)
    print(f"  whyflow on {shape.label} ({shape.kind}) ...", end=" ", flush=True)
    got = measure(cmd, env, args.timeout, workdir / f"{tag}.whyflow.log")
    run.wall, run.peak_mb, run.max_process_mb = got["wall"], got["peak_mb"], got["max_process_mb"]
    run.ok = got["rc"] == 0 and (job / "state.json").exists()
    if not run.ok:
        tail = (workdir / f"{tag}.whyflow.log").read_text(errors="replace")[-400:]
        run.error = "timed out" if got["timed_out"] else f"exit {got['rc']}: {tail.strip().splitlines()[-1:]}"
    if (job / "traces.jsonl").exists():
        traces = [json.loads(line) for line in (job / "traces.jsonl").read_text().splitlines() if line.strip()]
        for trace in traces:
            name = trace["agent_name"]
            run.agents[name] = run.agents.get(name, 0.0) + trace.get("duration_ms", 0) / 1000.0
        run.busy = _busy(traces)
        run.cut = _cut(traces)
    if (job / "state.json").exists():
        state = json.loads((job / "state.json").read_text())
        run.headline = next((e for e in state.get("treatment_effects") or [] if e["details"].get("headline")), None)
    print(f"{run.wall:.1f}s; floor ...", end=" ", flush=True)

    fcmd = floor_cmd(data, t, y, args.seed)
    flog = workdir / f"{tag}.floor.log"
    got = measure(fcmd, env, args.floor_timeout, flog)
    run.floor_wall, run.floor_peak_mb = got["wall"], got["peak_mb"]
    for line in flog.read_text(errors="replace").splitlines():
        if line.startswith("{"):
            rec = json.loads(line)
            if "step" in rec:
                run.floor_steps[rec["step"]] = rec["seconds"]
            run.floor_done = run.floor_done or "total" in rec
    print(f"{run.floor_wall:.1f}s" + ("" if run.floor_done else " (stopped: a lower bound)"), flush=True)
    if fixed:
        measure_fixed(run, data, t, y, workdir, args, env)
    return run


def _busy(traces: list[dict[str, Any]]) -> float:
    """The length of the union of the agents' intervals (a trace's timestamp is when the agent ended)."""
    from datetime import datetime

    spans = []
    for trace in traces:
        end = datetime.fromisoformat(str(trace["timestamp"]).replace("Z", "+00:00")).timestamp()
        spans.append((end - trace.get("duration_ms", 0) / 1000.0, end))
    total, reach = 0.0, float("-inf")
    for start, end in sorted(spans):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def _fmt_headline(run: Run) -> str:
    h = run.headline
    if not h:
        return f"no headline (truth {run.truth:,.4g})"
    covered = "covered" if h["ci_lower"] <= run.truth <= h["ci_upper"] else "NOT covered"
    return (
        f"{h['method']} {h['estimate']:,.4g} [{h['ci_lower']:,.4g}, {h['ci_upper']:,.4g}] "
        f"vs truth {run.truth:,.4g} ({covered})"
    )


def _shares(run: Run, top: int = 3) -> str:
    if not run.agents or not run.wall:
        return "no traces"
    ranked = sorted(run.agents.items(), key=lambda kv: -kv[1])[:top]
    text = ", ".join(f"{name} {sec:.1f}s ({sec / run.wall:.0%})" for name, sec in ranked)
    rest = run.wall - run.busy
    return f"{text}; outside agents (start-up, Prefect) {rest:.1f}s ({rest / run.wall:.0%})"


def print_table(rows: list[tuple[str, Run]]) -> None:
    print()
    print(f"{'size':<8} {'shape':<14} {'whyflow':>8} {'floor':>8} {'ratio':>6}  {'target':<31} {'met':<4} peak memory")
    for key, run in rows:
        target = TARGETS[key]
        floor_s = f"{run.floor_wall:.1f}s" + ("" if run.floor_done else "+")
        stand_in = run.shape != FULL[key]
        met = ("yes" if target.met(run) else "no") + ("*" if stand_in else "")
        mem = (
            f"{run.peak_mb:,.0f} MB = {run.peak_mb / run.frame_mb:,.{0 if run.peak_mb > 100 * run.frame_mb else 1}f} x frame ({run.frame_mb:,.1f} MB); "
            f"floor {run.floor_peak_mb:,.0f} MB"
        )
        if run.fixed_peak_mb:
            mem += (
                f"\n{'':9}data memory (peak above the 2,000-row run's {run.fixed_peak_mb:,.0f} MB): {run.data_mb:,.0f} MB = "
                f"{run.data_mb / run.frame_mb:.1f} x frame; floor {run.floor_peak_mb - run.floor_fixed_peak_mb:,.0f} MB = "
                f"{(run.floor_peak_mb - run.floor_fixed_peak_mb) / run.frame_mb:.1f} x frame (above its {run.floor_fixed_peak_mb:,.0f} MB)"
            )
        print(
            f"{key:<8} {run.shape.label:<14} {run.wall:>7.1f}s {floor_s:>8} {run.ratio:>5.1f}x  {target.text:<31} {met:<4} {mem}"
        )
        if run.error:
            print(f"{'':9}FAILED: {run.error}")
        print(f"{'':9}agents: {_shares(run)}")
        floor_top = sorted(run.floor_steps.items(), key=lambda kv: -kv[1])[:3]
        print(f"{'':9}floor steps: " + ", ".join(f"{s} {v:.1f}s" for s, v in floor_top))
        print(f"{'':9}headline: {_fmt_headline(run)}")
        print(f"{'':9}cut: {run.cut}")
    if any(run.shape != FULL[key] for key, run in rows):
        print("* --quick: a small stand-in shape; the target is the issue's for the full size.")


def _exponent(xs: list[float], ys: list[float]) -> float:
    pairs = [(x, y) for x, y in zip(xs, ys, strict=True) if x > 0 and y > 0]
    if len(pairs) < 2:
        return float("nan")
    lx, ly = np.log([p[0] for p in pairs]), np.log([p[1] for p in pairs])
    return float(np.polyfit(lx, ly, 1)[0])


def print_curve(title: str, axis: str, runs: list[Run], limit: float) -> None:
    xs = [float(r.shape.n if axis == "rows" else r.shape.p) for r in runs]
    series = {
        "whyflow wall": [r.wall for r in runs],
        "whyflow agents (busy)": [r.busy for r in runs],
        "floor wall": [r.floor_wall for r in runs],
        "floor steps (sum)": [sum(r.floor_steps.values()) for r in runs],
    }
    print()
    print(f"{title:<24}" + "".join(f"{int(x):>10,}" for x in xs) + f"{'exponent':>10}")
    for name, ys in series.items():
        print(f"{name:<24}" + "".join(f"{y:>9.1f}s" for y in ys) + f"{_exponent(xs, ys):>10.2f}")
    agents_exp = _exponent(xs, series["whyflow agents (busy)"])
    verdict = "met" if agents_exp <= limit else "NOT met"
    print(f"{'':24}target: exponent of the agents' time <= {limit} ({verdict})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default=",".join(FULL), help=f"comma-separated, of {', '.join(FULL)}; or none")
    parser.add_argument("--curves", default="rows,cols", help="rows, cols, both (rows,cols) or none")
    parser.add_argument("--quick", action="store_true", help="small stand-in shapes: a smoke check in minutes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=900, help="seconds before a whyflow run is stopped")
    parser.add_argument("--floor-timeout", type=float, default=600, help="seconds before the floor is stopped")
    parser.add_argument("--json", type=Path, help="also write the measurements here")
    args = parser.parse_args()
    table = QUICK if args.quick else FULL
    keys = [k.strip() for k in args.sizes.split(",") if k.strip() and k.strip() != "none"]
    unknown = [k for k in keys if k not in table]
    if unknown:
        parser.error(f"unknown size(s) {unknown}; choose from {list(table)}")
    curves = {c.strip() for c in args.curves.split(",")} - {"none", ""}
    mode = "quick" if args.quick else "full"

    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("PREFECT_HOME", str(ROOT / ".prefect"))
    env.setdefault("MPLCONFIGDIR", str(ROOT / ".mplconfig"))
    env["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"

    cache: dict[Shape, Run] = {}
    with tempfile.TemporaryDirectory(prefix="bench_cost_") as tmp:

        def get(shape: Shape, fixed: bool = False) -> Run:
            if shape not in cache:
                cache[shape] = run_size(shape, Path(tmp), args, env, fixed)
            return cache[shape]

        print(f"bench_cost ({mode}): whyflow run {RECIPE.relative_to(ROOT)} vs benchmarks/floor.py", flush=True)
        rows = [(key, get(table[key], fixed=key == "1m")) for key in keys]
        row_runs = [get(s) for s in ROW_CURVE[mode]] if "rows" in curves else []
        col_runs = [get(s) for s in COL_CURVE[mode]] if "cols" in curves else []

    print_table(rows)
    if row_runs:
        print_curve("rows (x 20 columns)", "rows", row_runs, limit=1.2)
    if col_runs:
        n = col_runs[0].shape.n
        print_curve(f"columns (x {n:,} rows)", "cols", col_runs, limit=2.0)
    if args.json:
        dump = [{"shape": vars(r.shape), **{k: v for k, v in vars(r).items() if k != "shape"}} for r in cache.values()]
        args.json.write_text(json.dumps(dump, indent=2, default=str))


if __name__ == "__main__":
    main()
