"""Ask-the-data benchmark: accuracy by kind of question and median time, in deterministic mode.

Each question of ``benchmarks/ask_questions.yaml`` goes through the same path as the
deterministic ask recipe: retrieve and fill a worked example (``whyflow.ask.tools.retrieval``), run
the filled code in the sandbox (``whyflow.runtime.sandbox.run.run_code``), and write the answer in the
form the question asks for. The expected answer is computed here, independently, with pandas
and scipy from the expression in the YAML — never typed in by hand. With ``--via cli`` the
questions also go through ``whyflow ask`` (when that command exists).

    .venv/bin/python benchmarks/bench_ask.py                 # all questions
    .venv/bin/python benchmarks/bench_ask.py --only test     # one kind
    .venv/bin/python benchmarks/bench_ask.py --limit 10 -v   # a quick look, with every answer

Prints one line per question (with -v), then accuracy by kind, the single-step accuracy (the
issue's target: ≥ 80%), crashes, and the median seconds per question.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from whyflow.ask.tools.charts import validate_spec  # noqa: E402
from whyflow.ask.tools.errors import ToolError  # noqa: E402
from whyflow.ask.tools.retrieval import FilledPlan, explain, fill  # noqa: E402
from whyflow.ask.tools.slots import describe_columns  # noqa: E402
from whyflow.runtime.data import read_table  # noqa: E402
from whyflow.runtime.sandbox.run import ExecutionResult, Figure, run_code  # noqa: E402

QUESTIONS = Path(__file__).with_name("ask_questions.yaml")
REL_TOL = 1e-6


def generate(name: str, folder: Path) -> Path:
    """Write a seeded synthetic dataset (``sales`` or ``staff``) as CSV and return its path."""
    rng = np.random.default_rng(7)
    if name == "sales":
        n = 600
        region = rng.choice(["North", "South", "East", "West"], n)
        product = rng.choice(["A", "B", "C"], n, p=[0.5, 0.3, 0.2])
        price = np.round(rng.normal(20, 5, n) + (product == "C") * 6, 2)
        quantity = rng.poisson(5, n) + 1
        year = rng.integers(2018, 2024, n)
        revenue = np.round(price * quantity * (1 + 0.03 * (year - 2018)) + (region == "North") * 15, 2)
        frame = pd.DataFrame(
            {
                "region": region,
                "product": product,
                "price": price,
                "quantity": quantity,
                "year": year,
                "revenue": revenue,
            }
        )
        frame.loc[rng.random(n) < 0.05, "price"] = np.nan
    elif name == "staff":
        n = 400
        department = rng.choice(["Sales", "Engineering", "Support", "HR"], n)
        experience = rng.integers(0, 30, n)
        age = 22 + experience + rng.integers(0, 10, n)
        gender = rng.choice(["female", "male"], n, p=[0.45, 0.55])
        workplace = rng.choice(["remote", "office"], n)
        base = pd.Series(department).map({"Sales": 50, "Engineering": 75, "Support": 42, "HR": 48}).to_numpy()
        salary = np.round((base + 1.2 * experience + rng.normal(0, 8, n) + (workplace == "remote") * 3) * 1000, 0)
        frame = pd.DataFrame(
            {
                "department": department,
                "gender": gender,
                "age": age,
                "experience": experience,
                "workplace": workplace,
                "salary": salary,
            }
        )
    else:
        raise ValueError(f"no generator named {name!r}")
    path = folder / f"{name}.csv"
    frame.to_csv(path, index=False)
    return path


def _close(got: Any, want: Any) -> bool:
    """Numbers equal to a relative 1e-6; anything else equal as stripped text."""
    try:
        g, w = float(got), float(want)
    except (TypeError, ValueError):
        return str(got).strip().lower() == str(want).strip().lower()
    if math.isnan(w):
        return math.isnan(g)
    return math.isclose(g, w, rel_tol=REL_TOL, abs_tol=1e-9)


def _key(value: Any) -> str:
    """A group label as comparable text (1, 1.0 and '1' are the same group)."""
    try:
        f = float(value)
        return str(int(f)) if f.is_integer() else repr(f)
    except (TypeError, ValueError):
        return str(value).strip()


def grade(
    expect: dict[str, Any], df: pd.DataFrame, answered: bool, run: ExecutionResult | None, answer: str
) -> tuple[bool, str]:
    """Whether the answer matches the independently computed expectation, and why not."""
    scope = {"df": df, "pd": pd, "np": np, "stats": stats}
    if expect.get("refuse"):
        return not answered, "answered a question it should have refused" if answered else ""
    if not answered or run is None:
        return False, "no example fitted (refused)"
    if not run.ok:
        return False, f"code failed: {run.error}"
    if "tokens" in expect:
        want = eval(expect["tokens"], scope)  # noqa: S307 - the benchmark's own expression
        return answer.strip() == want, f"answer {answer!r} != {want!r}"
    if "chart_rows" in expect:
        if not run.figures or run.figures[0].spec is None:
            return False, "no Vega-Lite figure"
        try:
            spec = validate_spec(run.figures[0].spec)
        except ToolError as exc:
            return False, f"invalid chart: {exc.reason}"
        rows, want = len(spec["data"]["values"]), int(eval(expect["chart_rows"], scope))  # noqa: S307
        return rows == want, f"chart has {rows} rows, expected {want}"
    if "table" in expect:
        return _grade_table(eval(expect["table"], scope), run.result)  # noqa: S307
    if "list" in expect:
        want_list = [str(x) for x in eval(expect["list"], scope)]  # noqa: S307
        got = [str(x) for x in run.result] if isinstance(run.result, list) else run.result
        return got == want_list, f"list {got} != {want_list}"
    want = eval(expect["value"], scope)  # noqa: S307
    got = run.result.get(expect["key"]) if "key" in expect and isinstance(run.result, dict) else run.result
    if not _close(got, want):
        return False, f"result {got!r} != expected {want!r}"
    if "decimals" in expect:
        shown = f"{float(want):.{expect['decimals']}f}"
        return shown in answer, f"answer {answer!r} does not show {shown}"
    return True, ""


def _grade_table(want: pd.Series, result: Any) -> tuple[bool, str]:
    """Every group of the expected Series appears in the result table with the same number."""
    if not isinstance(result, dict) or "rows" not in result:
        return False, f"expected a table, got {type(result).__name__}"
    rows = {_key(r[0]): r for r in result["rows"]}
    for group, value in want.items():
        if pd.isna(value) and _key(group) not in rows:  # a group with no data may be left out
            continue
        row = rows.get(_key(group))
        if row is None:
            return False, f"group {group!r} missing from the table"
        if not any(_close(cell, value) for cell in row[1:] if isinstance(cell, int | float)):
            return False, f"group {group!r}: {row[1:]} has no {value!r}"
    return True, ""


def ask_tools(question: str, path: Path, df: pd.DataFrame) -> tuple[bool, ExecutionResult | None, str]:
    """Deterministic mode through the tools: retrieve + fill, run in the sandbox, format."""
    plan: FilledPlan | None = fill(question, describe_columns(df))
    if plan is None:
        return False, None, "I can't answer this without a model."
    if not plan.needs_code:
        return True, None, plan.answer_template
    run = run_code(plan.code, {"data": path})
    answer = explain(plan, run.result, question) if run.ok else f"error: {run.error}"
    return True, run, answer


def ask_cli(question: str, path: Path) -> tuple[bool, ExecutionResult | None, str]:
    """Ask through ``whyflow ask --llm off`` and read its ``answer.json`` back for grading.

    Returns (answered with code, the result and figure as an ExecutionResult, the answer text).
    A non-zero exit is a crash (raised, so it is counted as one).
    """
    cmd = [sys.executable, "-m", "whyflow.cli.main", "ask", "--data", str(path), question, "--llm", "off"]
    with tempfile.TemporaryDirectory() as out:
        proc = subprocess.run([*cmd, "--output", out], capture_output=True, text=True, cwd=ROOT, timeout=600)
        answer_file = Path(out) / "answer.json"
        if proc.returncode not in (0, 1) or not answer_file.exists():
            raise RuntimeError(f"whyflow ask exited {proc.returncode}: {(proc.stderr or proc.stdout).strip()[-300:]}")
        output = json.loads(answer_file.read_text())
    result = output.get("result")
    if isinstance(result, list) and result and all(isinstance(r, dict) for r in result):
        columns = list(dict.fromkeys(k for r in result for k in r))
        result = {"columns": columns, "rows": [[r.get(c) for c in columns] for r in result]}
    figures = [Figure(kind="vega-lite", spec=output["figure"])] if output.get("figure") else []
    run = ExecutionResult(
        ok=output.get("output_type") != "error", result=result, figures=figures, error=output.get("answer")
    )
    return bool(output.get("code")), run, str(output.get("answer", ""))


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--only", help="run only questions of this kind")
    parser.add_argument("--ids", help="comma-separated question ids to run (e.g. t01,s04)")
    parser.add_argument("--limit", type=int, help="run at most this many questions")
    parser.add_argument("--via", choices=["tools", "cli"], default="tools")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every question and answer")
    args = parser.parse_args(argv)

    spec = yaml.safe_load(args.questions.read_text())
    wanted = set(args.ids.split(",")) if args.ids else None
    questions = [
        q
        for q in spec["questions"]
        if (not args.only or q["kind"] == args.only) and (wanted is None or q["id"] in wanted)
    ]
    questions = questions[: args.limit]
    by_kind: dict[str, list[bool]] = defaultdict(list)
    single: list[bool] = []
    heldout: list[bool] = []
    second: list[bool] = []
    fresh: list[bool] = []
    final: list[bool] = []
    last: list[bool] = []
    newest: list[bool] = []
    times: list[float] = []
    crashes = skipped = 0
    with tempfile.TemporaryDirectory() as tmp:
        paths: dict[str, Path] = {}
        for name, source in spec["datasets"].items():
            path = (
                generate(source["generated"], Path(tmp)) if "generated" in source else (ROOT / source["path"]).resolve()
            )
            if path.exists():
                paths[name] = path
        frames = {name: read_table(path) for name, path in paths.items()}
        for q in questions:
            if q["data"] not in paths:
                skipped += 1
                continue
            started = time.perf_counter()
            try:
                if args.via == "cli":
                    answered, run, answer = ask_cli(q["question"], paths[q["data"]])
                else:
                    answered, run, answer = ask_tools(q["question"], paths[q["data"]], frames[q["data"]])
                ok, why = grade(q["expect"], frames[q["data"]], answered, run, answer)
            except Exception as exc:  # a crash is a finding, counted and shown, never hidden
                crashes += 1
                ok, why, answer = False, f"CRASH {type(exc).__name__}: {exc}", ""
            elapsed = time.perf_counter() - started
            if q["kind"] != "refuse":
                times.append(elapsed)
            by_kind[q["kind"]].append(ok)
            if q.get("single_step"):
                single.append(ok)
            if q.get("heldout"):
                number = int(q["id"][1:])
                batches = ((20, second), (40, heldout), (60, fresh), (80, final), (100, last), (10**6, newest))
                batch = next(marks for limit, marks in batches if number <= limit)
                batch.append(ok)
            if args.verbose or not ok:
                mark = "ok  " if ok else "FAIL"
                print(
                    f"{mark} {q['id']:4} {elapsed:5.2f}s {q['question'][:70]!r} -> {answer[:90]!r} {'' if ok else why[:160]}"
                )
    print(f"\n{'kind':12} {'right':>5} / {'asked':<5} accuracy")
    for kind in sorted(by_kind):
        marks = by_kind[kind]
        print(f"{kind:12} {sum(marks):5} / {len(marks):<5} {sum(marks) / len(marks):6.1%}")
    total = [m for marks in by_kind.values() for m in marks]
    if total:
        print(f"{'all':12} {sum(total):5} / {len(total):<5} {sum(total) / len(total):6.1%}")
    if single:
        print(
            f"single-step questions answered exactly: {sum(single)} / {len(single)} = {sum(single) / len(single):.1%} (target ≥ 80%)"
        )
    if second:
        print(
            f"second batch (h01-h20, 80% on their first run, then fixed): {sum(second)} / {len(second)} = {sum(second) / len(second):.1%}"
        )
    if heldout:
        print(
            f"third batch (h21-h40, 65% on their first run, then fixed): {sum(heldout)} / {len(heldout)} = {sum(heldout) / len(heldout):.1%}"
        )
    if fresh:
        print(
            f"fourth batch (h41-h60, 75% on their first run, three misses fixed): {sum(fresh)} / {len(fresh)} = {sum(fresh) / len(fresh):.1%}"
        )
    if final:
        print(
            f"fifth batch (h61-h80, 18 / 20 on their first run, then fixed): {sum(final)} / {len(final)} = {sum(final) / len(final):.1%}"
        )
    if last:
        print(
            f"sixth batch (h81-h100, 13 / 20 on their first run, then fixed): {sum(last)} / {len(last)} = {sum(last) / len(last):.1%}"
        )
    if newest:
        print(
            f"held-out questions (h101-h120, never tuned on; 16 / 20 on their first run): {sum(newest)} / {len(newest)} = {sum(newest) / len(newest):.1%}"
        )
    if times:
        print(f"median time per question: {statistics.median(times):.2f} s (target ≤ 5 s; mode: {args.via}, no model)")
    print(f"crashes: {crashes}; skipped (dataset not found): {skipped}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
