"""Helpers the ask agents share: the first dataset, follow-ups, causal questions, the model.

Agent modules do not import each other; what two of them need lives here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from whyflow.ask.state import AskDataset, ChatMessage
from whyflow.ask.tools.wording import NEGATIONS

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "CAUSAL_RECIPE",
    "CHART_SUFFIX",
    "causal_pair",
    "columns_in",
    "control_column",
    "control_phrases",
    "negated_causal_line",
    "unread_causal_line",
    "first_aliases",
    "first_frame",
    "is_vega_lite",
    "llm_json",
    "llm_text",
    "resolve_follow_up",
    "result_text",
]

CAUSAL_RECIPE = "causal_analysis"
"""The built-in recipe a causal question runs as a nested job (``ctx.run_recipe`` takes a name or a path)."""
CHART_SUFFIX = ".svg"
M = TypeVar("M", bound=BaseModel)


@lru_cache(maxsize=4)
def _read(path: str, mtime: float) -> pd.DataFrame:
    from whyflow.runtime.data import read_table

    return read_table(path)


def first_frame(datasets: dict[str, AskDataset]) -> pd.DataFrame:
    """The first dataset (the ``data`` view) as a DataFrame (cached per file version)."""
    ds = next(iter(datasets.values()))
    return _read(ds.local_path, Path(ds.local_path).stat().st_mtime)


def first_aliases(datasets: dict[str, AskDataset]) -> dict[str, list[str]]:
    """What the description calls the first dataset's columns (the frame :func:`first_frame` reads)."""
    return next(iter(datasets.values())).aliases


# ---- follow-ups --------------------------------------------------------------------------------
_FOLLOW = re.compile(r"^\s*(?:and\s+)?(?:now|then|also|what about|how about|same|and)\b[\s,:]*(.*)$", re.I)
_BY = re.compile(r"\b(by|per|for each|grouped by)\s+[\w ]+?(?=$|[?.,]| as | in | with | rounded)", re.I)


def resolve_follow_up(question: str, messages: list[ChatMessage]) -> str:
    """Rewrite a follow-up ("now by year") as a full question using the previous user question.

    A question that does not start like a follow-up, or a conversation with no earlier
    question, is returned unchanged.
    """
    previous = [m.data.get("resolved") or m.content for m in messages if m.role == "user"]
    match = _FOLLOW.match(question)
    if not previous or not match:
        return question
    last, rest = str(previous[-1]).strip().rstrip("?. "), match.group(1).strip().rstrip("?. ")
    if not rest:
        return last
    by = _BY.match(rest)
    if by:
        if _BY.search(last):
            return _BY.sub(rest, last, count=1)
        return f"{last} {rest}"
    new_stat, old_stat = _STAT.search(rest), _STAT.search(last)
    if new_stat and old_stat and len(rest.split()) <= 4:  # "what about the median?"
        return last[: old_stat.start()] + new_stat.group(0).lower() + last[old_stat.end() :]
    return f"{last}, {rest}"


_STAT = re.compile(
    r"\b(mean|average|median|sum|total|maximum|minimum|max|min|standard deviation|std|variance|count)\b", re.I
)


# ---- causal questions ------------------------------------------------------------------------
_CAUSAL = (
    re.compile(
        r"\b(?:causal\s+)?(?:effect|impact|influence)\s+of\s+(?:the\s+)?(.+?)\s+on\s+(?:the\s+)?(.+?)\s*(?:[?.]|$)",
        re.I,
    ),
    re.compile(
        r"\bdoes\s+(?:the\s+)?(.+?)\s+(?:cause|affect|increase|decrease|change|raise|lower)\s+(?:the\s+)?(.+?)\s*(?:[?.]|$)",
        re.I,
    ),
)


_NEGATION = NEGATIONS | {"lack", "lacking", "absence", "neither"}
"""The readers' negations, and the nouns of lacking a thing: a phrase with one is the opposite of the column
it contains ('no high school degree' is not ``degree``), so it is that column only as the column's whole
name (``nodegree``) or its description."""


def _column(text: str, columns: list[str], aliases: Mapping[str, Sequence[str]] | None = None) -> str | None:
    want = re.sub(r"[^a-z0-9]+", "", text.lower())
    for col in columns:
        if re.sub(r"[^a-z0-9]+", "", col.lower()) == want:
            return col
    hits = [] if set(re.findall(r"[a-z0-9]+", text.lower())) & _NEGATION else columns_in(text, columns)
    if hits:
        return hits[0] if len(hits) == 1 else None
    return _described(text, columns, aliases) if aliases else None


def columns_in(text: str, columns: list[str]) -> list[str]:
    """The columns whose whole name is a word of ``text`` ('the age of the mother' holds ``age``)."""
    words = set(re.findall(r"[a-z0-9]+", text.lower()))
    return [c for c in columns if re.sub(r"[^a-z0-9]+", "", c.lower()) in words]


def _described(text: str, columns: list[str], aliases: Mapping[str, Sequence[str]]) -> str | None:
    """The one column whose described phrase the text is ('the new drug' for ``arm``, described as '1 if the
    patient got the new drug'), read as the ask readers read descriptions; None unless every other word of
    the text is a function word (a phrase that says more than the description is not that column)."""
    from whyflow.ask.tools.slots import ColumnInfo, find_columns, tokens
    from whyflow.ask.tools.wording import FUNCTION_WORDS

    infos = [ColumnInfo(name=c, dtype="object", aliases=tuple(aliases.get(c, ()))) for c in columns]
    found = find_columns(text, infos)
    if len(found) != 1 or found[0].via != "alias":
        return None
    words = tokens(text)
    rest = words[: found[0].start] + words[found[0].end :]
    return found[0].column if all(w in FUNCTION_WORDS for w in rest) else None


def _outcome_words(text: str) -> str:
    """The outcome side of an "effect of X on Y" match: ``Y`` ends at a colon that a question whether to adjust
    for a column follows ("Effect of email on payments: should we control for opened?"), which its own reader
    reads; any other clause after a colon stays, so a phrase that says more is not read as a column."""
    head, colon, tail = text.partition(":")
    return head.strip() if colon and control_phrases(tail) else text.strip()


def _causal_sides(question: str) -> tuple[str, str] | None:
    """The words of an "effect of X on Y" question that stand for its treatment and outcome, resolved or not."""
    match = _CAUSAL[0].search(question)
    return (match.group(1).strip(), _outcome_words(match.group(2))) if match else None


def unread_causal_line(question: str, columns: list[str], aliases: Mapping[str, Sequence[str]] | None) -> str | None:
    """Which side of an "effect of X on Y" question names no column, in words (None when it is no such question)."""
    sides = _causal_sides(question)
    if sides is None:
        return None
    unread = [f"'{w}'" for w in sides if _column(w, columns, aliases) is None]
    if not unread:
        return None
    shown = ", ".join(columns[:12]) + (f" and {len(columns) - 12} more" if len(columns) > 12 else "")
    which = f"{unread[0]} names no" if len(unread) == 1 else f"neither {unread[0]} nor {unread[1]} names a"
    return (
        f"the question asks for the effect of '{sides[0]}' on '{sides[1]}', but {which} column of the data "
        f"({shown}): name the columns ('What is the effect of {columns[0]} on …?') or say what they hold with "
        "--describe"
    )


def negated_causal_line(
    question: str, columns: list[str], aliases: Mapping[str, Sequence[str]] | None = None
) -> str | None:
    """Why an "effect of X on Y" question whose side negates a column ("the effect of not having training")
    gets no number: that effect is the column's effect turned around, in words; None for any other question."""
    sides = _causal_sides(question)
    if sides is None:
        return None
    for side in sides:
        named = columns_in(side, columns)
        if (
            len(named) == 1
            and _column(side, columns, aliases) is None
            and set(re.findall(r"[a-z0-9]+", side.lower())) & _NEGATION
        ):
            return (
                f"'{side}' is the opposite of the column '{named[0]}', not that column: ask for the effect of "
                f"'{named[0]}' itself (the effect of its absence is that effect with the sign turned around)"
            )
    return None


def causal_pair(
    question: str, columns: list[str], aliases: Mapping[str, Sequence[str]] | None = None
) -> tuple[str, str] | None:
    """``(treatment, outcome)`` if the question asks for a causal effect between two columns.

    Each side is a column's name, or a phrase the dataset's description gives for one column
    (``aliases``, by column name).
    """
    for pattern in _CAUSAL:
        match = pattern.search(question)
        if match:
            t, y = _column(match.group(1), columns, aliases), _column(_outcome_words(match.group(2)), columns, aliases)
            if t and y and t != y:
                return t, y
    return None


_CONTROL = (
    re.compile(
        r"\b(?:control(?:ling)?|adjust(?:ing)?|condition(?:ing)?)\s+(?:for|on)\s+(?:the\s+)?"
        r"(['\"`]?)([\w. -]+?)\1(?:\s+(?:variable|column|covariate))?(?:\s+(?:as\s+well|too|also))?\s*(?:[?.,;]|$)",
        re.I,
    ),
    re.compile(
        r"\b(?:include|add|use|keep)\s+(?:the\s+)?(['\"`]?)([\w. -]+?)\1(?:\s+(?:variable|column))?\s+"
        r"(?:as\s+an?\s+|in\s+the\s+)(?:control|covariate|confounder|adjustment|regression)",
        re.I,
    ),
)


def control_phrases(question: str) -> list[str]:
    """The words a question asks whether to adjust for ("Should we control for the weather?" gives
    'weather'), in the order they appear; a column or not."""
    found = [(m.start(), m.group(2).strip()) for pattern in _CONTROL for m in pattern.finditer(question)]
    return [phrase for _, phrase in sorted(found) if phrase]


def control_column(question: str, columns: list[str], aliases: Mapping[str, Sequence[str]] | None = None) -> str | None:
    """The column a question asks whether to adjust for ("Should we control for 'opened'?"), or None."""
    for phrase in control_phrases(question):
        col = _column(phrase, columns, aliases)
        if col is not None:
            return col
    return None


# ---- results, charts --------------------------------------------------------------------------
def is_vega_lite(value: Any) -> bool:
    """Whether a result is a Vega-Lite chart spec."""
    if not isinstance(value, dict):
        return False
    schema = str(value.get("$schema", ""))
    return "vega-lite" in schema or ("mark" in value and "encoding" in value)


def result_text(result: Any, limit: int = 3000) -> str:
    """A result as compact text for a prompt or a trace."""
    try:
        text = json.dumps(result, default=str)
    except (TypeError, ValueError):
        text = str(result)
    return text if len(text) <= limit else text[:limit] + f"... [{len(text)} chars]"


# ---- the model -------------------------------------------------------------------------------
def _messages(system: str, user: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def llm_text(llm: Any, system: str, user: str, purpose: str = "ask") -> str | None:
    """A plain-text reply from ``ctx.llm`` (the LLM layer), or None when it failed."""
    reply = llm.text(_messages(system, user), purpose=purpose)
    return str(reply).strip() if reply else None


def llm_json(llm: Any, system: str, user: str, model: type[M], purpose: str = "ask") -> M | None:
    """A reply validated as ``model`` (structured output), or None when the model gave none."""
    result: M | None = llm.structured(_messages(system, user), model, purpose=purpose)
    return result
