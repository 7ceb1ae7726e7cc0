"""'Should we control for X?' on generated studies whose every column's role is known: right, WRONG, declined.

Each (kind, seed) of ``benchmarks/truth_kinds.py`` listed below is written to a CSV and the causal recipe
runs on it once (``run_nested_recipe``, as ``whyflow ask`` runs it); then every listed column is asked
about in several phrasings, each read by the ask planner and answered by ``causal_answer`` from that
run. The gold is the kind's construction: "no" for a column made from the treatment or the outcome or
an identifier, "yes" for a confounder. A "No." on a "yes" column is WRONG, and so is any "Yes" (the
answerer never gives one); a reply that starts "I can't answer" is declined.

    python benchmarks/bench_control_questions.py              # seeds 1-3
    python benchmarks/bench_control_questions.py --seeds 5 -v
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

GOLD: dict[str, dict[str, str]] = {
    "treatment_copies": {"enrolled": "no", "treated_x1": "no", "x1": "yes", "x2": "yes"},
    "treatment_aliases": {"arm": "no", "untreated": "no", "x1": "yes"},
    "outcome_parts": {"reading": "no", "maths": "no", "science": "no", "x1": "yes"},
    "numeric_identifier": {"firm": "no", "x1": "yes", "x2": "yes"},
    "followup_outcome": {"outcome_followup": "no", "x1": "yes"},
    "ratio_outcome": {"revenue": "no", "x1": "yes", "workers": "yes"},
    "nonlinear_confounding": {"x1": "yes", "x2": "yes"},
}
"""Per kind, a column and the right answer to "should we control for it?" (from the kind's docstring)."""

PHRASES = (
    "We estimate the effect of {t} on {y}. Should we control for the '{x}' variable? Please answer with 'yes' or 'no'.",
    'Effect of {t} on {y}: do we need to adjust for {x}? Answer with "yes" or "no".',
    "What is the effect of {t} on {y}? Should we include {x} as a covariate? Answer with 'yes' or 'no'.",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=3, help="seeds 1..N of every kind")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every wrong and declined reply")
    args = parser.parse_args()

    from benchmarks.bench_askbench import DECLINED, score_qrdata_choice
    from benchmarks.truth_kinds import make
    from whyflow.ask._shared import CAUSAL_RECIPE
    from whyflow.ask.answering import causal_answer
    from whyflow.ask.planning import plan_question
    from whyflow.ask.state import CausalRunResult
    from whyflow.flows.running.runner import run_nested_recipe

    counts: dict[str, Counter[str]] = {}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for kind, columns in GOLD.items():
            for seed in range(1, args.seeds + 1):
                case = make(kind, seed, None)
                t, y = case.args["treatment"], case.args["outcome"]
                data = Path(tmp) / f"{kind}_{seed}.csv"
                case.frame.to_csv(data, index=False)
                run = CausalRunResult.model_validate(
                    run_nested_recipe(CAUSAL_RECIPE, str(data), str(Path(tmp) / f"{kind}_{seed}"), t, y)
                )
                for x, gold in columns.items():
                    for phrase in PHRASES:
                        question = phrase.format(t=t, y=y, x=x)
                        plan, _ = plan_question(question, [], case.frame)
                        if plan.parameters.get("control_column") != x:
                            outcome, reply = "declined", f"(not read: {plan.reasoning[:120]})"
                        else:
                            reply = causal_answer(run, plan).answer
                            outcome = (
                                "declined"
                                if reply.startswith(DECLINED)
                                else ("right" if score_qrdata_choice(reply, gold) else "wrong")
                            )
                        counts.setdefault(kind, Counter())[outcome] += 1
                        if args.verbose and outcome != "right":
                            print(f"{outcome:8s} {kind} s{seed} {x} (gold {gold}): {reply[:160]}")
    total: Counter[str] = Counter()
    print("| kind | right | WRONG | declined |\n|---|---:|---:|---:|")
    for kind, c in counts.items():
        total.update(c)
        print(f"| {kind} | {c['right']} | {c['wrong']} | {c['declined']} |")
    print(f"| **all** | {total['right']} | {total['wrong']} | {total['declined']} |")
    print(
        f"{sum(total.values())} questions, {len(GOLD) * args.seeds} recipe runs, {time.perf_counter() - started:.0f} s"
    )


if __name__ == "__main__":
    main()
