"""Retrieve worked examples by similarity and fill the best one's template from the question.

Retrieval is TF-IDF (scikit-learn) over each example's title, description, questions and tags.
Column mentions are masked with their kind (``numcol``, ``catcol``, ``timecol``) on both sides,
so "average Fare by Sex" and the library's "average {value} by {group}" look alike whatever the
columns are called. :func:`fill` then tries the best few examples in order and keeps the first
whose required slots it can fill from the question and the data's columns (ties broken by how
many of the mentioned columns the example uses). Nothing here runs code: the filled template is
handed to the sandbox by the caller.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from whyflow.ask.tools.answers import OutputFormat, format_answer, parse_output_format
from whyflow.ask.tools.filters import Filter, find_filters
from whyflow.ask.tools.library import COLUMN_SLOTS, Example, get_example, load_examples
from whyflow.ask.tools.question_numbers import number_after, numeric_literal
from whyflow.ask.tools.slots import (
    ColumnInfo,
    Mention,
    as_column_infos,
    find_columns,
    is_group_mention,
    value_mentions,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "ExampleMatch",
    "FilledPlan",
    "CODE_PRELUDE",
    "retrieve",
    "fill",
    "explain",
    "format_answer",
    "parse_output_format",
]

MIN_SCORE = 0.05
_NOT_ANALYSIS = re.compile(
    r"\b(translat\w*|renam\w*|rewrite|write an? |poem|haiku|essay|e-?mail (?:it|this|me|them)|delete|drop the|"
    r"modify|update the|insert|overwrite|export|save (?:it|this|the))",
    re.IGNORECASE,
)
_CHART_WORDS = re.compile(r"\b(plot|chart|graph|histogram|visuali[sz]e|draw|scatter)", re.IGNORECASE)
CODE_PRELUDE = """\
import numpy as np
import pandas as pd

try:
    df
except NameError:
    df = next(iter(datasets.values()))
df = df.copy()


def num(series):
    # Numbers from a column, also when stored as text such as "1,234", "$5" or "12%".
    if not pd.api.types.is_numeric_dtype(series):
        series = series.astype("string").str.replace(r"[,$%\\s]", "", regex=True)
    return pd.to_numeric(series, errors="coerce")


"""


class ExampleMatch(BaseModel):
    """One retrieved example and its similarity to the question (0..1)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    example_id: str
    title: str
    kind: str
    score: float


class FilledPlan(BaseModel):
    """An example's template filled from the question: code for the sandbox and how to answer."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    example_id: str
    title: str
    kind: str
    score: float
    code: str = Field(description="Complete code for the sandbox: prelude, filters, the filled template.")
    params: dict[str, Any]
    filters: list[str] = Field(default_factory=list, description="Row filters read from the question, in words.")
    needs_code: bool
    needs_evaluation: bool
    output: str
    output_format: OutputFormat
    answer_template: str
    caveats: list[str] = Field(default_factory=list)
    alternatives: list[ExampleMatch] = Field(default_factory=list, description="The other examples considered.")


_KIND_TOKEN = {
    "numeric": "numcol",
    "category": "catcol",
    "column": "numcol catcol",
    "datetime": "timecol",
    "integer": "numval",
    "number": "numval",
    "value": "catval",
    "text": "textval",
}


def _example_text(example: Example) -> str:
    """Retrieval text of an example with ``{slot}`` placeholders replaced by kind tokens."""
    from whyflow.ask.tools.slots import tokens

    text = example.text_for_retrieval()
    for name, slot in example.slots.items():
        text = text.replace("{" + name + "}", _KIND_TOKEN[slot.kind])
    return " ".join(tokens(text))  # the same singular lower-case words the question is reduced to


@lru_cache(maxsize=1)
def _index() -> tuple[Any, Any, tuple[Example, ...]]:
    """The fitted TF-IDF vectoriser and the example matrix (built once per process)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    examples = load_examples()
    vectorizer = TfidfVectorizer(
        ngram_range=(1, 2), sublinear_tf=True, stop_words=_STOP_WORDS, token_pattern=r"(?u)\b\w+\b"
    )
    matrix = vectorizer.fit_transform([_example_text(e) for e in examples])
    return vectorizer, matrix, examples


_STOP_WORDS = [
    "the",
    "a",
    "an",
    "of",
    "in",
    "on",
    "is",
    "are",
    "what",
    "me",
    "please",
    "data",
    "dataset",
    "to",
    "for",
    "and",
    "this",
    "that",
    "it",
    "be",
    "do",
    "does",
    "can",
    "you",
    "i",
    "we",
    "our",
    "my",
]


def _masked(question: str, columns: Sequence[ColumnInfo]) -> str:
    """The question with each column mention replaced by its kind token(s)."""
    from whyflow.ask.tools.slots import tokens

    words = tokens(question)
    mentions = find_columns(question, columns)
    by_name = {c.name: c for c in columns}
    out: list[str] = []
    i = 0
    for mention in mentions:
        out.extend(words[i : mention.start])
        info = by_name[mention.column]
        kinds = [
            k for k, ok in (("numcol", info.numeric), ("catcol", info.categorical), ("timecol", info.temporal)) if ok
        ]
        out.extend(kinds)
        i = mention.end
    out.extend(words[i:])
    return " ".join(out)


def retrieve(
    question: str, k: int = 3, columns: Mapping[str, str] | Sequence[ColumnInfo] | pd.DataFrame | None = None
) -> list[ExampleMatch]:
    """The ``k`` examples most similar to the question, best first (scores are cosine similarities).

    With ``columns``, column mentions are masked by kind before comparing (better matches).
    """
    vectorizer, matrix, examples = _index()
    infos = as_column_infos(columns) if columns is not None else []
    text = _masked(question, infos)
    scores = (matrix @ vectorizer.transform([text]).T).toarray().ravel()
    order = sorted(range(len(examples)), key=lambda i: (-scores[i], examples[i].id))[:k]
    return [
        ExampleMatch(
            example_id=examples[i].id, title=examples[i].title, kind=examples[i].kind, score=round(float(scores[i]), 4)
        )
        for i in order
    ]


def fill(
    question: str,
    columns: Mapping[str, str] | Sequence[ColumnInfo] | pd.DataFrame,
    examples: Sequence[ExampleMatch] | None = None,
) -> FilledPlan | None:
    """Fill the best-fitting retrieved example's template from the question, or None.

    ``columns`` is ``{name: dtype}``, ColumnInfo objects, or the DataFrame itself (best: it
    lets category values in the question become filters). None means no example both resembles
    the question (similarity ≥ :data:`MIN_SCORE`) and has all its required slots filled; the
    caller then says it cannot answer without a model and names ``retrieve``'s closest examples.
    """
    if _NOT_ANALYSIS.search(question):  # writing, translating or changing things is no worked example's job
        return None
    infos = as_column_infos(columns)
    question = _normalise(question, infos)
    matches = list(examples) if examples is not None else retrieve(question, k=8, columns=infos)
    named = find_columns(question, infos)
    mentions = sorted([*named, *value_mentions(question, infos, named)], key=lambda m: m.start)
    charty = bool(_CHART_WORDS.search(question))
    valued = _values_named(question, infos)
    for stated in find_filters(
        question, infos, mentions, set()
    ):  # 'with 4 cylinders', 'product B': filters, not groups
        if stated.source in ("count", "value"):
            valued.setdefault(stated.column, 1)
    best: tuple[float, FilledPlan] | None = None
    for match in matches:
        if match.score < MIN_SCORE:
            continue
        example = get_example(match.example_id)
        if not example.fits_intent(question):
            continue
        params = _assign_slots(example, question, infos, mentions, valued)
        if params is None:
            continue
        used_columns = {v for n, v in params.items() if example.slots[n].kind in COLUMN_SLOTS}
        unused = [m for m in mentions if m.column not in used_columns]
        filters = find_filters(question, infos, unused, used_columns)
        filtered = {f.column for f in filters}
        coverage = sum(m.column in used_columns or m.column in filtered for m in mentions) / max(1, len(mentions))
        total = match.score + 0.2 * coverage - (0.15 if charty and example.kind != "chart" else 0.0)
        total += 0.1 * _numbers_read(example, question) - 0.1 * _uncued_groups(example, params, question, mentions)
        total -= 0.15 * _two_groups_of_many(example, params, infos)
        if best is None or total > best[0] + 1e-9:
            plan = _plan(
                example, match, params, filters, question, [m for m in matches if m.example_id != match.example_id]
            )
            best = (total, plan)
    return best[1] if best else None


def _two_groups_of_many(example: Example, params: Mapping[str, Any], infos: Sequence[ColumnInfo]) -> bool:
    """A two-group example (t-test, Mann-Whitney) on a column of 3+ levels without the two named."""
    levels = [name for name, slot in example.slots.items() if slot.kind == "value" and not slot.required]
    if len(levels) < 2 or any(params.get(name) is not None for name in levels):
        return False
    groups = [params.get(name) for name, slot in example.slots.items() if slot.role == "group"]
    by_name = {c.name: c for c in infos}
    return any(g in by_name and (by_name[g].n_unique or 0) > 2 for g in groups)


def _numbers_read(example: Example, question: str) -> int:
    """How many of the example's number slots the question gives a number for ('top 3')."""
    return sum(
        number_after(question, _cues(slot.description)) is not None
        for slot in example.slots.values()
        if slot.kind in ("integer", "number")
    )


def _uncued_groups(example: Example, params: Mapping[str, Any], question: str, mentions: Sequence[Mention]) -> int:
    """Group slots filled with a column the question does not group by (no 'by', 'per', 'each',
    and no comparison such as 'those who got the email versus those who did not')."""
    from whyflow.ask.tools.filters import comparing

    if comparing(question):
        return 0
    count = 0
    for name, slot in example.slots.items():
        if slot.role == "group" and params.get(name) is not None:
            cued = any(m.column == params[name] and is_group_mention(question, m) for m in mentions)
            count += not cued
    return count


def _values_named(question: str, infos: Sequence[ColumnInfo]) -> dict[str, int]:
    """How many distinct values of each column the question names as whole words."""
    from whyflow.ask.tools.slots import split_name

    counts: dict[str, int] = {}
    for info in infos:
        lower = question.lower()
        for word in split_name(info.name):  # 'hotel types' names the column hotel_type, not its value 'Hotel'
            lower = re.sub(r"(?<![a-z0-9])" + re.escape(word) + r"s?(?![a-z0-9])", " ", lower)
        named = {v.strip().lower() for v in info.values if len(v.strip()) >= 2 and not v.strip().isdigit()}
        hits = sum(bool(re.search(r"(?<![a-z0-9])" + re.escape(v) + r"(?![a-z0-9])", lower)) for v in named)
        if hits:
            counts[info.name] = hits
    return counts


_VALUE_ALIASES = {
    "men": "male",
    "man": "male",
    "males": "male",
    "boys": "male",
    "women": "female",
    "woman": "female",
    "females": "female",
    "girls": "female",
}


def _normalise(question: str, infos: Sequence[ColumnInfo]) -> str:
    """Name category values as the data spells them.

    'men'/'women' become 'male'/'female' when a column holds those values, and a word that
    starts a longer value becomes that value ('engineers' → 'Engineering', at most 4 letters
    shorter, 5+ letters long), so filters and groups find it.
    """
    from whyflow.ask.tools.slots import tokens

    values = {v.strip().lower() for info in infos for v in info.values}
    for alias, canonical in _VALUE_ALIASES.items():
        if canonical in values:
            question = re.sub(r"(?<![A-Za-z])" + alias + r"(?![A-Za-z])", canonical, question, flags=re.IGNORECASE)
    single = {v for v in values if v.isalpha() and len(v) >= 5}
    for raw in set(re.findall(r"[A-Za-z]{5,}", question)):
        word = raw.lower()
        stem = tokens(word)[0] if tokens(word) else word
        if word in single or stem in single:
            continue
        longer = sorted(v for v in single if v.startswith(stem) and len(v) - len(stem) <= 4)
        if len(longer) == 1:
            question = re.sub(r"(?<![A-Za-z])" + raw + r"(?![A-Za-z])", longer[0], question)
    return question


def _assign_slots(
    example: Example, question: str, infos: Sequence[ColumnInfo], mentions: Sequence[Mention], valued: Mapping[str, int]
) -> dict[str, Any] | None:
    """Give every slot a value (a column, a number, a category value) or return None."""
    by_name = {c.name: c for c in infos}
    params: dict[str, Any] = {}
    used: set[str] = set()
    order = sorted(example.slots.items(), key=lambda kv: kv[1].role not in ("group", "time"))
    for name, slot in order:
        value: Any = None
        if slot.kind in COLUMN_SLOTS:
            grouped = any(s.role == "group" for s in example.slots.values())
            value = _pick_column(slot.kind, slot.role, question, mentions, by_name, used, valued, grouped)
            if value is not None:
                used.add(value)
        elif slot.kind in ("integer", "number"):
            found = number_after(question, _cues(slot.description))
            value = numeric_literal(found) if found is not None else None
            if slot.kind == "integer" and value is not None:
                value = int(value)
        elif slot.kind == "value":
            value = _pick_value(question, params, example, name, by_name)
        if value is None:
            if slot.required and slot.default is None:
                return None
            value = slot.default
        params[name] = value
    return params


def _cues(description: str) -> list[str]:
    """Cue words for a number slot, written in its description as ``cues: top, largest``."""
    match = re.search(r"cues?:\s*(.+)$", description)
    return [c.strip() for c in match.group(1).split(",")] if match else []


def _fits(kind: str, info: ColumnInfo) -> bool:
    """Whether a column can fill a slot of this kind."""
    return {"numeric": info.numeric, "category": info.categorical, "datetime": info.temporal, "column": True}[kind]


def _pick_column(
    kind: str,
    role: str,
    question: str,
    mentions: Sequence[Mention],
    by_name: Mapping[str, ColumnInfo],
    used: set[str],
    valued: Mapping[str, int],
    grouped: bool = True,
) -> str | None:
    """The first unused mentioned column that fits the slot, preferring grouping cues for groups.

    A group slot takes a column the question groups by ('by', 'per', 'for each' before it, any
    type), else a categorical column — but not one with exactly one of its values named ('in the
    North region' filters; it does not group).
    """
    free = [m for m in mentions if m.column not in used and _fits(kind, by_name[m.column])]
    if kind == "datetime" and not free:  # 'over time' in data with one time column means that column
        times = [name for name, info in by_name.items() if info.temporal and name not in used]
        return times[0] if len(times) == 1 else None
    if role == "group":
        cued = [m for m in mentions if m.column not in used and kind != "datetime" and is_group_mention(question, m)]
        free = cued or [m for m in free if by_name[m.column].categorical and valued.get(m.column, 0) != 1]
    elif role == "time":
        timed = [m for m in free if by_name[m.column].temporal]
        free = timed or free
    elif grouped:  # 'mean fare by class': the value slot is not the column after 'by'
        uncued = [m for m in free if not is_group_mention(question, m)]
        free = uncued or free
    exact = [m for m in free if m.via != "partial"]  # 'standard deviation' is not the column 'Standard Error'
    free = exact or free
    return free[0].column if free else None


def _pick_value(
    question: str, params: Mapping[str, Any], example: Example, name: str, by_name: Mapping[str, ColumnInfo]
) -> str | None:
    """A category value of the example's column slot named in the question, in question order, not yet used."""
    lower = question.lower()
    taken = {str(v).lower() for k, v in params.items() if example.slots[k].kind == "value" and v is not None}
    for other, slot in example.slots.items():
        if other == name or slot.kind not in COLUMN_SLOTS or other not in params:
            continue
        info = by_name.get(str(params[other]))
        found = []
        for value in info.values if info else ():
            v = value.strip().lower()
            hit = re.search(r"(?<![a-z0-9])" + re.escape(v) + r"(?![a-z0-9])", lower) if v else None
            if hit and v not in taken:
                found.append((hit.start(), value))
        if found:
            return min(found)[1]
    return None


def _plan(
    example: Example,
    match: ExampleMatch,
    params: dict[str, Any],
    filters: list[Filter],
    question: str,
    others: list[ExampleMatch],
) -> FilledPlan:
    """Assemble the FilledPlan: prelude, filters and the filled template."""
    literal = {k: repr(v) for k, v in params.items()}
    body = string.Template(example.code).substitute(literal)
    imports = "from scipy import stats\n" if "stats." in body else ""
    code = imports + CODE_PRELUDE + "".join(f.code() + "\n" for f in filters) + "\n" + body.strip() + "\n"
    words = {k: str(v) for k, v in params.items()}
    sentence = _safe_format(example.answer, words)
    caveats = list(example.caveats)
    if filters:
        caveats.append("rows kept: " + "; ".join(f.describe() for f in filters))
    return FilledPlan(
        example_id=example.id,
        title=example.title,
        kind=example.kind,
        score=match.score,
        code=code,
        params=params,
        filters=[f.describe() for f in filters],
        needs_code=example.needs_code,
        needs_evaluation=example.needs_evaluation,
        output=example.output,
        output_format=parse_output_format(question),
        answer_template=sentence,
        caveats=caveats,
        alternatives=others[:3],
    )


def _safe_format(template: str, words: Mapping[str, str]) -> str:
    """Fill ``{slot}`` names in a sentence, leaving ``{result...}`` for after the run."""
    return re.sub(r"\{([a-z_]+)\}", lambda m: words.get(m.group(1), m.group(0)), template)


def explain(plan: FilledPlan, result: Any, question: str = "") -> str:
    """The answer sentence for a plan whose code ran and returned ``result``."""
    return format_answer(question, result, plan.output_format, template=plan.answer_template)
