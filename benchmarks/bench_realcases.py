"""Real-paper benchmark: does the causal recipe land published effects, or refuse for a real reason?

Runs every case of ``../shared/datasets/realcases/cases.json`` (24 effects published in real papers,
with their standard errors; see that folder's README) through ``whyflow/recipes/causal_analysis.yaml`` as a
user would: ``whyflow run`` in a subprocess, with the case's data, treatment, outcome and design hints
(instrument, running variable and cutoff, unit and time, estimand). The notebook step is left out
unless ``--notebook`` is given (it reports the numbers, it does not choose them).

Per case it prints the headline estimate and 95% interval, the critique's decision, whether the
interval covers the published effect, the distance in published SEs, and for a refusal its reason and
whether that reason names a problem the case is known to have (its ``pitfalls``/``reproduction``
text, matched by the keywords below). Overall: covered-and-approved, wrong-and-approved, refusals
(justified or not), crashes, median relative error, per design and in total.

    python benchmarks/bench_realcases.py                     # all 24 cases, 2 at a time
    python benchmarks/bench_realcases.py --cases iv04,rd01 --jobs 1
    python benchmarks/bench_realcases.py --controls paper    # each case's paper controls via --controls
    python benchmarks/bench_realcases.py --out real.jsonl; python benchmarks/bench_realcases.py --from-log real.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from whyflow.flows.recipes.builtin import builtin_recipe

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.bench_truth import broken_estimates, recipe_without_notebook  # noqa: E402

SHARED = ROOT.parent / "shared"
CASES = SHARED / "datasets" / "realcases" / "cases.json"
RECIPE = builtin_recipe("causal_analysis")
WHYFLOW = Path(sys.executable).parent / "whyflow"

# A refusal is justified when its reason names a problem the case really has. Each problem is a set of
# words a reason may use; the case has the problem when its pitfalls or reproduction text uses them too.
PROBLEMS: dict[str, tuple[str, ...]] = {
    "weak instrument": ("weak instrument", "first-stage f", "weak"),
    "few treated units": ("single treated", "one treated", "treated units", "few treated", "treated cluster"),
    "overlap": ("overlap", "common support", "positivity"),
    "parallel trends": ("parallel trends", "pre-trend", "pretrend"),
    "collinear or absorbed": ("collinear", "absorbed", "rank"),
    "repeated units": ("repeated units", "repeated", "cluster"),
}
PAPER_CONTROL_COLUMNS: dict[str, dict[str, str | None]] = {
    "rc01_sh24_esti_testing": {"gender (male)": "gender", "ethnic group (black)": "ethnicgrp"},
    "ob02_nhs_trust_cancer_waits": {"region (categorical)": "region"},
    "iv04_class_size_reading": {
        "tipuach (percent disadvantaged students; CauSciBench names tip_a, identical where present but missing in "
        "51 rows)": "tipuach"
    },
    "iv05_class_size_math": {"tipuach (percent disadvantaged students)": "tipuach"},
    "iv09_democracy_assistance": {"country fixed effects": "country"},
    "iv11_budget_committee": {"year (fixed effects)": "year"},
    "dd06_app_price_change": {"month (absorbed by panel and date fixed effects)": None},
}
"""The ``paper_controls`` written as descriptions, mapped once to the column they describe (``None``: none).

A text column (gender, ethnic group, region, country) enters as its dummies, i.e. as fixed effects; ``year``
in iv11 is numeric and enters as a linear term, not as the paper's year effects (``--controls`` has no
way to say "as categories"); the app data's month is absorbed by the panel's date effects already."""


def paper_controls(case: dict[str, Any]) -> list[str]:
    """The case's ``paper_controls`` as column names (descriptions through :data:`PAPER_CONTROL_COLUMNS`)."""
    mapped = PAPER_CONTROL_COLUMNS.get(case["id"], {})
    out: list[str] = []
    for entry in case.get("paper_controls") or []:
        column = mapped.get(entry, entry)
        if column is not None:
            out.append(column)
    return out


COLUMN_DOUBTS = ("uncertain adjustment", "residual confounding", "repeated units", "absorb")
"""Refusals for a doubt about named columns: justified when the case's pitfalls name one of them too."""


def load_cases(only: set[str] | None = None) -> list[dict[str, Any]]:
    cases = json.loads(CASES.read_text(encoding="utf-8"))
    return [c for c in cases if not only or c["id"] in only or c["id"].split("_")[0] in only]


def run_case(
    case: dict[str, Any], notebook: bool, timeout: int, keep: str | None = None, controls: str = "recipe"
) -> dict[str, Any]:
    """One ``whyflow run`` of the case; never raises (a crash or a time-out is a result).

    ``controls="paper"`` states the paper's controls with ``--controls`` (``none`` where the paper has none).
    """
    row: dict[str, Any] = {"id": case["id"], "design": case["design"], "published": case["published_effect"]}
    row["published_se"] = case["published_se"]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"real-{case['id']}-") as tmp:
        recipe = RECIPE if notebook else recipe_without_notebook(Path(tmp))
        data = SHARED / "datasets" / "realcases" / case["data"]
        cmd = [str(WHYFLOW), "run", str(recipe), "--data", str(data), "--treatment", case["treatment"]]
        job = Path(keep) / case["id"] if keep else Path(tmp) / "job"
        cmd += ["--outcome", case["outcome"], "--output", str(job), "--llm", "off", *case["hints"]]
        if controls == "paper":
            cmd += ["--controls", ",".join(paper_controls(case)) or "none"]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=os.environ.copy())
        except subprocess.TimeoutExpired:
            row.update(error=f"timed out after {timeout} s", seconds=time.perf_counter() - started)
            return row
        row["seconds"] = time.perf_counter() - started
        row["exit"] = proc.returncode
        state_path = job / "state.json"
        if not state_path.exists():
            lines = [ln for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip()]
            row["error"] = (lines[-1] if lines else f"exit {proc.returncode}")[:240]
            return row
        row.update(read_state(json.loads(state_path.read_text(encoding="utf-8"))))
        if proc.returncode not in (0, 3) and not row.get("decision"):
            lines = [ln for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip()]
            row["error"] = (lines[-1] if lines else f"exit {proc.returncode}")[:240]
    return row


def read_state(state: dict[str, Any]) -> dict[str, Any]:
    """Headline, interval, decision and the decision's reason from a job's ``state.json``."""
    out: dict[str, Any] = {"status": state.get("status")}
    effects = state.get("treatment_effects") or []
    out["broken"] = broken_estimates(effects)
    head = next((e for e in effects if (e.get("details") or {}).get("headline")), None)
    if head is not None:
        out.update(estimate=head["estimate"], lo=head["ci_lower"], hi=head["ci_upper"], method=head["method"])
    history = state.get("critique_history") or []
    if history:
        last = history[-1]
        out["decision"] = str(last.get("decision"))
        out["limit"] = bool(last.get("limit_reached"))
        first = str(last.get("reasoning") or "").strip().splitlines()
        out["reason"] = (last.get("verdict") or (first[0] if first else ""))[:2000]  # every doubt, not the first
        out["blockers"] = list(last.get("blockers") or [])
    if state.get("status") == "FAILED":
        out["error"] = str(state.get("error") or "FAILED")[:240]
    return out


def approved(r: dict[str, Any]) -> bool:
    return r.get("decision") == "APPROVE" and r.get("estimate") is not None


def covers(r: dict[str, Any]) -> bool:
    return r.get("estimate") is not None and r["lo"] <= r["published"] <= r["hi"]


def justified(r: dict[str, Any], case: dict[str, Any]) -> bool:
    """A refusal names a problem of the case: one of PROBLEMS found both in the reason and in the case's notes."""
    reason = " ".join([r.get("reason") or "", *r.get("blockers", [])]).lower()
    known = " ".join([str(case.get("pitfalls") or ""), str(case.get("reproduction") or "")]).lower()
    if any(any(w in reason for w in words) and any(w in known for w in words) for words in PROBLEMS.values()):
        return True
    if not any(d in reason for d in COLUMN_DOUBTS):
        return False
    pitfalls = set(re.findall(r"[a-z_][a-z0-9_]*", str(case.get("pitfalls") or "").lower()))
    named = set(re.findall(r"'?([a-z_][a-z0-9_]*)'? (?:may be measured|imputed for)", reason))
    named |= set(re.findall(r"values of '([a-z_][a-z0-9_]*)'", reason))
    found = r"most related to it: ([^)]*)\)|with or without ([^;]*), whose timing|the learned graph puts ([^;]*?) after"
    for groups in re.findall(found, reason):
        named |= {c.strip() for c in next((g for g in groups if g), "").split(",") if c.strip()}
    return bool(named & pitfalls)


def outcome_of(r: dict[str, Any], case: dict[str, Any]) -> str:
    if r.get("error"):
        return "crash"
    if approved(r):
        return "covered" if covers(r) else "WRONG & APPROVED"
    return "refused (justified)" if justified(r, case) else "refused"


def table(rows: list[dict[str, Any]], cases: dict[str, dict[str, Any]]) -> str:
    head = "| case | published (SE) | estimate [95% CI] | decision | result | distance (SEs) |"
    lines = [head, "|---|---:|---|---|---|---:|"]
    for r in rows:
        case = cases[r["id"]]
        est = "—" if r.get("estimate") is None else f"{r['estimate']:.4g} [{r['lo']:.4g}, {r['hi']:.4g}]"
        dist = "—" if r.get("estimate") is None else f"{abs(r['estimate'] - r['published']) / r['published_se']:.1f}"
        decision = r.get("decision") or "—"
        if r.get("limit") and decision != "APPROVE":
            decision += " (limit)"
        lines.append(
            f"| {r['id']} | {r['published']:.4g} ({r['published_se']:.3g}) | {est} | {decision} | "
            f"{outcome_of(r, case)} | {dist} |"
        )
    return "\n".join(lines)


def summary(rows: list[dict[str, Any]], cases: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| design | cases | covered & approved | wrong & approved | refused (justified) | crashes | median rel. error |"
    ]
    lines.append("|---|---:|---:|---:|---:|---:|---:|")
    designs = sorted({r["design"] for r in rows})
    for name, sub in [*[(d, [r for r in rows if r["design"] == d]) for d in designs], ("**overall**", rows)]:
        kinds = [outcome_of(r, cases[r["id"]]) for r in sub]
        rel = [abs(r["estimate"] - r["published"]) / abs(r["published"]) for r in sub if r.get("estimate") is not None]
        refused = sum(k.startswith("refused") for k in kinds)
        lines.append(
            f"| {name} | {len(sub)} | {kinds.count('covered')} | {kinds.count('WRONG & APPROVED')} | "
            f"{refused} ({kinds.count('refused (justified)')}) | {kinds.count('crash')} | "
            f"{statistics.median(rel):.0%} |"
            if rel
            else f"| {name} | {len(sub)} | 0 | 0 | {refused} | {kinds.count('crash')} | — |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", help="comma-separated case ids or prefixes (iv04,rd01)")
    parser.add_argument("--jobs", type=int, default=2, help="cases run at once (default 2)")
    parser.add_argument("--notebook", action="store_true", help="keep the recipe's notebook step")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per case before it counts as a crash")
    parser.add_argument("--out", help="append each case's result to this JSON-lines file")
    parser.add_argument("--keep", help="keep each case's job folder under this folder (default: deleted)")
    parser.add_argument("--from-log", help="print the tables of a JSON-lines file instead of running")
    parser.add_argument(
        "--controls",
        choices=["recipe", "paper"],
        default="recipe",
        help="recipe: the recipe chooses the controls (default); paper: each case's paper_controls via --controls",
    )
    args = parser.parse_args(argv)
    if not CASES.exists():
        print(f"bench_realcases: {CASES} not found (the shared datasets sit beside the checkout)", file=sys.stderr)
        return 2
    cases = {c["id"]: c for c in load_cases()}
    if args.from_log:
        rows = [json.loads(ln) for ln in Path(args.from_log).read_text(encoding="utf-8").splitlines() if ln.strip()]
    else:
        chosen = load_cases(set(args.cases.split(",")) if args.cases else None)
        rows = []
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            for row in pool.map(lambda c: run_case(c, args.notebook, args.timeout, args.keep, args.controls), chosen):
                rows.append(row)
                print(f"{row['id']}: {outcome_of(row, cases[row['id']])} ({row.get('seconds', 0):.0f} s)", flush=True)
                if args.out:
                    with open(args.out, "a", encoding="utf-8") as fh:
                        fh.write(json.dumps(row) + "\n")
    order = list(cases)
    rows.sort(key=lambda r: order.index(r["id"]))
    print()
    print(table(rows, cases))
    print()
    print(summary(rows, cases))
    broken = [f"{r['id']}: {b}" for r in rows for b in r.get("broken") or []]
    print(f"\nbroken estimates (non-finite or zero-width, any estimate of any case): {len(broken)}")
    for line in broken:
        print(f"- {line}")
    for r in rows:
        if r.get("error") or not approved(r):
            said = str(r.get("error") or r.get("reason"))
            print(f"- {r['id']}: {said if len(said) <= 600 else said[:600] + ' ...'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
