"""Generated plain questions (benchmarks/plain_question_gen.py): a seeded sample over six datasets,
gold by pandas, through the parser and its computation. No question may get a wrong number; the
answered share is printed (the full 2,400 run is benchmarks/bench_plain_questions.py)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import pandas as pd
import pytest

from benchmarks.plain_question_gen import SHARED, datasets, frame, generate, judge
from whyflow.ask.tools.plain_ops import answer_plain
from whyflow.ask.tools.plain_questions import parse_plain


def _textbook_value(text: str, df: pd.DataFrame) -> float | None:
    from whyflow.ask.tools.plain_spec import PlainSpec
    from whyflow.ask.tools.textbook_ops import answer_textbook
    from whyflow.ask.tools.textbook_prompt import split_prompt
    from whyflow.ask.tools.textbook_questions import parse_textbook

    parsed = parse_textbook(split_prompt(text), df)
    if parsed is None or parsed.spec is None:
        return None
    spec = parsed.spec.model_dump(mode="json")
    return float((answer_plain if isinstance(parsed.spec, PlainSpec) else answer_textbook)(df, spec)["value"])


def _tally(items: Iterable[tuple[Any, pd.DataFrame, str]]) -> tuple[Counter[str], list[tuple[Any, ...]]]:
    """Each generated (question, frame, prompt) answered as the planner's textbook pass does and judged
    against its gold: the outcomes counted, and the wrong ones with what was asked and given."""
    outcomes: Counter[str] = Counter()
    wrong = []
    for q, df, prompt in items:
        value = _textbook_value(prompt, df)
        outcome = judge(q, value)
        outcomes[outcome] += 1
        if outcome == "wrong":
            wrong.append((prompt, list(df.columns), q.gold, value))
    return outcomes, wrong


def test_generated_questions_get_no_wrong_number() -> None:
    if not (SHARED / "datasets" / "public").is_dir():  # CI has ../shared beside the clone; a bare copy may not
        pytest.skip("the shared datasets are not beside this checkout")
    paths = {d.name: d.path for d in datasets()}
    questions = generate(300, seed=11)
    assert len({q.dataset for q in questions}) >= 5
    outcomes: Counter[str] = Counter()
    wrong = []
    for q in questions:
        df = frame(paths[q.dataset])
        value = _textbook_value(q.text, df)  # the planner tries the textbook classes first
        parsed = parse_plain(q.text, df) if value is None else None
        if parsed is not None and parsed.spec is not None:
            value = float(answer_plain(df, parsed.spec.model_dump(mode="json"))["value"])
        outcome = judge(q, value)
        outcomes[outcome] += 1
        if outcome == "wrong":
            wrong.append((q.dataset, q.text, q.gold, value))
    print(f"generated: {dict(outcomes)}; answered {outcomes['right'] / len(questions):.0%}")
    assert not wrong, wrong[:5]
    assert outcomes["right"] >= len(questions) // 2  # the structures read are read, not all declined


def test_generated_textbook_questions_get_no_wrong_number() -> None:
    """Textbook questions (a variable's type, independence, a stated chi-square, disjoint events,
    a conditional probability) over ten two-category datasets, golds by statsmodels and pandas."""
    from benchmarks.textbook_question_gen import generate_textbook

    folder = SHARED / "datasets" / "public" / "qrdata2"
    if not folder.is_dir():
        pytest.skip("the shared datasets are not beside this checkout")
    questions = generate_textbook(60, seed=5)
    assert len({q.dataset for q, _ in questions}) >= 5
    outcomes, wrong = _tally((q, frame(folder / q.dataset), prompt) for q, prompt in questions)
    print(f"generated textbook: {dict(outcomes)}")
    assert not wrong, wrong[:5]
    assert outcomes["right"] >= len(questions) // 2


def test_generated_paired_difference_questions_get_no_wrong_number() -> None:
    """'No difference in the average <measure> in <A> and <B>' on frames holding one or two
    measures taken twice on the same rows, golds by statsmodels; a measure the question does not
    name among two, or one the frame lacks, must get no number; the same over two groups of one
    column is Welch's two-sample t-test."""
    from benchmarks.textbook_means_gen import generate_paired, generate_two_sample

    outcomes, wrong = _tally(generate_paired(40, seed=2) + generate_two_sample(30, seed=2))
    print(f"generated paired: {dict(outcomes)}")
    assert not wrong, wrong[:5]
    assert outcomes["right"] >= 40 and outcomes["declined"] >= 8


def test_generated_quartile_questions_get_no_wrong_number() -> None:
    """A numeric column's median, quartiles and IQR, the column named by words its name holds;
    golds by statistics.quantiles; words two names hold, or none, must get no number."""
    from benchmarks.textbook_quartiles_gen import generate_quartiles

    outcomes, wrong = _tally(generate_quartiles(60, seed=4))
    print(f"generated quartiles: {dict(outcomes)}")
    assert not wrong, wrong[:5]
    assert outcomes["right"] >= 30 and outcomes["declined"] >= 5


def test_generated_distribution_proportion_draw_and_expected_count_questions_get_no_wrong_number() -> None:
    """A z-score, a fitted distribution's parameter, the one-sample z-test of a proportion, the
    binomial probability of k draws and a cell's expected count under independence, golds by scipy
    and statsmodels; an absent column, a stated distribution, more hits than draws or an expected
    count without its hypothesis must get no number."""
    from benchmarks.textbook_distributions_gen import generate_distributions

    outcomes, wrong = _tally(generate_distributions(80, seed=6))
    print(f"generated distributions: {dict(outcomes)}")
    assert not wrong, wrong[:5]
    assert outcomes["right"] >= 50 and outcomes["declined"] >= 5
