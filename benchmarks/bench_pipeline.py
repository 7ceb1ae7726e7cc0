"""What a whole recipe run costs: wall time per agent and peak memory at several sizes.

Runs ``whyflow run`` (Prefect's ephemeral mode, as a user would) on the job-training example
scaled to each size and prints a table from the job's traces.

    python benchmarks/bench_pipeline.py                       # 10k and 100k rows
    python benchmarks/bench_pipeline.py --rows 10000,100000,1000000 --recipe quick_estimate
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.synthetic import job_training  # noqa: E402


def run_once(rows: int, recipe: Path, workdir: Path, execute_notebook: bool) -> dict[str, object]:
    """Run the recipe once on ``rows`` rows; return wall time, per-agent seconds, peak RSS."""
    frame, truth = job_training(n=rows, seed=rows % 1000)
    data = workdir / f"training_{rows}.csv"
    frame.to_csv(data, index=False)
    out = workdir / f"job_{rows}"
    cmd = [
        str(Path(sys.executable).parent / "whyflow"),
        "run",
        str(recipe),
        "--data",
        str(data),
        "--treatment",
        "training",
        "--outcome",
        "earnings",
        "--metadata",
        str(ROOT / "examples" / "job_training.meta.yaml"),
        "--output",
        str(out),
    ]
    if not execute_notebook:
        cmd += ["--set", "notebook_generator.execute=false"]
    env = dict(os.environ, PREFECT_SERVER_ANALYTICS_ENABLED="false")
    started = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    if proc.returncode != 0:
        print(proc.stdout[-3000:], proc.stderr[-3000:], file=sys.stderr)
        raise SystemExit(f"run on {rows} rows failed with exit code {proc.returncode}")
    state = json.loads((out / "state.json").read_text())
    per_agent: dict[str, float] = {}
    for line in (out / "traces.jsonl").read_text().splitlines():
        trace = json.loads(line)
        step = trace.get("inputs", {}).get("step", trace["agent_name"])
        per_agent[step] = per_agent.get(step, 0.0) + trace.get("duration_ms", 0) / 1000.0
    head = next((e for e in state["treatment_effects"] if e["details"].get("headline")), None)
    return {
        "rows": rows,
        "wall_s": wall,
        "peak_mb": peak_mb,
        "per_agent": per_agent,
        "headline": head,
        "truth": truth["effect"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", default="10000,100000")
    parser.add_argument("--recipe", default="causal_analysis")
    parser.add_argument("--execute-notebook", action="store_true", help="also execute the notebook (slower)")
    args = parser.parse_args()
    sizes = [int(x) for x in args.rows.split(",") if x]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for rows in sizes:
            print(f"running {Path(args.recipe).name} on {rows:,} rows ...", flush=True)
            results.append(run_once(rows, Path(args.recipe), Path(tmp), args.execute_notebook))
    steps = list(dict.fromkeys(k for r in results for k in r["per_agent"]))  # type: ignore[attr-defined]
    print()
    print(f"{'step':<28}" + "".join(f"{r['rows']:>14,}" for r in results))
    for step in steps:
        print(f"{step:<28}" + "".join(f"{r['per_agent'].get(step, 0.0):>13.1f}s" for r in results))  # type: ignore[attr-defined]
    print(f"{'whole run (wall)':<28}" + "".join(f"{r['wall_s']:>13.1f}s" for r in results))
    print(f"{'peak RSS (MB, max so far)':<28}" + "".join(f"{r['peak_mb']:>14.0f}" for r in results))
    for r in results:
        h = r["headline"]
        if h:
            covered = h["ci_lower"] <= r["truth"] <= h["ci_upper"]
            print(
                f"{r['rows']:>9,} rows: headline {h['method']} {h['estimate']:.0f} "
                f"[{h['ci_lower']:.0f}, {h['ci_upper']:.0f}], truth {r['truth']:.0f}, covered={covered}"
            )


if __name__ == "__main__":
    main()
