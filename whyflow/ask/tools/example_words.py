"""The words of a question that a filled worked example reads, and the ones it leaves unread.

A worked example reads its own vocabulary (its title, description, questions and tags: 'mean',
'correlation', 'histogram'), the columns it was filled with and the filters read beside it
(their names, their values, their numbers). Any other content word of the asked sentence was
dropped on the way to the example's number: the question is then not answered without a model.
Sentences that only describe the data (a statement before the question) are context, not asked.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from whyflow.ask.tools.library import COLUMN_SLOTS, get_example
from whyflow.ask.tools.slots import WORD_RE, describe_columns, find_columns, tokens
from whyflow.ask.tools.wording import NEGATIONS, expand_contractions, roots, unread

if TYPE_CHECKING:
    import pandas as pd

    from whyflow.ask.tools.retrieval import FilledPlan

__all__ = ["asked_part", "example_unread"]

_ALIASES = {"male": ("men", "man", "males", "boys"), "female": ("women", "woman", "females", "girls")}


def asked_part(question: str) -> str:
    """The sentences that ask (ending in '?'), or the whole text when none does."""
    sentences = [s for s in re.split(r"(?<=[.!?])\s+|\n+", question.strip()) if s.strip()]
    asked = [s for s in sentences if s.rstrip().endswith("?")]
    return " ".join(asked) if asked else question


def example_unread(
    question: str, filled: FilledPlan, frame: pd.DataFrame
) -> tuple[list[tuple[int, int]], list[str], str]:
    """(placed spans, unread words, the text they index) of the asked part for a filled example."""
    text = expand_contractions(asked_part(question))
    example = get_example(filled.example_id)
    vocabulary = set(tokens(example.text_for_retrieval().lower()))
    vocabulary |= {r for w in vocabulary for r in roots(w)} if vocabulary else set()
    columns = {str(v) for n, v in filled.params.items() if n in example.slots and example.slots[n].kind in COLUMN_SLOTS}
    filters = [f.split(" ") for f in filled.filters]
    columns |= {f[0] for f in filters if f}
    numbers = {float(v) for v in filled.params.values() if isinstance(v, int | float) and not isinstance(v, bool)}
    values = {str(v).strip().lower() for v in filled.params.values() if isinstance(v, str)}
    for parts in filters:
        tail = " ".join(parts[2:]).strip().lower()
        values.add(tail)
        try:
            numbers.add(float(tail))
        except ValueError:
            pass
    values |= {alias for v in list(values) for alias in _ALIASES.get(v, ())}
    negative = any(v in ("0", "0.0", "no", "false", "n") for v in values)
    infos = describe_columns(frame)
    placed: list[tuple[int, int]] = []
    found = list(WORD_RE.finditer(text))
    for m in find_columns(text, infos):
        if m.column in columns and m.end <= len(found):
            placed.append((found[m.start].start(), found[m.end - 1].end()))
    named = list(placed)  # the used columns' own words
    for i, match in enumerate(found):
        word = match.group(0).lower()
        number = _as_number(word)
        if number is not None:
            ok = number in numbers
        elif word in NEGATIONS:  # 'non-smokers' beside 'smokers' names the other group of a used column
            after = found[i + 1] if i + 1 < len(found) else None
            beside = after is not None and (
                any(s <= after.start() and after.end() <= e for s, e in named)
                or any(_singular(after.group(0).lower()) == c.lower() for c in columns)
            )
            ok = negative or word in vocabulary or beside
        elif word in ("number", "amount") and i + 2 < len(found) and found[i + 1].group(0).lower() == "of":
            after = found[i + 2]  # 'the mean number of rings': the column itself
            ok = any(s <= after.start() and after.end() <= e for s, e in named) or bool(roots(word) & vocabulary)
        else:
            ok = word in values or bool(roots(word) & vocabulary) or any(_singular(word) == c.lower() for c in columns)
        if ok:
            placed.append((match.start(), match.end()))
    return placed, unread(text, placed), text


def _as_number(word: str) -> float | None:
    try:
        return float(word)
    except ValueError:
        return None


def _singular(word: str) -> str:
    return tokens(word)[0] if tokens(word) else word
