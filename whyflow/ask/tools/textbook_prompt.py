"""A question given with its data's description, split into the parts a reader treats apart: the
description (the paragraphs before the question), the question's own sentences, the answer's
choices and the instructions on how to write the answer ('Please round to the nearest
hundredth', 'Answer with "yes" or "no"').

The instructions are taken off the question (they say how to write the number, not which number),
the choices are kept for the reply, and the description is kept as the context whose words a
question may restate ('these Tampa, FL voters', '24 hours after receiving acupuncture').
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Prompt", "split_prompt"]

_CHOICES = re.compile(r"^\s*choices:\s*(?P<list>.+?)\s*$", re.I | re.M)
_ANSWER_WITH = re.compile(r"(?:please\s+)?answer\s+with\s+(?P<list>(?:\"[^\"]+\"(?:\s*,\s*|\s+or\s+)?)+)\s*\.?", re.I)
_INTEGER = re.compile(r"(?:please\s+)?answer\s+with\s+an\s+integer\s*\.?", re.I)
_ROUND = re.compile(
    r"(?:please\s+)?round\s+(?:it\s+|the\s+answer\s+|your\s+answer\s+)?to\s+"
    r"(?:the\s+nearest\s+(?P<place>integer|whole\s+number|tenth|hundredth|thousandth|ten-thousandth)"
    r"|(?P<decimals>\d+)\s+decimal\s+places?)\s*\.?",
    re.I,
)
_PLACES = {"integer": 0, "whole number": 0, "tenth": 1, "hundredth": 2, "thousandth": 3, "ten-thousandth": 4}


@dataclass(frozen=True)
class Prompt:
    """The parts of a question: ``context`` is '' when the question came alone."""

    context: str
    question: str
    choices: tuple[str, ...] = ()
    decimals: int | None = None


def split_prompt(text: str) -> Prompt:
    """The description, the question (instructions off), its choices and the decimals asked for."""
    choices: tuple[str, ...] = ()
    found = _CHOICES.search(text)
    if found:
        choices = tuple(c.strip() for c in found.group("list").split(",") if c.strip())
        text = text[: found.start()] + text[found.end() :]
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]
    context = "\n\n".join(paragraphs[:-1])
    question = paragraphs[-1] if paragraphs else ""
    decimals = None
    rounding = _ROUND.search(question)
    if rounding:
        place = rounding.group("place")
        decimals = _PLACES[re.sub(r"\s+", " ", place.lower())] if place else int(rounding.group("decimals"))
        question = question[: rounding.start()] + question[rounding.end() :]
    integer = _INTEGER.search(question)
    if integer:
        decimals = 0
        question = question[: integer.start()] + question[integer.end() :]
    listed = _ANSWER_WITH.search(question)
    if listed:
        choices = choices or tuple(re.findall(r"\"([^\"]+)\"", listed.group("list")))
        question = question[: listed.start()] + question[listed.end() :]
    question = re.sub(r"\s+", " ", question).strip()
    return Prompt(context=context, question=question, choices=choices, decimals=decimals)


_WORD = re.compile(r"[A-Za-z][A-Za-z']*|\d+(?:\.\d+)?")


def _key(word: str) -> frozenset[str]:
    from whyflow.ask.tools.wording import roots

    low = word.lower()
    return frozenset({low}) if low[0].isdigit() or len(low) < 4 else roots(low) | {low}


def _name(word: str) -> bool:
    """A capitalised word of four letters or more (or an all-capital one): a proper name."""
    return (
        len(word) >= 3
        and word[0].isupper()
        and (word[1:].islower() or word.isupper())
        and len(word) >= 4
        or (word.isupper() and len(word) >= 3)
    )


def restated(text: str, placed: list[tuple[int, int]], context: str) -> list[tuple[int, int]]:
    """The spans of ``text`` that repeat a phrase of the description: two or more words in a row
    (one of them a content word left unread, none a negation) that stand in the same order in
    ``context``, word by word or by a shared root ('24 hours after receiving acupuncture' where the
    description says '24 hours after patients received acupuncture' gives '24 hours after' and
    'receiving acupuncture'), a proper name the description uses ('Ebola', 'NOAA') or a word of the
    data file's name it cites ('smallpox' of 'the CSV file smallpox.csv'). A single
    common word is never enough: 'died' alone may be the event the question asks about, where a
    repeated phrase or a name is the description's own words."""
    from whyflow.ask.tools.wording import FUNCTION_WORDS, NEGATIONS

    if not context:
        return []
    words = list(_WORD.finditer(text))
    seen = [_key(m.group(0)) for m in _WORD.finditer(context)]
    keys = [_key(m.group(0)) for m in words]
    names = {m.group(0) for m in _WORD.finditer(context) if _name(m.group(0))}
    files = {
        w
        for stem in re.findall(r"([\w-]+)\.(?:csv|tsv|xlsx?|json|parquet)\b", context)
        for w in re.split(r"[_\W]+", stem)
    }
    free = [not any(s <= m.start() and m.end() <= e for s, e in placed) for m in words]
    out: list[tuple[int, int]] = []
    i = 0
    while i < len(words):
        best = 0
        for j in range(len(seen)):
            n = 0
            while i + n < len(words) and j + n < len(seen) and keys[i + n] & seen[j + n]:
                if words[i + n].group(0).lower() in NEGATIONS:
                    break
                n += 1
            best = max(best, n)
        run = range(i, i + best)
        content = any(free[k] and words[k].group(0).lower() not in FUNCTION_WORDS for k in run)
        if best >= 2 and content:
            out.append((words[i].start(), words[i + best - 1].end()))
            i += best
        elif free[i] and i > 0 and ((_name(word := words[i].group(0)) and word in names) or word.lower() in files):
            out.append((words[i].start(), words[i].end()))  # a name the description uses: 'Ebola', smallpox.csv
            i += 1
        else:
            i += 1
    return out
