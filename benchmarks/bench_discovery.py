"""Benchmark causal discovery: accuracy on known graphs, and time/memory at scale.

Usage::

    .venv/bin/python benchmarks/bench_discovery.py                  # both parts
    .venv/bin/python benchmarks/bench_discovery.py --rows 10000 100000 1000000 --seeds 5
    .venv/bin/python benchmarks/bench_discovery.py --skip-accuracy --rows 1000000

Part 1 prints skeleton and oriented-edge precision/recall (mean over seeds) of PC, FCI and GES
on linear-Gaussian graphs and of LiNGAM on linear non-Gaussian (uniform noise) graphs.
Part 2 runs causal_discovery -> dag_expert -> confounder_discovery on ``wide_confounded`` data
(20 columns) in a fresh process per size and prints wall time and the process's peak RSS
after each agent (peak RSS only grows, so each row is the peak so far; tracemalloc is not used
because it slows causal-learn's Python loops several-fold).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.synthetic_graphs import SEVEN_NODE_GRAPH, linear_sem, random_dag  # noqa: E402
from whyflow.causal.discovery.causal_discovery import learn_edges  # noqa: E402
from whyflow.causal.discovery.graphs import Knowledge, oriented, precision_recall, skeleton  # noqa: E402
from whyflow.causal.state import CausalEdge  # noqa: E402


def accuracy(seeds: int, n: int) -> None:
    """Print the precision/recall table for the four methods on two known graphs."""
    graphs = {"seven-node": lambda s: SEVEN_NODE_GRAPH, "random-8 (deg 2)": lambda s: random_dag(8, 2.0, seed=100 + s)}
    warm, _ = linear_sem(SEVEN_NODE_GRAPH, n=200, seed=0)
    for method in ("pc", "fci", "ges", "lingam"):  # import each library once before timing
        learn_edges(method, warm.to_numpy(), list(warm.columns), 0.05, Knowledge(), 0)
    print(f"\n## Accuracy (n={n:,}, mean over {seeds} seeds; skeleton / oriented precision-recall)\n")
    print("| graph | method | data | skel P | skel R | orient P | orient R | seconds |")
    print("|---|---|---|---|---|---|---|---|")
    for gname, make in graphs.items():
        for method in ("pc", "fci", "ges", "lingam"):
            noise = "uniform" if method == "lingam" else "gaussian"
            rows = []
            for s in range(seeds):
                edges = make(s)
                frame, truth = linear_sem(edges, n=n, seed=s, noise=noise)
                start = time.perf_counter()
                raw = learn_edges(method, frame.to_numpy(), list(frame.columns), 0.05, Knowledge(), s)
                secs = time.perf_counter() - start
                found = [CausalEdge(source=a, target=b, edge_type=k) for a, b, k, _ in raw]
                sp, sr = precision_recall(skeleton(found), skeleton(truth["edges"]))
                op, orr = precision_recall(oriented(found), set(truth["edges"]))
                rows.append((sp, sr, op, orr, secs))
            m = np.mean(rows, axis=0)
            print(
                f"| {gname} | {method.upper()} | {noise} | {m[0]:.2f} | {m[1]:.2f} | {m[2]:.2f} | {m[3]:.2f} | {m[4]:.2f} |"
            )


def _child(parquet: str, rows: int) -> None:
    """Run the three agents on one dataset and print JSON timings (runs in a fresh process)."""
    import pandas as pd

    from tests.helpers import basic_profile
    from whyflow.causal.state import AnalysisState, DatasetInfo
    from whyflow.flows.running.dispatch import run_single_agent

    frame = pd.read_parquet(parquet)
    job = Path(parquet).parent
    state = AnalysisState(
        job_id="bench",
        dataset_info=DatasetInfo(url=parquet, name="bench", n_samples=len(frame), n_features=frame.shape[1]),
        treatment_variable="treated",
        outcome_variable="outcome",
    )
    state.data_profile = basic_profile(frame.head(20000), "treated", "outcome")
    state.dataframe_path = parquet
    del frame
    import causallearn.search.ConstraintBased.PC  # noqa: F401  warm imports, not timed
    import dowhy  # noqa: F401

    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out: dict[str, object] = {"rows": rows, "rss_before_mb": round(rss_before)}
    for agent in ("causal_discovery", "dag_expert", "confounder_discovery"):
        start = time.perf_counter()
        result = run_single_agent(agent, state, job)
        secs = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        out[agent] = {"seconds": round(secs, 2), "peak_rss_mb": round(peak), "summary": result.summary}
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    assert state.confounder_discovery is not None
    out["adjustment_set"] = state.confounder_discovery.adjustment_set
    print("RESULT " + json.dumps(out))


def scale(rows_list: list[int]) -> None:
    """Time and memory of the agents at each size, each in a fresh process."""
    from benchmarks.synthetic_graphs import wide_confounded

    print("\n## Scale (20 columns; default params: PC, bootstrap 20, max_rows 20,000)\n")
    print("| rows | agent | seconds | peak RSS so far (MB) | summary |")
    print("|---|---|---|---|---|")
    rss = []
    for rows in rows_list:
        with tempfile.TemporaryDirectory() as tmp:
            frame, _ = wide_confounded(n=rows, p=20, seed=0)
            path = Path(tmp) / "data.parquet"
            frame.to_parquet(path, index=False)
            del frame
            proc = subprocess.run(
                [sys.executable, __file__, "--child", str(path), str(rows)],
                capture_output=True,
                text=True,
                cwd=ROOT,
                check=False,
            )
            line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
            if line is None:
                print(f"| {rows:,} | FAILED | | | {proc.stderr.strip().splitlines()[-1] if proc.stderr else ''} |")
                continue
            res = json.loads(line[7:])
            for agent in ("causal_discovery", "dag_expert", "confounder_discovery"):
                r = res[agent]
                print(f"| {rows:,} | {agent} | {r['seconds']} | {r['peak_rss_mb']} | {r['summary']} |")
            rss.append((rows, res["rss_before_mb"], res["peak_rss_mb"], res["adjustment_set"]))
    print("\n| rows | RSS after imports+load (MB) | peak RSS (MB) | adjustment set |")
    print("|---|---|---|---|")
    for rows, before, peak, adj in rss:
        print(f"| {rows:,} | {before} | {peak} | {', '.join(adj)} |")


def main() -> None:
    """Parse options and run the requested parts."""
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        _child(sys.argv[2], int(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--n", type=int, default=5000, help="rows per accuracy dataset")
    parser.add_argument("--skip-accuracy", action="store_true")
    parser.add_argument("--skip-scale", action="store_true")
    args = parser.parse_args()
    if not args.skip_accuracy:
        accuracy(args.seeds, args.n)
    if not args.skip_scale:
        scale(args.rows)


if __name__ == "__main__":
    main()
