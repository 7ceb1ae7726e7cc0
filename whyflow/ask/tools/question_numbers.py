"""Numbers in a question: digits (``1,000``, ``-2.5``, ``.5``, ``3rd``, ``40%``) and number words, with where they stand.

Apart from the column reading of :mod:`whyflow.ask.tools.slots`: a number is read the same way
whichever column it will filter or whichever option (``top 5``, ``3 clusters``) it sets.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from whyflow.ask.tools.plain_words import NUMBER_WORDS

__all__ = ["find_numbers", "number_after", "numeric_literal"]

_NUMBER = re.compile(
    r"(?<![\w.])-?\d+(?:,\d{3})*(?:\.\d+)?(?=st\b|nd\b|rd\b|th\b|%|(?!\w|\.\d))|(?<![\w.])-?\.\d+(?![\w.])"
)


def find_numbers(question: str) -> list[tuple[float, int, int]]:
    """Numbers in the question with their character span (digits, '1,000', and the number words)."""
    found = []
    for match in _NUMBER.finditer(question):
        found.append((float(match.group(0).replace(",", "")), match.start(), match.end()))
    for match in re.finditer(r"\b(" + "|".join(NUMBER_WORDS) + r")\b", question.lower()):
        found.append((float(NUMBER_WORDS[match.group(1)]), match.start(), match.end()))
    return sorted(found, key=lambda f: f[1])


def number_after(question: str, cues: Sequence[str], window: int = 24) -> float | None:
    """The first number within ``window`` characters after (or just before) one of the cue words."""
    lower = question.lower()
    numbers = find_numbers(question)
    for cue in cues:
        for match in re.finditer(r"\b" + re.escape(cue.lower()) + r"\b", lower):
            for value, start, end in numbers:
                if match.end() <= start <= match.end() + window or match.start() - 8 <= end <= match.start():
                    return value
    return None


def numeric_literal(value: float) -> Any:
    """An int when the number is whole (so 'top 5' gives 5, not 5.0)."""
    return int(value) if float(value).is_integer() else value
