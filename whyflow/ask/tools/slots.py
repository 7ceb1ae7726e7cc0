"""Reading a question against the data's columns: which columns and values it mentions.

Numbers are read by :mod:`whyflow.ask.tools.question_numbers`, the conditions they make by
:mod:`whyflow.ask.tools.filters`.

Deterministic and case-blind. A column is mentioned when the question holds its name (split on
``_``, ``.``, spaces and camelCase, singular or plural), a synonym of it (``gender`` for ``sex``,
``wage`` for ``salary``), a phrase the dataset's own description gives for it (``earnings in
1978`` for ``re78``: :mod:`whyflow.ask.tools.descriptions`), or a close misspelling (rapidfuzz's
normalised Indel similarity ≥ 85 on words of 4+ letters).
Regular expressions are fine here: they read English, not SQL.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict
from rapidfuzz import fuzz

from whyflow.ask.tools.plain_words import ACT_VERBS, COMPARATORS, NUMBER_WORDS, OPS, ORDINALS, UNITS
from whyflow.ask.tools.wording import FUNCTION_WORDS, NEGATIONS, POPULATION_NOUNS

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "ColumnInfo",
    "Mention",
    "describe_columns",
    "as_column_infos",
    "find_columns",
    "value_mentions",
    "is_group_mention",
    "split_name",
    "tokens",
]

SYNONYMS: tuple[frozenset[str], ...] = tuple(
    frozenset(group)
    for group in (
        {"sex", "gender"},
        {"salary", "wage", "income", "pay", "earnings", "earning", "earn", "paid"},
        {"price", "cost"},
        {"fare", "ticket price", "ticket fare", "passenger fare"},
        {"charges", "charge", "medical cost", "medical costs", "insurance cost", "expenses"},
        {"survived", "survival", "survive", "survivor"},
        {"pclass", "class", "passenger class", "ticket class"},
        {"sibsp", "sibling", "siblings", "spouses"},
        {"parch", "parents", "parent"},
        {"embarked", "port", "embarkation"},
        {"mpg", "miles per gallon", "fuel efficiency", "fuel economy"},
        {"hp", "horsepower"},
        {"bmi", "body mass index"},
        {"smoker", "smoking", "smokers"},
        {"children", "kids", "dependents"},
        {"quantity", "qty", "units sold"},
        {"revenue", "sales", "turnover"},
        {"weight", "wt"},
        {"age", "ages", "how old", "older", "younger", "old", "young"},
        {"rings", "ring"},
        {"volume", "trading volume"},
        {"education", "schooling"},
        {"experience", "exper", "tenure"},
        {"temperature", "temp"},
        {"date", "day"},
        {"year", "yr", "yearly", "annual", "annually"},
        {"month", "monthly"},
    )
)
WORD_RE = re.compile(r"[A-Za-z][A-Za-z]*|\d+(?:\.\d+)?")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|[^A-Za-z0-9]+|(?<=[A-Za-z])(?=\d)|(?<=\d)(?=[A-Za-z])")
_GROUP_CUES = (
    "by",
    "per",
    "each",
    "across",
    "grouped",
    "among",
    "between",
    "within",
    "every",
    "for each",
    "vs",
    "versus",
)
STOP_WORDS = frozenset(
    "the a an of in on at to for by and or is are was were be what which how many much with from this that "
    "it its as do does did there their each per all any data dataset column columns value values".split()
)


class ColumnInfo(BaseModel):
    """What slot filling needs to know of one column: name, dtype, distinct count, common values."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    dtype: str
    n_unique: int | None = None
    values: tuple[str, ...] = ()
    numeric_text: bool = False
    aliases: tuple[str, ...] = ()
    """What the dataset's own description calls the column ('earnings in 1978' for ``re78``)."""

    @property
    def numeric(self) -> bool:
        """Numbers (ints, floats, booleans), or text that reads as numbers ("5,350,380")."""
        d = self.dtype.lower()
        return (
            self.numeric_text or d.startswith(("int", "uint", "float", "bool")) or d in ("double", "bigint", "integer")
        )

    @property
    def temporal(self) -> bool:
        """A date/time column, or a column whose name says it is one (``year``, ``modelyear``, ``date``)."""
        if "datetime" in self.dtype.lower() or "date" in self.dtype.lower():
            return True
        name = self.name.lower()
        return any(w in name for w in ("date", "time", "year", "month", "week", "quarter", "period")) or name == "day"

    @property
    def categorical(self) -> bool:
        """Text, booleans or a number with few distinct values (0/1, classes 1–3)."""
        if not self.numeric:
            return True
        return self.dtype.lower().startswith("bool") or (self.n_unique is not None and self.n_unique <= 12)


class Mention(BaseModel):
    """A column mentioned in the question, at word positions ``start``..``end`` (exclusive)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    column: str
    start: int
    end: int
    via: Literal["name", "synonym", "alias", "fuzzy", "partial", "value"]


def split_name(name: str) -> list[str]:
    """A column name's words, lower-case: ``SibSp`` → sib, sp; ``total_bill`` → total, bill."""
    return [w.lower() for w in _CAMEL.split(name) if w]


def _singular(word: str) -> str:
    """A crude singular: fares → fare, classes → class, but not 'bus' or 'class'."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("sses", "shes", "ches", "xes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def tokens(text: str) -> list[str]:
    """Lower-case singular words and numbers of a text, in order."""
    return [_singular(m.group(0).lower()) for m in WORD_RE.finditer(text)]


def describe_columns(
    frame: pd.DataFrame, max_values: int = 30, aliases: Mapping[str, Sequence[str]] | None = None
) -> list[ColumnInfo]:
    """ColumnInfo for every column of a DataFrame (dtype, distinct count, most common values), with
    the phrases the dataset's description uses for it (``aliases``, by column name)."""
    aliases = aliases or {}
    infos = []
    for name in frame.columns:
        series = frame[name]
        n_unique = int(series.nunique(dropna=True))
        values: tuple[str, ...] = ()
        if n_unique <= max_values:
            values = tuple(str(v) for v in series.dropna().value_counts().index[:max_values])
        infos.append(
            ColumnInfo(
                name=str(name),
                dtype=str(series.dtype),
                n_unique=n_unique,
                values=values,
                numeric_text=_reads_as_numbers(series),
                aliases=tuple(aliases.get(str(name), ())),
            )
        )
    return infos


def _reads_as_numbers(series: pd.Series) -> bool:
    """Text whose values (nearly all) are numbers once ',', '$', '%' and spaces are dropped."""
    import pandas as pd

    if pd.api.types.is_numeric_dtype(series) or pd.api.types.is_datetime64_any_dtype(series):
        return False
    sample = series.dropna().astype(str).head(500)
    if sample.empty:
        return False
    cleaned = sample.str.replace(r"[,$%\s]", "", regex=True)
    return bool(pd.to_numeric(cleaned, errors="coerce").notna().mean() >= 0.95)


def as_column_infos(columns: Mapping[str, str] | Sequence[ColumnInfo] | pd.DataFrame) -> list[ColumnInfo]:
    """Accept a ``{name: dtype}`` mapping, ColumnInfo objects or a DataFrame."""
    if isinstance(columns, Mapping):
        return [ColumnInfo(name=str(k), dtype=str(v)) for k, v in columns.items()]
    if hasattr(columns, "columns") and hasattr(columns, "dtypes"):
        return describe_columns(columns)  # type: ignore[arg-type]
    return [c if isinstance(c, ColumnInfo) else ColumnInfo.model_validate(c) for c in columns]


ABBREVIATIONS: dict[str, tuple[tuple[str, ...], ...]] = {
    "sqft": (("square", "foot"), ("square", "feet")),
    "no": (("number",),),
    "num": (("number",),),
    "pct": (("percent",), ("percentage",)),
    "avg": (("average",),),
}
"""Words of column names that abbreviate what a question spells out ('No. of cases': the number of
cases; 'PricePerSqft': price per square foot). Only in names of two or more words, so a column
called 'No' is not 'number'."""


def _spelled_out(words: list[str]) -> list[list[str]]:
    """The name's words with each abbreviation spelled out (every combination; none when there is none)."""
    if len(words) < 2 or not any(w in ABBREVIATIONS for w in words):
        return []
    out: list[list[str]] = [[]]
    for word in words:
        choices = [[word]] + [list(full) for full in ABBREVIATIONS.get(word, ())]
        out = [head + choice for head in out for choice in choices]
    return [seq for seq in out if seq != words]


def _variants(column: ColumnInfo) -> list[tuple[list[str], str]]:
    """Word sequences that name the column, each tagged 'name' or 'synonym'."""
    words = [_singular(w) for w in split_name(column.name)]
    out: list[tuple[list[str], str]] = [(words, "name")]
    out += [(seq, "name") for seq in _spelled_out(words)]
    joined = "".join(words)
    if len(words) > 1:
        out.append(([joined], "name"))
    phrase = " ".join(split_name(column.name))
    for group in SYNONYMS:
        if phrase in group or joined in group or (len(words) == 1 and words[0] in {_singular(g) for g in group}):
            for synonym in group:
                seq = tokens(synonym)
                if seq != words:
                    out.append((seq, "synonym"))
    return out


_ANALYSIS_WORDS = frozenset(
    "average mean median total number count rate percent percentage sum maximum minimum value rank ratio index "
    "level amount score standard deviation variance error".split()
)


def _distinct_words(columns: Sequence[ColumnInfo]) -> dict[str, str]:
    """Words (4+ letters) of multi-word column names that belong to one column only."""
    owners: dict[str, set[str]] = {}
    for column in columns:
        words = [_singular(w) for w in split_name(column.name)]
        if len(words) > 1 and not set(words) & {"id", "key", "code", "uuid"}:  # PassengerId is not 'passengers'
            for word in words:
                if len(word) >= 4 and word not in STOP_WORDS and word not in _ANALYSIS_WORDS:
                    owners.setdefault(word, set()).add(column.name)
    for column in columns:  # a word that is a whole column name elsewhere is not distinctive
        whole = "".join(split_name(column.name))
        if whole in owners and len(split_name(column.name)) == 1:
            owners[whole].add(column.name)
    return {word: next(iter(names)) for word, names in owners.items() if len(names) == 1}


_DESCRIBING_WORDS = frozenset(
    "whether indicator indicate indicating dummy variable flag binary otherwise equal coded code yes measured "
    "recorded denote denoting represent representing type kind status category".split()
)
"""Words a description uses to say how a column is written, not what it is about."""
_QUESTION_WORDS = frozenset(
    "share fraction proportion percentage percent rate ratio difference more less fewer most least higher lower "
    "greater larger smaller biggest top bottom first last".split()
)
"""Words that give a question its structure (a share, a contrast, a ranking): never a column's own."""
_NOT_KEY = frozenset(
    _singular(w)
    for group in (
        STOP_WORDS,
        FUNCTION_WORDS,
        NEGATIONS,
        POPULATION_NOUNS,
        _ANALYSIS_WORDS,
        _DESCRIBING_WORDS,
        _QUESTION_WORDS,
        ACT_VERBS,
        UNITS,
        NUMBER_WORDS,
        ORDINALS,
        {w for phrase, _ in (*OPS, *COMPARATORS) for w in phrase},
    )
    for w in group
)


def _alias_candidates(words: list[str], columns: Sequence[ColumnInfo]) -> list[tuple[int, int, int, Mention]]:
    """Runs of the question's words that stand in a phrase the description gives for one column.

    A run counts, once function words are trimmed off its ends, when it holds a key word (four
    letters or more; not a function, operation, comparison, unit or population word, not a value
    of any column) and stands in no other column's name, synonyms or described phrases: 'earnings'
    does not pick ``re78`` among three 'earnings in 19..' columns, 'earnings in 1978' does.

    The run may leave out of the phrase only what does not change its meaning: the words before
    it when none is a key word ('whether the person joined' before 'the programme') and a
    qualifier after it that starts with a function word ('in 1978' after 'earnings'), never a
    negation. 'the exam' is not ``failed`` of "failed the exam", nor 'high-school degree'
    ``nodegree`` of "no high-school degree".
    """
    described = [c for c in columns if c.aliases]
    if not described:
        return []
    values = {t for c in columns for v in c.values for t in tokens(v)}
    said = {c.name: [tokens(a) for a in c.aliases] for c in columns}
    named = {c.name: [seq for seq, _ in _variants(c)] + said[c.name] for c in columns}

    def key(word: str) -> bool:
        return word.isalpha() and len(word) >= 4 and word not in _NOT_KEY and word not in values

    out: list[tuple[int, int, int, Mention]] = []
    for column in described:
        for phrase in said[column.name]:
            for start, end, first, last in _runs(words, phrase):
                run, left, after = words[start:end], phrase[:first] + phrase[last:], phrase[last : last + 1]
                if not any(key(w) for w in run) or any(key(w) for w in phrase[:first]):
                    continue
                if any(w in NEGATIONS for w in left) or (after and after[0] not in _EDGE_WORDS):
                    continue
                if any(_holds(seq, run) for name, seqs in named.items() if name != column.name for seq in seqs):
                    continue
                out.append((end - start, 1, start, Mention(column=column.name, start=start, end=end, via="alias")))
    return out


_EDGE_WORDS = (
    FUNCTION_WORDS
    | STOP_WORDS
    | frozenset("before after during since until over under between among per when while where".split())
)
"""Words a run of a described phrase is trimmed of, and that start a qualifier it may leave out."""


def _runs(words: list[str], phrase: list[str]) -> list[tuple[int, int, int, int]]:
    """The longest runs of question words that stand in the phrase in the same order, edge words
    trimmed off both ends: question positions start..end and phrase positions first..last."""
    found: set[tuple[int, int, int, int]] = set()
    for i in range(len(words)):
        for j in range(len(phrase)):
            if words[i] != phrase[j] or (i and j and words[i - 1] == phrase[j - 1]):
                continue  # not where a longest run starts
            n = 0
            while i + n < len(words) and j + n < len(phrase) and words[i + n] == phrase[j + n]:
                n += 1
            head, tail = 0, n
            while head < tail and words[i + head] in _EDGE_WORDS:
                head += 1
            while tail > head and words[i + tail - 1] in _EDGE_WORDS:
                tail -= 1
            if head < tail:
                found.add((i + head, i + tail, j + head, j + tail))
    return sorted(found)


def _holds(seq: list[str], run: list[str]) -> bool:
    """Whether the word sequence ``seq`` holds ``run`` as consecutive words."""
    return any(seq[k : k + len(run)] == run for k in range(len(seq) - len(run) + 1))


def find_columns(question: str, columns: Iterable[ColumnInfo]) -> list[Mention]:
    """Columns mentioned in the question, in question order, longest and most exact match first.

    Ranked: the full name, a synonym or a phrase of the dataset's description (``aliases``), a
    misspelling or abbreviation ('educ', 'cigsale' for 'cigarette sales'), then one distinctive
    word of a long name ('salary' for 'salary_in_thousands_of_dollars' when no other column has
    that word).
    """
    columns = list(columns)
    words = tokens(question)
    candidates: list[tuple[int, int, int, Mention]] = _alias_candidates(words, columns)
    for i, word in enumerate(words):
        owner = _distinct_words(columns).get(word)
        if owner:
            candidates.append((1, -1, i, Mention(column=owner, start=i, end=i + 1, via="partial")))
    for column in columns:
        for seq, via in _variants(column):
            if not seq:
                continue
            for i in range(len(words) - len(seq) + 1):
                if words[i : i + len(seq)] == seq:
                    rank = 2 if via == "name" else 1
                    candidates.append(
                        (len(seq), rank, i, Mention(column=column.name, start=i, end=i + len(seq), via=via))
                    )  # type: ignore[arg-type]
        single = [s[0] for s, via in _variants(column) if len(s) == 1 and len(s[0]) >= 4 and via == "name"]
        for i in range(len(words) - 1):  # 'model year' for the column 'modelyear'
            if words[i] + words[i + 1] in single or words[i] + _singular(words[i + 1]) in single:
                candidates.append((2, 2, i, Mention(column=column.name, start=i, end=i + 2, via="name")))
            elif any(_compressed(words[i], words[i + 1], name) for name in single):  # 'cigarette sales' → cigsale
                candidates.append((2, 0, i, Mention(column=column.name, start=i, end=i + 2, via="fuzzy")))
        for i, word in enumerate(words):
            if len(word) >= 4 and word not in STOP_WORDS and any(_close(word, s) for s in single):
                candidates.append((1, 0, i, Mention(column=column.name, start=i, end=i + 1, via="fuzzy")))
    candidates.sort(key=lambda c: (-c[0], -c[1], c[2]))
    taken: set[int] = set()
    chosen: list[Mention] = []
    for _, _, _, mention in candidates:
        span = set(range(mention.start, mention.end))
        if span & taken or any(m.column == mention.column for m in chosen):
            continue
        taken |= span
        chosen.append(mention)
    return sorted(chosen, key=lambda m: m.start)


def _compressed(first: str, second: str, name: str) -> bool:
    """Whether a name is the first word clipped plus the second, whole or clipped: cigsale,
    retprice ('retail price'), medinc ('median income'); each part at least three letters."""
    if len(name) < 6:
        return False
    for cut in range(3, min(len(first), len(name) - 3) + 1):
        head, rest = name[:cut], name[cut:]
        if first.startswith(head) and len(rest) >= 3 and second.startswith(rest) and (head != first or rest != second):
            return True
    return False


_SUFFIXES = frozenset({"er", "est", "ing", "ed", "ly", "es", "ers", "ness", "ish", "ier", "iest"})


def _close(word: str, name: str) -> bool:
    """A misspelling or an abbreviation, not a different word.

    Misspelling: same first letter, length within one, similarity ≥ 85 (rapidfuzz's ratio: twice
    the longest common subsequence over both lengths, in percent). Abbreviation: the
    column name (4+ letters) starts the word and is at least two letters shorter ('educ' for
    'education', 'exper' for 'experience').
    """
    if word == name or word[0] != name[0]:
        return False
    if (
        len(word) > 5
        and word.endswith(("ing", "ed"))
        and word.rsplit("ing" if word.endswith("ing") else "ed", 1)[0] + "e" == name
    ):
        return True  # 'closing' for 'close', 'priced' for 'price'
    if len(name) >= 4 and len(word) >= len(name) + 2 and word.startswith(name):
        return word[len(name) :] not in _SUFFIXES  # 'highest' is not an abbreviation of 'high'...
    if abs(len(word) - len(name)) > 1:
        return False
    return fuzz.ratio(word, name) >= 85


def value_mentions(question: str, columns: Iterable[ColumnInfo], taken: Sequence[Mention]) -> list[Mention]:
    """Columns named only through one of their values ('male and female' → Sex), in question order.

    A value counts when it is a whole word of 3+ letters (not a stop word) and belongs to exactly
    one column; columns already mentioned by name are skipped.
    """
    words = tokens(question)
    raw = [m.group(0).lower() for m in WORD_RE.finditer(question)]
    named = {m.column for m in taken}
    owners: dict[str, list[str]] = {}
    for column in columns:
        for value in column.values:
            v = value.strip().lower()
            if len(v) >= 3 and v.isalpha() and v not in STOP_WORDS:
                owners.setdefault(v, []).append(column.name)
    found: list[Mention] = []
    for i, (word, original) in enumerate(zip(words, raw, strict=False)):
        for candidate in (original, word):
            cols = owners.get(candidate, [])
            if len(cols) == 1 and cols[0] not in named and all(f.column != cols[0] for f in found):
                found.append(Mention(column=cols[0], start=i, end=i + 1, via="value"))
                break
    return found


def is_group_mention(question: str, mention: Mention) -> bool:
    """Whether a grouping cue ('by', 'per', 'for each', 'across', ...) comes just before the mention
    or before another occurrence of the same words ('... for married customers? ... by married')."""
    words = tokens(question)
    span = words[mention.start : mention.end]
    for start in range(len(words) - len(span) + 1):
        if words[start : start + len(span)] == span:
            before = words[max(0, start - 3) : start]
            if any(cue in before for cue in _GROUP_CUES):
                return True
    return False
