"""Benchmark the sandbox's overhead: what running a trivial snippet costs per layer configuration.

Usage::

    .venv/bin/python benchmarks/bench_sandbox.py               # 9 runs per configuration
    .venv/bin/python benchmarks/bench_sandbox.py --repeat 21

For each isolation (best, no-namespaces, limits-only) started cold (a fresh ``python -I`` that
imports pandas) and warm (forked from a template that has it imported), it runs
``result = 1`` and a small pandas snippet on a 1,000-row CSV, and prints the median and
90th-percentile overhead (``run_code``'s wall time minus the code's own) and the layers active.
The first warm call, which starts the template, is timed apart. Baselines for context: a bare
``python -I -c pass`` and ``python -I -c "import pandas"``. Target (issue 14): < 300 ms.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from whyflow.runtime.sandbox import server as sandbox_server  # noqa: E402
from whyflow.runtime.sandbox.run import run_code  # noqa: E402

SNIPPETS = {"trivial": "result = 1", "pandas": "result = df.groupby('g')['y'].mean()"}


def _quantiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]


def _baseline(argv: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _configuration(isolation: str, warm: bool, data: Path, repeat: int) -> list[str]:
    rows = []
    first = ""
    if warm:
        sandbox_server.shutdown()
        start = time.perf_counter()
        run_code("result = 1", isolation=isolation, warm=True)  # type: ignore[arg-type]
        first = f"  (template start {time.perf_counter() - start:.2f} s)"
    for name, code in SNIPPETS.items():
        overheads, layers = [], []
        for _ in range(repeat):
            result = run_code(code, {"data": data}, isolation=isolation, warm=warm)  # type: ignore[arg-type]
            if not result.ok:
                raise SystemExit(f"bench_sandbox: {isolation} {name} failed: {result.error}")
            overheads.append(result.overhead_seconds)
            layers = result.layers
        median, p90 = _quantiles(overheads)
        mode = "warm" if warm else "cold"
        rows.append(
            f"{isolation:<14} {mode:<5} {name:<8} {median * 1000:>9.0f} {p90 * 1000:>9.0f}   {','.join(layers)}"
        )
    if first:
        rows[-1] += first
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as tmp:
        data = Path(tmp) / "data.csv"
        data.write_text("g,y\n" + "".join(f"{i % 7},{i * 0.5}\n" for i in range(1000)))
        bare = _baseline([sys.executable, "-I", "-c", "pass"], args.repeat)
        pandas = _baseline([sys.executable, "-I", "-c", "import pandas"], args.repeat)
        print(f"baseline: python -I -c pass {bare * 1000:.0f} ms; python -I -c 'import pandas' {pandas * 1000:.0f} ms")
        print(f"{'isolation':<14} {'start':<5} {'snippet':<8} {'median ms':>9} {'p90 ms':>9}   layers")
        for isolation in ("best", "no-namespaces", "limits-only"):
            for warm in (False, True):
                for row in _configuration(isolation, warm, data, args.repeat):
                    print(row, flush=True)
        sandbox_server.shutdown()


if __name__ == "__main__":
    main()
