"""The reader under :mod:`whyflow.ask.tools.textbook_questions`: a textbook question's words,
which of them are placed, the columns and category values they name, and the words of a test's
own language, so that each class of question places what it reads and the rest is listed as unread.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from whyflow.ask.tools.plain_spec import Condition, PlainSpec
from whyflow.ask.tools.plain_words import NUMBER_WORDS
from whyflow.ask.tools.slots import ColumnInfo, find_columns
from whyflow.ask.tools.textbook_prompt import Prompt, restated
from whyflow.ask.tools.textbook_spec import TextbookSpec
from whyflow.ask.tools.wording import FUNCTION_WORDS, NEGATIONS, expand_contractions, same_root, unread

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Match", "Reader", "TextbookParse", "alike", "categorical", "flags", "labels", "number", "recodes", "stance"]

TEST_WORDS = frozenset(
    "null hypothesis hypotheses test tests testing statistic statistics distribution distributions associated "
    "closely using use identify conduct given true significance level p-value p x2 chi square chi-square "
    "degrees degree freedom random randomly sample sampled appear appears seem seems evidence whether "
    "accept reject if would used follows follow experiment study survey poll".split()
)
"""The words of a test's own language: placed once the question is read as that test."""

OUTCOME_NOUNS = frozenset("effectiveness effect effects impact outcome outcomes result results opinion".split())
"""Nouns that stand for the response column of a two-column table ('the effectiveness of the
three treatments'): placed only where the table has exactly one other categorical column."""

STANCE = frozenset("believe believes believing think thinks like likes prefer prefers say says being".split())
"""Verbs that introduce a value a respondent holds ('believes the earth is warming')."""

_TOKEN = re.compile(r"[A-Za-z0-9]+")
_WORDS = re.compile(r"[A-Za-z][A-Za-z0-9']*(?:-[A-Za-z0-9]+)*|\d+(?:\.\d+)?%?")


@dataclass
class TextbookParse:
    """A textbook question's spec (None when some word could not be placed) and what was read."""

    spec: TextbookSpec | PlainSpec | None
    structure: str
    placed: list[tuple[int, int]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


@dataclass
class Match:
    column: str
    value: str
    start: int  # character span in the question
    end: int


class Reader:
    def __init__(self, prompt: Prompt, infos: list[ColumnInfo], frame: pd.DataFrame | None = None) -> None:
        self.prompt = prompt
        self.frame = frame
        self.text = expand_contractions(prompt.question)
        self.low = self.text.lower()
        self.infos = infos
        self.by_name = {c.name: c for c in infos}
        self.placed: list[tuple[int, int]] = []

    # ---- placing words -----------------------------------------------------------------------
    def take(self, start: int, end: int) -> None:
        self.placed.append((start, end))

    def take_words(self, vocabulary: frozenset[str]) -> None:
        for m in _WORDS.finditer(self.text):
            if m.group(0).lower() in vocabulary:
                self.take(m.start(), m.end())

    def take_phrase(self, pattern: str) -> re.Match[str] | None:
        found = re.search(pattern, self.low)
        if found:
            self.take(found.start(), found.end())
        return found

    def result(self, spec: TextbookSpec | PlainSpec | None, structure: str) -> TextbookParse:
        again = restated(self.text, self.placed, self.prompt.context)
        named = {v.strip().lower() for c in self.infos for v in labels(c)}
        missing = unread(self.text, self.placed + again, content=named)
        missing = [w for w in missing if w not in TEST_WORDS or w in NEGATIONS]
        placed = sorted(self.placed + again)
        if spec is not None and again:
            spec = spec.model_copy(update={"restated": [self.text[s:e] for s, e in again]})
        return TextbookParse(spec=None if missing else spec, structure=structure, placed=placed, missing=missing)

    # ---- columns and values ------------------------------------------------------------------
    def columns(self) -> list[tuple[str, int, int]]:
        """Columns named in the question, as (name, start, end) character spans."""
        words = list(re.finditer(r"[A-Za-z][A-Za-z]*|\d+(?:\.\d+)?", self.text))
        out = []
        for m in find_columns(self.text, self.infos):
            if m.via == "value":
                continue
            out.append((m.column, words[m.start].start(), words[m.end - 1].end()))
        return out

    def values(self) -> list[Match]:
        """Category values named by their words: the whole label ('the earth is warming'), or a
        run of its words no other label holds ('In-N-Out' for 'In-N-Out Burger'), or one word of
        four letters or more sharing a root with a one-word label ('conservatives')."""
        q = [(m.group(0).lower(), m.start(), m.end()) for m in _TOKEN.finditer(self.text)]
        known = [(c.name, v, [t.lower() for t in _TOKEN.findall(v)]) for c in self.infos for v in labels(c)]
        runs: dict[tuple[str, ...], set[tuple[str, str]]] = {}
        for column, value, toks in known:
            for i in range(len(toks)):
                for j in range(i + 1, len(toks) + 1):
                    runs.setdefault(tuple(toks[i:j]), set()).add((column, value))
        out: list[Match] = []
        i = 0
        while i < len(q):
            best: tuple[int, set[tuple[str, str]]] | None = None
            for column, value, toks in known:
                for n in range(len(toks), 0, -1):
                    run = tuple(w for w, _, _ in q[i : i + n])
                    if len(run) < n:
                        continue
                    whole = n == len(toks) and run == tuple(toks)
                    joined = not re.search(r"\s", self.text[q[i][1] : q[i + n - 1][2]])  # 'In-N-Out'
                    part = run in runs and n >= 2 and (run[0] not in FUNCTION_WORDS or joined)
                    single = n == 1 and len(toks) == 1 and len(run[0]) >= 4 and alike(run[0], toks[0])
                    if whole or (part and (column, value) in runs[run]) or single:
                        owners = runs.get(run, set()) if not single else {(column, value)}
                        if best is None or n > best[0]:
                            best = (n, set(owners) if whole or part else {(column, value)})
                        elif n == best[0]:
                            best[1].add((column, value))
                        break
            if best is not None and len(best[1]) == 1 and (q[i][0] not in FUNCTION_WORDS or best[0] >= 2):
                column, value = next(iter(best[1]))
                out.append(Match(column, value, q[i][1], q[i + best[0] - 1][2]))
                i += best[0]
            else:
                i += 1
        return out


STANCE_SYNONYMS = {
    "favor": ("support", "favour"),
    "against": ("oppose",),
    "oppose": ("against",),
    "support": ("favor",),
}
"""A survey's answer labels and the verbs people say them with ('supported a quarantine' for
the label 'favor'): a label matches a word of the question that shares a root with it or with
one of these."""


def alike(word: str, label: str) -> bool:
    """Whether a word of the question says a one-word label: a shared root, or a survey synonym."""
    return same_root(word, label) or any(same_root(word, s) for s in STANCE_SYNONYMS.get(label, ()))


def labels(info: ColumnInfo) -> list[str]:
    if info.numeric or not info.values or (info.n_unique or 0) > 30:
        return []
    return [v for v in info.values if v.strip()]


def categorical(info: ColumnInfo) -> bool:
    return bool(labels(info)) or (info.numeric and (info.n_unique or 99) <= 12)


def recodes(frame: pd.DataFrame | None, a: str, b: str) -> bool:
    """Whether two columns are one variable written twice: over the rows with both, each value of
    one goes with exactly one value of the other ('pos_assumption' always with the question "It
    doesn't have any problems, does it?"). False without the data."""
    if frame is None or a == b:
        return False
    both = frame[[a, b]].dropna().astype(str)
    if both.empty:
        return False
    return bool(both.groupby(a)[b].nunique().max() == 1 and both.groupby(b)[a].nunique().max() == 1)


def number(word: str) -> float | None:
    if re.fullmatch(r"\d+(?:\.\d+)?", word):
        return float(word)
    return float(NUMBER_WORDS[word]) if word in NUMBER_WORDS else None


# ---- the classes of question ---------------------------------------------------------------------
def stance(r: Reader, at: int) -> None:
    """Places the verb that introduces a value ('believes [that] the earth is warming')."""
    before = re.search(r"\b(\w+)((?: that)?(?: the)?)\s*$", r.low[:at])
    if before and before.group(1) in STANCE:
        r.take(before.start(), at)


def flags(r: Reader) -> list[tuple[int, int, Condition]]:
    """Yes/no columns named by a form of their word ('an inoculated person'), yes unless a
    negation stands right before."""
    out = []
    for m in re.finditer(r"[a-z]{4,}", r.low):
        owners = []
        for c in r.infos:
            low = {v.strip().lower() for v in c.values}
            if c.n_unique == 2 and low == {"yes", "no"}:
                if any(same_root(m.group(0), p) for p in re.findall(r"[a-z]{4,}", c.name.lower())):
                    owners.append((c.name, {v.strip().lower(): v for v in c.values}))
        if len(owners) != 1:
            continue
        column, spelled = owners[0]
        negated = re.search(r"\b(not|non|no)\W*$", r.low[: m.start()])
        value = spelled["no" if negated else "yes"]
        start = negated.start() if negated else m.start()
        out.append((start, m.end(), Condition(column=column, op="==", value=value, words=f"{column} = {value}")))
    return out
