"""The deterministic plan of a question and the code of each attempt, shared by the step-by-step
ask agents (question_planner, code_writer) and the ReAct ``data_scientist``.

A follow-up is first rewritten against the conversation; a causal question is routed to the
causal recipe; otherwise the best worked example whose slots the question fills becomes the
plan. A retry tries the next example that fits, since the same template would fail the same way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from whyflow.ask._shared import (
    causal_pair,
    columns_in,
    control_column,
    control_phrases,
    negated_causal_line,
    resolve_follow_up,
    unread_causal_line,
)
from whyflow.ask.state import AskPlan, ChatMessage

if TYPE_CHECKING:
    import pandas as pd

    from whyflow.ask.tools.plain_spec import PlainSpec
    from whyflow.ask.tools.retrieval import FilledPlan
    from whyflow.ask.tools.textbook_spec import TextbookSpec

__all__ = ["deterministic_plan", "plan_question", "attempt_code", "listed_answers", "request_plan"]


def request_plan(question: str, frame: pd.DataFrame) -> AskPlan | None:
    """The plan of a question that lists its answer slots: one computed request per slot
    (None when it lists none, or when no slot can be computed without a model)."""
    from whyflow.ask.tools.answers import OutputFormat, Token
    from whyflow.ask.tools.causal_designs import DesignRequestError
    from whyflow.ask.tools.causal_requests import CausalRequestError, parse_causal
    from whyflow.ask.tools.request_spec import request_code
    from whyflow.ask.tools.requests import parse_requests
    from whyflow.ask.tools.retrieval import FilledPlan

    spec = parse_requests(question, frame)
    sentence = None
    if spec is None:
        try:
            directed = parse_causal(question, frame)
        except (CausalRequestError, DesignRequestError) as exc:
            return AskPlan(
                needs_code=False,
                needs_evaluation=False,
                route="unanswerable",
                reasoning=str(exc),
                parameters={"question": question, "error": str(exc)},
            )
        if directed is None:
            return None
        spec, sentence = directed
    # A stated format is answered slot by slot even when no slot is read: a worked example chosen
    # for the whole question would put its one number (or a definition) where the slot asks for
    # something else; the model, when configured, gets every unread slot instead.
    unknown = [r.slot for r in spec.requests if r.op == "unknown"]
    filled = FilledPlan(
        example_id="requests",
        title="one computation per requested value",
        kind="requests",
        score=1.0,
        code=request_code(spec),
        params={"requests": spec.model_dump(mode="json")},
        needs_code=True,
        needs_evaluation=False,
        output="dict",
        output_format=OutputFormat(
            tokens=() if sentence else tuple(Token(name=r.slot, placeholder=r.slot) for r in spec.requests)
        ),
        answer_template="{result[answer]}" if sentence else "",
        caveats=[f"not computed without a model: {', '.join(unknown)}"] if unknown else [],
    )
    ops = ", ".join(f"{r.slot}={r.op}({', '.join(r.columns)})" for r in spec.requests)
    plan = deterministic_plan(question, filled, [])
    return plan.model_copy(
        update={
            "reasoning": f"{len(spec.requests)} requested values, each computed on its own: {ops}",
            "parameters": {**plan.parameters, "complete": not unknown},
        }
    )


def deterministic_plan(question: str, filled: FilledPlan | None, closest: list[str]) -> AskPlan:
    """The plan for a filled worked example (None: an honest 'unanswerable')."""
    if filled is None:
        return AskPlan(
            needs_code=False,
            needs_evaluation=False,
            route="unanswerable",
            reasoning="no worked example matches the question with every column it needs",
            closest_examples=closest,
            parameters={"question": question},
        )
    return AskPlan(
        needs_code=filled.needs_code,
        needs_evaluation=filled.needs_code and filled.needs_evaluation,
        route="code" if filled.needs_code else "conceptual",
        reasoning=f"worked example '{filled.example_id}' ({filled.title}), similarity {filled.score:.2f}",
        example_id=filled.example_id,
        filled=filled,
        parameters={"question": question},
        closest_examples=closest,
    )


def plan_question(
    question: str,
    messages: list[ChatMessage],
    frame: pd.DataFrame,
    min_score: float = 0.0,
    aliases: Mapping[str, Sequence[str]] | None = None,
) -> tuple[AskPlan, list[Any]]:
    """The deterministic plan and the retrieved nearest examples (for a model's grounding).

    ``aliases`` are the phrases the dataset's description gives for its columns (by column name):
    the question's readers link a word to a column through them as through its name.
    """
    from whyflow.ask.tools.example_words import example_refusal, example_unread
    from whyflow.ask.tools.plain_questions import parse_plain
    from whyflow.ask.tools.plain_spec import PlainSpec
    from whyflow.ask.tools.request_clauses import restriction_sentences
    from whyflow.ask.tools.retrieval import fill, retrieve
    from whyflow.ask.tools.slots import describe_columns
    from whyflow.ask.tools.textbook_prompt import split_prompt
    from whyflow.ask.tools.textbook_questions import parse_textbook
    from whyflow.ask.tools.wording import expand_contractions, understood_line

    question = resolve_follow_up(question, messages)
    requested = request_plan(question, frame)
    if requested is not None:
        return requested, []
    columns = [str(c) for c in frame.columns]
    pair = causal_pair(question, columns, aliases)
    negated = negated_causal_line(question, columns, aliases) if pair is None else None
    if negated is not None:  # "the effect of not having X": X's effect with its sign turned, never X's as asked
        return unread_plan(question, negated, []), []
    words = listed_answers(question)
    judged = control_column(question, columns, aliases) if pair is not None and words else None
    if pair is not None and judged not in (None, *pair) and {w.lower() for w in words} == {"yes", "no"}:
        plan = AskPlan(  # "should we control for 'opened'?": the recipe's own reading of that column
            needs_code=False,
            needs_evaluation=False,
            route="causal",
            reasoning=(
                f"whether to adjust for '{judged}' when estimating the effect of '{pair[0]}' on '{pair[1]}' "
                "(runs the causal recipe and reads its adjustment set)"
            ),
            treatment=pair[0],
            outcome=pair[1],
            parameters={"question": question, "control_column": judged},
        )
        return plan, []
    if pair is not None and words:  # a choice about the design that no estimate gives
        asked = control_phrases(question)
        if judged in pair:
            role = "treatment" if judged == pair[0] else "outcome"
            line = f"the question asks whether to adjust for '{judged}', which is the {role} itself"
        elif asked and judged is None:
            several = columns_in(asked[0], columns)
            names = f"more than one column ({', '.join(several)})" if len(several) > 1 else "no column of the data"
            line = f"the question asks whether to adjust for '{asked[0]}', which names {names}"
        else:
            line = (
                f"the question asks for one of {' or '.join(repr(w) for w in words)}, a judgement about the design "
                f"that the causal recipe's estimate of '{pair[0]}' on '{pair[1]}' does not give"
            )
        return unread_plan(question, line, []), []
    restricted = restriction_sentences(question) if pair is not None else []
    if restricted:  # the causal recipe runs on every row: a restriction to some would be dropped
        line = f"'{restricted[0][:120]}' restricts the rows, which the causal recipe does not do"
        return unread_plan(question, line, []), []
    if pair is not None:
        plan = AskPlan(
            needs_code=False,
            needs_evaluation=False,
            route="causal",
            reasoning=f"a causal question: the effect of '{pair[0]}' on '{pair[1]}' (runs the causal recipe)",
            treatment=pair[0],
            outcome=pair[1],
            parameters={"question": question},
        )
        return plan, []
    prompt = split_prompt(question)
    infos = describe_columns(frame, aliases=aliases)  # the columns as the question's readers see them
    textbook = (
        None
        if re.search(r"@\w+\[|^\s*(?:format|constraints):", question, re.I | re.M)
        else parse_textbook(prompt, frame, columns=infos)
    )
    if textbook is not None and textbook.spec is not None:
        spec = textbook.spec
        return (plain_plan(question, spec) if isinstance(spec, PlainSpec) else textbook_plan(question, spec)), []
    # a question given after its data's description: its own paragraph, the description as context
    plain = (
        parse_plain(prompt.question, frame, context=prompt.context, columns=infos)
        if prompt.context
        else parse_plain(question, frame, columns=infos)
    )
    if plain is not None and plain.spec is not None:
        return plain_plan(question, plain.spec), []
    nearest = retrieve(question, k=3, columns=frame)
    closest = [f"{m.example_id} ({m.title})" for m in nearest]
    filled = fill(question, frame)
    if filled is not None and filled.score < min_score:
        filled = None
    refusal = example_refusal(question, filled, columns) if filled is not None else None
    if refusal is not None:
        return unread_plan(question, refusal, closest), nearest
    if filled is not None:
        placed, missing, text = example_unread(question, filled, frame)
        if missing:  # a word the example does not read: its number would answer another question
            if plain is not None and plain.missing:
                placed, missing, text = plain.placed, plain.missing, expand_contractions(question)
            return unread_plan(question, understood_line(text, placed, missing), closest), nearest
    elif plain is not None and plain.missing:
        line = understood_line(expand_contractions(question), plain.placed, plain.missing)
        return unread_plan(question, line, closest), nearest
    causal = unread_causal_line(question, columns, aliases) if filled is None else None
    if causal is not None:  # an effect whose treatment or outcome the data does not name: say which
        return unread_plan(question, causal, closest), nearest
    return deterministic_plan(question, filled, closest), nearest


_LISTED = re.compile(
    r"\banswer (?:with|by|using)\s+(?:either\s+)?['\"]([^'\"]{1,40})['\"]\s+or\s+['\"]([^'\"]{1,40})['\"]", re.I
)

_YES_OR_NO = re.compile(r"\banswer\s+(?:with\s+)?(?:either\s+)?(yes|no)\s*(?:or|/)\s*(yes|no)\b", re.I)
"""The unquoted form: "Answer yes or no", "answer with yes/no"."""


def listed_answers(question: str) -> list[str]:
    """The words a question says to answer with ("Please answer with 'yes' or 'no'"), or its choices."""
    match = _LISTED.search(question) or _YES_OR_NO.search(question)
    if match:
        return [match.group(1), match.group(2)]
    choices = re.search(r"^\s*Choices:\s*(.+)$", question, re.M)
    return [c.strip() for c in re.split(r"[;,]|\s+or\s+", choices.group(1)) if c.strip()] if choices else []


def unread_plan(question: str, line: str, closest: list[str]) -> AskPlan:
    """The honest 'unanswerable' of a question with words no deterministic routine reads."""
    error = f"{line}, so no number is given (a model reads the rest with --llm on)"
    return AskPlan(
        needs_code=False,
        needs_evaluation=False,
        route="unanswerable",
        reasoning=line,
        closest_examples=closest,
        parameters={"question": question, "error": error, "unread": True},
    )


def plain_plan(question: str, spec: PlainSpec) -> AskPlan:
    """The plan of a plain question every word of which was placed: one computation, its sentence."""
    from whyflow.ask.tools.plain_spec import plain_code

    return _read_plan(question, "plain", f"a {spec.kind}", plain_code(spec), spec)


def textbook_plan(question: str, spec: TextbookSpec) -> AskPlan:
    """The plan of a textbook statistics question every word of which was placed."""
    from whyflow.ask.tools.textbook_spec import textbook_code

    return _read_plan(question, "textbook", f"a textbook {spec.kind}", textbook_code(spec), spec)


def _read_plan(question: str, reader: str, what: str, code: str, spec: PlainSpec | TextbookSpec) -> AskPlan:
    """A question a reader placed every word of: its one program, whose answer is the sentence it prints."""
    from whyflow.ask.tools.answers import OutputFormat
    from whyflow.ask.tools.retrieval import FilledPlan

    filled = FilledPlan(
        example_id=reader,
        title=f"{what} read from the question's words",
        kind="plain",
        score=1.0,
        code=code,
        params={reader: spec.model_dump(mode="json")},
        needs_code=True,
        needs_evaluation=False,
        output="dict",
        output_format=OutputFormat(tokens=()),
        answer_template="{result[answer]}",
    )
    plan = deterministic_plan(question, filled, [])
    reasoning = f"every word read: {what} ({spec.model_dump_json(exclude_defaults=True)})"
    return plan.model_copy(update={"reasoning": reasoning})


def attempt_code(plan: AskPlan, question: str, frame: pd.DataFrame, tried: set[str]) -> tuple[str, str]:
    """The code of the next deterministic attempt and a note: the filled example, then the next
    example that fits and has not been tried (the same code again when none is left)."""
    from whyflow.ask.tools.retrieval import fill

    filled = plan.filled
    if filled is None:
        raise ValueError(f"the plan has no worked example to fill (route {plan.route})")
    code, note = filled.code, f"example '{filled.example_id}'"
    if not tried:
        return code, note
    for match in list(filled.alternatives):
        other = fill(question, frame, examples=[match])
        if other is not None and other.code not in tried:
            return other.code, f"retry with example '{other.example_id}'"
    return code, note + " again (no other example fits)"
