"""Benchmark: coverage of each estimator on the synthetic scenarios, and agent wall time/memory.

Usage: ``python benchmarks/bench_estimation.py [--rows 10000 100000 1000000] [--n 3000]``.
Prints one table of (scenario, truth, method, estimate, 95% CI, covered) and one of the wall
time and the process's peak resident memory (ru_maxrss, so sizes run smallest first) of ps_diagnostics + effect_estimator.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import synthetic_effects as S  # noqa: E402
from tests.helpers import make_state  # noqa: E402
from whyflow.causal.state import StudyDesign  # noqa: E402
from whyflow.flows.running.dispatch import run_single_agent  # noqa: E402

DESIGNS = {
    "instrument": lambda tr: StudyDesign(instrument=tr["instrument"]),
    "panel_did": lambda tr: StudyDesign(unit_column=tr["unit_column"], time_column=tr["time_column"]),
    "sharp_rdd": lambda tr: StudyDesign(running_variable=tr["running_variable"], cutoff=tr["cutoff"]),
}


def coverage_table(n: int, seed: int) -> None:
    """Run effect_estimator on every scenario and print each method's estimate and coverage."""
    print(f"{'scenario':<24}{'truth':>7}  {'method':<40}{'estimate':>10}  {'95% CI':<22}{'covered':>8}")
    for name, gen in S.SCENARIOS.items():
        frame, truth = gen(n, seed)
        with tempfile.TemporaryDirectory() as tmp:
            state = make_state(frame, Path(tmp), truth["treatment"], truth["outcome"])
            if name in DESIGNS:
                state.design = DESIGNS[name](truth)
            run_single_agent("effect_estimator", state, Path(tmp), {"bootstrap": 100}, seed=seed)
        for e in state.treatment_effects:
            mark = "*" if e.details.headline else ""
            covered = "yes" if e.ci_lower <= truth["effect"] <= e.ci_upper else "NO"
            ci = f"[{e.ci_lower:.3f}, {e.ci_upper:.3f}]"
            print(
                f"{name:<24}{truth['effect']:>7.2f}  {mark:<2}{e.method[:38]:<38}{e.estimate:>10.3f}  {ci:<22}{covered:>8}"
            )
    print("(* = headline)")


def timing(rows: list[int], seed: int) -> None:
    """Wall time and peak resident memory of ps_diagnostics + effect_estimator at each size."""
    print(f"\n{'rows':>9}  {'ps_diagnostics s':>17}  {'effect_estimator s':>19}  {'peak RSS MiB':>13}")
    for n in sorted(rows):
        frame, _ = S.nonlinear_heterogeneous(n=n, seed=seed)
        with tempfile.TemporaryDirectory() as tmp:
            state = make_state(frame, Path(tmp), "treated", "outcome")
            t0 = time.perf_counter()
            run_single_agent("ps_diagnostics", state, Path(tmp), seed=seed)
            t1 = time.perf_counter()
            run_single_agent("effect_estimator", state, Path(tmp), {"bootstrap": 100}, seed=seed)
            t2 = time.perf_counter()
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{n:>9}  {t1 - t0:>17.1f}  {t2 - t1:>19.1f}  {peak:>13.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=3000, help="rows per coverage scenario")
    parser.add_argument("--rows", type=int, nargs="*", default=[10_000, 100_000], help="sizes for the timing table")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-coverage", action="store_true")
    args = parser.parse_args()
    if not args.skip_coverage:
        coverage_table(args.n, args.seed)
    timing(args.rows, args.seed)


if __name__ == "__main__":
    main()
