"""Generated plain questions through the plain-question parser and its computation: right, wrong
and declined counted apart, by kind and by dataset. The bar is **0 wrong**; the answered share is
what the parser reads of wording no benchmark has.

    .venv/bin/python benchmarks/bench_plain_questions.py               # 2,400 seeded questions
    .venv/bin/python benchmarks/bench_plain_questions.py -n 300 --seed 3 -v
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.plain_question_gen import Question, frame, generate, judge  # noqa: E402


def answer(question: Question, path: Path) -> float | None:
    """The number the plain parser computes for the question, or None when it declines."""
    from whyflow.ask.tools.plain_ops import answer_plain
    from whyflow.ask.tools.plain_questions import parse_plain

    df = frame(path)
    parsed = parse_plain(question.text, df)
    if parsed is None or parsed.spec is None:
        return None
    return float(answer_plain(df, parsed.spec.model_dump(mode="json"))["value"])


def main(argv: list[str] | None = None) -> int:
    from benchmarks.plain_question_gen import datasets

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=2400, help="how many questions")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-v", "--verbose", action="store_true", help="print every wrong and declined question")
    args = parser.parse_args(argv)
    paths = {d.name: d.path for d in datasets()}
    questions = generate(args.n, args.seed)
    start = time.perf_counter()
    by_kind: dict[str, Counter[str]] = defaultdict(Counter)
    by_set: dict[str, Counter[str]] = defaultdict(Counter)
    for q in questions:
        value = answer(q, paths[q.dataset])
        outcome = judge(q, value)
        by_kind[q.kind][outcome] += 1
        by_set[q.dataset][outcome] += 1
        if args.verbose and outcome != "right":
            print(f"{outcome:8s} {q.dataset:16s} {q.text!r} gold={q.gold} got={value}")
    total: Counter[str] = sum(by_kind.values(), Counter())
    for title, table in (("by kind", by_kind), ("by dataset", by_set)):
        print(f"{title}:")
        for key in sorted(table):
            c = table[key]
            print(f"  {key:18s} right {c['right']:5d}  wrong {c['wrong']:3d}  declined {c['declined']:5d}")
    n = sum(total.values())
    print(
        f"{n} questions over {len(by_set)} datasets: right {total['right']} ({100 * total['right'] / n:.1f}% answered), "
        f"wrong {total['wrong']}, declined {total['declined']}; {time.perf_counter() - start:.1f}s"
    )
    return 1 if total["wrong"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
