"""What a dataset's own description calls its columns: the phrases a question may use for them.

A description written for people names a column and says what it holds in a few familiar ways,
each read here for the columns the data has (case-blind, the name bare, quoted, back-ticked or
bold):

- a line or a ``;``-separated item ``NAME: what it holds`` (also ``NAME — …``, ``NAME - …``,
  ``NAME = …``, after a bullet or a number);
- ``'NAME', representing …`` and the like (``NAME, which indicates …``, ``'NAME' is …``);
- ``… what it holds (NAME)``: the phrase before a column's name in brackets, from the last
  clause boundary ('and', 'which', a comma, 'records', ...);
- a metadata file's ``columns.<NAME>.description`` (:func:`metadata_aliases`).

Each phrase is cut to its first clause, without bracketed remarks ('(1 = yes)'). Which words of
a phrase may name the column in a question is the slot matcher's decision
(:func:`whyflow.ask.tools.slots.find_columns`); this module only reads what the text says.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

__all__ = ["column_aliases", "merge_aliases", "metadata_aliases"]

_QUOTE = r"[`'\"‘’“”*]*"
_BULLET = r"^\s*(?:[-*•]|\d+[.)])?\s*"
_SEPARATOR = r"\s*(?::|—|–|=|\s-{1,2}\s)\s*"
_VERBS = (
    r"(?:representing|which represents|that represents|represents|indicating|which indicates|that indicates|"
    r"indicates|denoting|which denotes|denotes|meaning|which means|means|describing|which describes|describes|"
    r"measuring|which measures|measures|recording|which records|giving|which gives|showing|which shows)"
)
_QUOTED_VERBS = r"(?:is|are|holds|contains|gives|stands for|refers to|is the|is a)"
_BOUNDARY = frozenset(
    "and or but while whereas with which that where including includes include contains contain containing "
    "records record recorded has have had is are was were as such like namely called named labelled labeled "
    "gives give given shows show lists list holds hold measures measured denotes denote represents".split()
)
_LEAD_IN = frozenset("the a an column columns variable variables field fields its their".split())
_MAX_WORDS = 12


def column_aliases(text: str, columns: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """The phrases the text uses for each column it describes, in text order (columns it does not
    describe are absent)."""
    found: dict[str, list[str]] = {}
    names = sorted({str(c) for c in columns if str(c).strip()}, key=len, reverse=True)
    for segment in re.split(r"\n|;", text):
        for name in names:
            for phrase in _described(segment, name):
                _add(found, name, phrase)
    return {name: tuple(phrases) for name, phrases in found.items()}


def metadata_aliases(notes: Mapping[str, str], names: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """The aliases a metadata file gives: each ``columns.<NAME>.description`` of a column the data
    has (the key matched case-blind)."""
    lower = {str(n).lower(): str(n) for n in names}
    found: dict[str, list[str]] = {}
    for key, text in notes.items():
        name = lower.get(str(key).lower())
        if name is not None and text:
            _add(found, name, str(text))
    return {name: tuple(phrases) for name, phrases in found.items()}


def merge_aliases(*parts: Mapping[str, Sequence[str]]) -> dict[str, tuple[str, ...]]:
    """The aliases of several readings, each column's phrases in order, without repeats."""
    found: dict[str, list[str]] = {}
    for part in parts:
        for name, phrases in part.items():
            for phrase in phrases:
                _add(found, name, phrase)
    return {name: tuple(phrases) for name, phrases in found.items()}


def _add(found: dict[str, list[str]], name: str, phrase: str) -> None:
    clean = _clause(phrase)
    if clean and clean.lower() != name.lower() and clean.lower() not in (p.lower() for p in found.get(name, [])):
        found.setdefault(name, []).append(clean)


def _described(segment: str, name: str) -> list[str]:
    """The phrases one line or item of the text gives for the column ``name``."""
    n = re.escape(name)
    bare = rf"(?<![\w.]){n}(?![\w])"
    quoted = rf"[`'\"‘“*]+{n}[`'\"’”*]+"
    out: list[str] = []
    for head in re.finditer(rf"(?:{_BULLET}|[:,]\s*|\band\s+){_QUOTE}{n}{_QUOTE}{_SEPARATOR}(.+)$", segment, re.I):
        out.append(head.group(1))
    for pattern in (
        rf"(?:{quoted}|{bare})\s*,?\s*{_VERBS}\s+(.+)",
        rf"{quoted}\s+{_QUOTED_VERBS}\s+(.+)",
    ):
        out += [m.group(1) for m in re.finditer(pattern, segment, re.I)]
    for m in re.finditer(rf"([^(),.;:]+?)\s*\(\s*{_QUOTE}{n}{_QUOTE}\s*\)", segment, re.I):
        out.append(_after_boundary(m.group(1)))
    return out


def _after_boundary(text: str) -> str:
    """The words of a phrase after its last clause boundary: 'The data records the earnings in
    1978' → 'the earnings in 1978'; 'age and whether the person joined' → 'whether the person joined'."""
    words = text.split()
    cut = max((i + 1 for i, w in enumerate(words) if w.lower() in _BOUNDARY), default=0)
    return " ".join(words[cut:])


def _clause(phrase: str) -> str:
    """A phrase cut to its first clause and a dozen words, bracketed remarks and lead-ins off; ''
    for a structured value (``{description: ...}``, a list), which is --metadata's to read."""
    if phrase.lstrip().startswith(("{", "[")):
        return ""
    text = re.sub(r"\([^()]*\)|\[[^\[\]]*\]", " ", phrase)
    text = re.split(r"[.!?](?=\s|$)|[;:]\s|,\s|\s[—–]\s|\s-\s", text.strip(), maxsplit=1)[0]
    words = [w.strip("`'\"‘’“”*") for w in text.split()]
    words = [w for w in words if w]
    while words and words[0].lower() in _LEAD_IN:
        words.pop(0)
    return " ".join(words[:_MAX_WORDS])
