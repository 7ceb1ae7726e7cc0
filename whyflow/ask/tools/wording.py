"""The words of a question: which are function words, which share a root with a column's name,
and which the parse of the question left unread.

A question is answered without a model only when every content word is placed: a column, a
value, an operation, a number or a known function word. :func:`unread` lists the words a parse
did not place, so the reply can say "I understood 'average age' but not 'who did not train'"
instead of computing a number for another question. Roots come from lemminflect (English lemmas
of every part of speech: 'trained' → train, 'earnings' → earning) plus the agent-noun endings
('trainee', 'smoker', 'survivor'), so 'trainees', 'did not train' and 'took the training' all
reach a column named ``training``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

__all__ = [
    "FUNCTION_WORDS",
    "NEGATIONS",
    "POPULATION_NOUNS",
    "expand_contractions",
    "roots",
    "same_root",
    "unread",
    "understood_line",
]

NEGATIONS = frozenset({"not", "no", "non", "never", "without", "nor"})
"""Words that turn a condition around: each one must be read by a condition, never dropped."""

POPULATION_NOUNS = frozenset(
    "people person persons individual individuals passenger passengers customer customers patient patients "
    "participant participants respondent respondents subject subjects row rows record records observation "
    "observations case cases entry entries employee employees worker workers student students member members "
    "user users client clients those ones one everyone everybody anyone group groups sample samples household "
    "households unit units car cars vehicle vehicles country countries company companies product products order "
    "orders transaction transactions item items player players city cities state states applicant applicants "
    "borrower borrowers loan loans account accounts visitor visitors adult adults voter voters juror jurors "
    "seller sellers buyer buyers resident residents".split()
)
"""Nouns that name the rows themselves ('people who ...', 'passengers'): read, and no condition."""

FUNCTION_WORDS = frozenset(
    (
        "a an the of in on at to for by and or is are was were be been being am what which who whom whose that "
        "this these those there their them they it its as do does did done how much many with from than then "
        "into onto among amongst within per each all any some please me us we you i our my your can could would "
        "should will shall may might must tell show give find calculate compute determine report get what's "
        "whats value values data dataset table file overall whole entire only just also exactly "
        "about approximately roughly so have has had having here s t estimate"
    ).split()
)
"""Words that carry no column, value or operation of their own."""

_CONTRACTIONS = ((r"\bcan't\b", "can not"), (r"\bwon't\b", "will not"), (r"n't\b", " not"), (r"n’t\b", " not"))
_AGENT_ENDINGS = ("ees", "ee", "ers", "er", "ors", "or", "ing", "ed", "s")


def expand_contractions(text: str) -> str:
    """'didn't' → 'did not', so the negation is a word of its own."""
    for pattern, repl in _CONTRACTIONS:
        text = re.sub(pattern, repl, text, flags=re.IGNORECASE)
    return text


@lru_cache(maxsize=4096)
def roots(word: str) -> frozenset[str]:
    """The word's lower-case roots: itself, its lemmas as any part of speech, and the stem left
    when an agent or participle ending is taken off ('trainees' → trainee, train)."""
    from lemminflect import getAllLemmas, getAllLemmasOOV

    low = word.lower()
    found = {low}
    for form in (low, *(low[: -len(e)] for e in _AGENT_ENDINGS if low.endswith(e) and len(low) - len(e) >= 3)):
        found.add(form)
        lemmas = getAllLemmas(form) or {}
        for values in lemmas.values():
            found.update(v.lower() for v in values)
    if len(found) == 1:  # a word lemminflect does not know: its out-of-vocabulary guess as a noun and a verb
        for upos in ("NOUN", "VERB"):
            found.update(v.lower() for v in getAllLemmasOOV(low, upos).get(upos, ()))
    for form in list(found):  # 'training' → train, 'smoker' → smoke: the verb under the noun
        for ending in ("ing", "er", "ee", "or"):
            if form.endswith(ending) and len(form) - len(ending) >= 3:
                stem = form[: -len(ending)]
                found.add(stem)
                if ending in ("er", "or", "ing") and not stem.endswith("e"):
                    found.add(stem + "e")  # 'smoker' → smoke, 'survivor' → survive
    return frozenset(f for f in found if len(f) >= 3)


def same_root(a: str, b: str) -> bool:
    """Whether two words share a root of four or more letters ('trainees' and 'training')."""
    return bool({r for r in roots(a) if len(r) >= 4} & {r for r in roots(b) if len(r) >= 4})


_WORD = re.compile(r"[A-Za-z][A-Za-z']*|\d+(?:[.,]\d+)*%?")


def unread(text: str, placed: Iterable[tuple[int, int]], content: Iterable[str] = ()) -> list[str]:
    """The content words of ``text`` outside every placed character span, in order: not a
    function word and not a number inside a placed span. ``content`` are words that must be
    placed even where they are function words or row nouns (the data's own values: 'cars' where
    a column holds 'cars' and 'trucks')."""
    must = {c.lower() for c in content}
    spans = sorted(placed)
    out: list[str] = []
    for m in _WORD.finditer(text):
        if any(start <= m.start() and m.end() <= end for start, end in spans):
            continue
        word = m.group(0).lower().strip("'")
        if (word in FUNCTION_WORDS or word in POPULATION_NOUNS) and word not in must:
            continue
        out.append(word)
    return out


def understood_line(text: str, placed: Sequence[tuple[int, int]], missing: Sequence[str]) -> str:
    """'I understood 'average age' but not 'who did not train'': the placed words and the rest."""
    spans = sorted(placed)
    read = [text[s:e] for s, e in spans if text[s:e].strip()]
    known = " ".join(dict.fromkeys(read))
    rest = " ".join(dict.fromkeys(missing))
    if known:
        return f"I understood '{known}' but not '{rest}'"
    return f"I could not read '{rest}'"
