"""A question in plain words read into a :class:`~whyflow.ask.tools.plain_spec.PlainSpec`, with
every word of it accounted for.

The structures read, each independent of the dataset and the phrasing of one question:

- a statistic of a column ("the average age", "median fare", "total charges");
- a count ("how many passengers survived", "the number of women older than 50");
- a conditional share: "percentage / proportion / share / fraction of A [who / that / with] B" is
  P(B | A), the last condition being the event and the ones before it the population;
- a contrast: "how much more (less) do A <verb|column> than B" and "the difference in X between A
  and B", the statistic of X on A minus (or from) that on B;
- the conditions on the rows: a 0/1 or yes/no column named by any form of its word ("trainees",
  "who trained", "took the training", "married people", "non-smokers", "who did not train"), a
  value named by its label ("women" → sex = female, "north"), an ordinal or number before the
  column it is a value of ("third class" → pclass = 3), and numeric comparisons ("older than 50",
  "at least 3 children", "between 180 and 185").

A word the parse cannot place (not a column, a value, an operation, a number or a function word)
means no spec: :class:`PlainParse` then carries the words it could not read, so the reply names
them instead of computing a number for a question that was not asked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from whyflow.ask.tools.plain_spec import Condition, PlainSpec
from whyflow.ask.tools.plain_words import (
    ACT_VERBS,
    AGE_COMPARATORS,
    ALIASES,
    COMPARATORS,
    COUNT,
    DIFFERENCE,
    MORE,
    NOT_ONE_NUMBER,
    NUMBER_WORDS,
    OPS,
    ORDINALS,
    PEOPLE,
    RATE,
    SELF_DESCRIBED,
    SHARE,
    UNITS,
)
from whyflow.ask.tools.slots import WORD_RE, ColumnInfo, Mention, describe_columns, find_columns, split_name, tokens
from whyflow.ask.tools.textbook_prompt import restated
from whyflow.ask.tools.wording import (
    FUNCTION_WORDS,
    NEGATIONS,
    expand_contractions,
    same_root,
    unread,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["PlainParse", "parse_plain"]


@dataclass
class PlainParse:
    """A plain question's spec (None when some word could not be placed) and what was read."""

    spec: PlainSpec | None
    structure: str | None
    placed: list[tuple[int, int]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


@dataclass
class _Words:
    """The question's words with their character spans and which are placed."""

    text: str
    words: list[str]
    spans: list[tuple[int, int]]
    placed: list[bool]

    def take(self, *indexes: int) -> None:
        for i in indexes:
            if 0 <= i < len(self.placed):
                self.placed[i] = True

    def match(self, i: int, phrase: tuple[str, ...]) -> bool:
        return tuple(self.words[i : i + len(phrase)]) == phrase


def _binary(info: ColumnInfo) -> tuple[Any, Any] | None:
    """(yes, no) of a 0/1, boolean or yes/no column, as the data spells them; None otherwise."""
    values = [v.strip() for v in info.values]
    if info.dtype.lower().startswith("bool"):
        return True, False
    if info.numeric and info.n_unique == 2 and {v.split(".")[0] for v in values} == {"0", "1"}:
        return 1.0, 0.0
    low = {v.lower(): v for v in values}
    for yes, no in (("yes", "no"), ("true", "false"), ("y", "n")):
        if set(low) == {yes, no}:
            return low[yes], low[no]
    return None


def _text_values(info: ColumnInfo) -> list[str]:
    """A categorical text column's values (empty for numbers and for columns of many values)."""
    if info.numeric or not info.values or (info.n_unique or 0) > 30:
        return []
    return [v for v in info.values if v.strip()]


def _singular(word: str) -> str:
    found = tokens(word)
    return found[0] if found else word


def _number(word: str) -> float | None:
    if re.fullmatch(r"\d+(?:\.\d+)?", word):
        return float(word)
    return float(NUMBER_WORDS[word]) if word in NUMBER_WORDS else None


def _condition(column: str, op: str, value: Any, info: ColumnInfo | None = None) -> Condition:
    shown = value
    if isinstance(value, float) and value.is_integer():
        shown = int(value)
    if isinstance(value, bool):
        value, shown = float(value), value
    return Condition(column=column, op=op, value=value, words=f"{column} {'=' if op == '==' else op} {shown}")  # type: ignore[arg-type]


class _Reader:
    """Reads one question against the columns; every method marks the words it places."""

    def __init__(self, question: str, infos: list[ColumnInfo], context: str = "") -> None:
        self.text = expand_contractions(question)
        self.context = context
        found = list(WORD_RE.finditer(self.text))
        self.w = _Words(
            text=self.text,
            words=[m.group(0).lower() for m in found],
            spans=[(m.start(), m.end()) for m in found],
            placed=[False] * len(found),
        )
        self.infos = infos
        self.by_name = {c.name: c for c in infos}
        self.mentions: list[Mention] = find_columns(self.text, infos)
        self.used: set[int] = set()  # mention indexes a condition or the target took

    # ---- conditions ------------------------------------------------------------------------
    def conditions(self, lo: int, hi: int, target: str | None) -> list[tuple[int, Condition]]:
        """The conditions stated in words lo..hi, with the position each starts at."""
        out: list[tuple[int, Condition]] = []
        i = lo
        while i < hi:
            got = self._comparison(i, hi, target) or self._ordinal(i, hi) or self._flag(i, hi, target)
            got = got or self._value(i, hi)
            if got is None:
                i += 1
                continue
            start, end, conditions = got
            out.extend((start, c) for c in conditions)
            i = max(end, i + 1)
        return out

    def _mention_at(self, i: int) -> tuple[int, Mention] | None:
        for k, m in enumerate(self.mentions):
            if m.start <= i < m.end:
                return k, m
        return None

    def _age_column(self) -> str | None:
        ages = [c.name for c in self.infos if c.numeric and "age" in re.findall(r"[a-z]+", c.name.lower())]
        return ages[0] if len(ages) == 1 else None

    def _comparison(self, i: int, hi: int, target: str | None) -> tuple[int, int, list[Condition]] | None:
        w = self.w
        for phrase, op in AGE_COMPARATORS.items():
            if w.match(i, phrase) and i + len(phrase) < hi:
                value = _number(w.words[i + len(phrase)])
                age = self._age_column()
                if value is not None and age is not None and age != target:
                    hit = self._mention_at(i)
                    if hit is not None:  # 'older' names the age column itself: taken by this comparison
                        self.used.add(hit[0])
                    end = i + len(phrase) + 1
                    end += end < hi and w.words[end] in UNITS
                    w.take(*range(i, end))
                    return i, end, [_condition(age, op, value)]
        between = w.words[i] == "between" and i + 3 < hi + 1 and w.words[i + 2 : i + 3] == ["and"]
        if between:
            low, high = _number(w.words[i + 1]), _number(w.words[i + 3]) if i + 3 < len(w.words) else None
            column = self._numeric_near(i, i + 4, hi, target)
            if low is not None and high is not None and column is not None:
                col, taken = column
                end = i + 4 + (i + 4 < hi and w.words[i + 4] in UNITS)
                w.take(*range(i, end), *taken)
                return i, end, [_condition(col, ">=", low), _condition(col, "<=", high)]
        for phrase, op in COMPARATORS:
            if not w.match(i, phrase):
                continue
            at = i + len(phrase)
            value = _number(w.words[at]) if at < hi else None
            if value is None:
                continue
            column = self._numeric_near(i, at + 1, hi, target)
            age = self._age_column()
            if column is None and i > 0 and w.words[i - 1] in PEOPLE and op != "==" and age not in (None, target):
                assert age is not None
                column = (age, [])  # 'people over 50', 'passengers under 10': their age
            if column is None:
                return None
            col, taken = column
            end = at + 1 + (at + 1 < hi and w.words[at + 1] in UNITS)
            w.take(*range(i, end), *taken)
            return i, max([end, *(t + 1 for t in taken)]), [_condition(col, op, value)]
        return None

    def _numeric_near(self, start: int, after: int, hi: int, target: str | None) -> tuple[str, list[int]] | None:
        """The numeric column a comparison is about: the one named just before it ('age over 50',
        'whose age is at least 30') or just after its number ('at least 3 children')."""
        w = self.w
        j = start - 1
        while j >= 0 and w.words[j] in ("is", "are", "was", "were", "of", "a", "an"):
            j -= 1
        age = self._age_column()
        if j >= 0 and w.words[j] == "aged" and age is not None and age != target:  # 'aged between 30 and 40'
            return age, list(range(j, start))
        later = after
        while later < hi and (w.words[later] in UNITS or w.words[later] in ("of", "in")):
            later += 1
        for pos in (j, after, later):
            hit = self._mention_at(pos) if 0 <= pos < hi else None
            if hit is None:
                continue
            k, m = hit
            info = self.by_name[m.column]
            if m.via == "partial" and w.words[m.start] in UNITS and not self._name_words(m):
                continue  # '50 years' is a unit, not the column education_years
            if info.numeric and _binary(info) is None and m.column != target and k not in self.used:
                self.used.add(k)
                between = range(j + 1, start) if pos == j else range(after, pos)
                return m.column, list(range(m.start, m.end)) + list(between) + self._name_words(m)
        return None

    def _name_words(self, m: Mention) -> list[int]:
        """The words of the column's name just after a mention of part of it: 'years of education'
        for ``education_years`` once 'years' is read."""
        parts = {tokens(p)[0] for p in split_name(m.column) if tokens(p)}
        out, j = [], m.end
        while j < len(self.w.words) and (self.w.words[j] in ("of", "in") or _singular(self.w.words[j]) in parts):
            out.append(j)
            j += 1
        while out and self.w.words[out[-1]] in ("of", "in"):
            out.pop()
        return out

    def _ordinal(self, i: int, hi: int) -> tuple[int, int, list[Condition]] | None:
        """'third class' → pclass = 3, 'with 2 children' → children = 2: a number before a
        column of few values that holds it."""
        w = self.w
        ordinal = ORDINALS.get(w.words[i])
        value = float(ordinal) if ordinal is not None else _number(w.words[i])
        if value is None or i + 1 >= hi:
            return None
        hit = self._mention_at(i + 1)
        if hit is None:
            return None
        k, m = hit
        info = self.by_name[m.column]
        held = {v.split(".")[0] for v in info.values}
        if not info.numeric or (info.n_unique or 99) > 30 or str(int(value)) not in held or k in self.used:
            return None
        self.used.add(k)
        w.take(i, *range(m.start, m.end))
        return i, m.end, [_condition(m.column, "==", value)]

    def _flag(self, i: int, hi: int, target: str | None) -> tuple[int, int, list[Condition]] | None:
        """A yes/no column named by a form of its word, turned around by a negation before it."""
        w = self.w
        hit = self._mention_at(i)
        prefixed = False
        candidates: list[tuple[str, int, int, int | None]] = []
        if hit is not None and _binary(self.by_name[hit[1].column]) is not None and hit[1].column != target:
            candidates.append((hit[1].column, hit[1].start, hit[1].end, hit[0]))
        elif hit is None and w.words[i] not in FUNCTION_WORDS and len(w.words[i]) >= 4:
            word, prefixed = w.words[i], False
            for attempt in (word, word[2:] if word.startswith("un") and len(word) >= 7 else ""):
                owners = [
                    c.name
                    for c in self.infos
                    if attempt
                    and _binary(c) is not None
                    and c.name != target
                    and any(same_root(attempt, p) for p in re.findall(r"[a-z]+", c.name.lower()) if len(p) >= 4)
                ]
                if len(owners) == 1:
                    candidates.append((owners[0], i, i + 1, None))
                    prefixed = attempt != word  # 'unmarried': the column 'married' turned around
                    break
        if not candidates:
            return None
        prefixed = hit is None and prefixed
        column, start, end, k = candidates[0]
        if k is not None and k in self.used:
            return None
        values = _binary(self.by_name[column])
        assert values is not None
        yes, no = values
        j, negated = start - 1, prefixed
        while j >= 0 and (w.words[j] in ACT_VERBS or w.words[j] in NEGATIONS or w.words[j] in ("who", "that", "the")):
            if w.words[j] in NEGATIONS:
                negated = not negated
            j -= 1
        if k is not None:
            self.used.add(k)
        w.take(*range(j + 1, end))
        return start, end, [_condition(column, "==", no if negated else yes)]

    def _value(self, i: int, hi: int) -> tuple[int, int, list[Condition]] | None:
        """A category value named by its label: 'women' → sex = female, 'north'."""
        w = self.w
        word = w.words[i]
        if word in FUNCTION_WORDS or len(word) < 2:
            return None
        owners: list[tuple[str, str]] = []
        for info in self.infos:
            for value in _text_values(info):
                low = value.strip().lower()
                names = ALIASES.get(low, (low,))
                if word in names or (len(word) >= 4 and len(low) >= 4 and " " not in low and same_root(word, low)):
                    owners.append((info.name, value))
        if len({o[0] for o in owners}) != 1 or len(owners) != 1:
            return None
        column, value = owners[0]
        taken = [i]
        for j in (i - 1, i + 1):  # 'the north region', 'region north': the column's own words
            hit = self._mention_at(j) if 0 <= j < len(w.words) else None
            if hit is not None and hit[1].column == column:
                self.used.add(hit[0])
                taken += list(range(hit[1].start, hit[1].end))
        negated = i > 0 and w.words[i - 1] in NEGATIONS
        if negated:
            return None  # 'not north' is every other value: not read here
        w.take(*taken)
        return i, max(taken) + 1, [_condition(column, "==", value)]

    # ---- operations and target -------------------------------------------------------------
    def op(self, lo: int, hi: int) -> tuple[str, int] | None:
        found = []
        for i in range(lo, hi):
            for phrase, op in OPS:
                if self.w.match(i, phrase):
                    found.append((op, i, len(phrase)))
                    break
        if len({f[0] for f in found}) != 1:
            return None
        op, i, size = found[0]
        for _, j, n in found:
            self.w.take(*range(j, j + n))
        return op, i

    def target(self, lo: int, hi: int) -> str | None:
        """The one numeric column of lo..hi no condition took (not a 0/1 flag)."""
        free = [
            (k, m)
            for k, m in enumerate(self.mentions)
            if lo <= m.start < hi
            and k not in self.used
            and not all(self.w.placed[m.start : m.end])  # a unit a comparison read ('over 50 years')
            and self.by_name[m.column].numeric
            and _binary(self.by_name[m.column]) is None
        ]
        if len({m.column for _, m in free}) != 1:
            return None
        for k, m in free:
            self.used.add(k)
            self.w.take(*range(m.start, m.end))
            if m.start >= 2 and self.w.words[m.start - 1] == "of" and self.w.words[m.start - 2] in ("number", "amount"):
                self.w.take(m.start - 2, m.start - 1)  # 'the average number of children': the column itself
        return free[0][1].column

    def structural(self, *patterns: tuple[str, ...]) -> None:
        for i in range(len(self.w.words)):
            for phrase in patterns:
                if self.w.match(i, phrase):
                    self.w.take(*range(i, i + len(phrase)))

    def result(self, spec: PlainSpec | None, structure: str | None) -> PlainParse:
        w = self.w
        placed = [w.spans[i] for i, ok in enumerate(w.placed) if ok]
        named = {v.strip().lower() for c in self.infos for v in _text_values(c)}
        again = restated(self.text, placed, self.context)  # the description's own phrases, said again
        missing = unread(self.text, placed + again, content=named)
        if spec is not None and _repeats_a_column(spec):
            spec = None  # 'north and south', 'men or women': a union or a comparison, not one population
        if spec is not None and again:
            spec = spec.model_copy(update={"restated": [self.text[s:e] for s, e in again]})
        placed = sorted(placed + again)
        return PlainParse(spec=spec if not missing else None, structure=structure, placed=placed, missing=missing)


def _repeats_a_column(spec: PlainSpec) -> bool:
    """Whether some group of the spec sets one column twice ('region = north and region = south')."""
    groups = [spec.population + spec.event, *spec.sides]
    for group in groups:
        equal = [c.column for c in group if c.op == "=="]
        if len(equal) != len(set(equal)):
            return True
    return False


def _contrast(r: _Reader, first: tuple[int, int], second: tuple[int, int], order: str) -> PlainParse:
    """A statistic of one column on the rows of the first words' conditions against the second's."""
    n = len(r.w.words)
    op = r.op(0, n)
    a, b = r.conditions(*first, None), r.conditions(*second, None)
    target = r.target(0, n)
    if target is None or not a or not b:
        return r.result(None, "contrast")
    sides = [[c for _, c in a], [c for _, c in b]]
    spec = PlainSpec(kind="contrast", op=op[0] if op else "mean", target=target, sides=sides, order=order)  # type: ignore[arg-type]
    return r.result(spec, "contrast")


def _find(words: list[str], *phrase: str) -> int | None:
    for i in range(len(words) - len(phrase) + 1):
        if tuple(words[i : i + len(phrase)]) == phrase:
            return i
    return None


def parse_plain(
    question: str, frame: pd.DataFrame | list[ColumnInfo], context: str = "", columns: list[ColumnInfo] | None = None
) -> PlainParse | None:
    """The plain question's spec, or why not; None when the question is not one sentence asking
    for one of the structures read here (a stated format, a table, a chart, a model). ``context``
    is the data's description given with the question, whose phrases the question may repeat;
    ``columns`` are the frame's columns as the ask flow describes them (with the phrases of the
    dataset's description), read from the frame when not given."""
    infos = columns if columns is not None else frame if isinstance(frame, list) else describe_columns(frame)
    if re.search(r"@\w+\[|\n\s*\n|^\s*(?:format|constraints):", question, re.I | re.M):
        return None
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", question.strip()) if s.strip()]
    if len(sentences) != 1:
        return None
    r = _Reader(question, infos, context)
    r.structural(*SELF_DESCRIBED)
    words, n = r.w.words, len(r.w.words)
    low = " ".join(words)
    if NOT_ONE_NUMBER.search(low):
        return None  # a table per group, a union or a listing: the worked examples' job
    if SHARE.search(low):
        at = next(i for i in range(n) if words[i] in ("percentage", "percent", "proportion", "share", "fraction"))
        r.w.take(at, at + 1)
        found = r.conditions(at + 2, n, None)
        if not found:
            return r.result(None, "share")
        conditions = [c for _, c in sorted(found, key=lambda x: x[0])]
        spec = PlainSpec(kind="share", population=conditions[:-1], event=conditions[-1:])
        return r.result(spec, "share")
    rate = RATE.search(low)
    if rate:  # 'the survival rate of women': the share of the rows with the flag the rate is named by
        at = next(i for i in range(n - 1) if words[i + 1] == "rate" and words[i + 2 : i + 3] == [rate.group(2)])
        r.w.take(at + 1, at + 2)
        event = r.conditions(at, at + 1, None)
        found = r.conditions(at + 3, n, None)
        if len(event) != 1:
            return r.result(None, "share")
        spec = PlainSpec(kind="share", population=[c for _, c in found], event=[event[0][1]])
        return r.result(spec, "share")
    more = MORE.search(low)
    than = _find(words, "than")
    if more and than is not None:
        much = _find(words, "how", "much")
        assert much is not None
        r.w.take(much, much + 1, much + 2, than)
        r.structural(("on", "average"), ("on", "the", "average"))
        down = more.group(1) not in ("more", "higher", "greater")
        return _contrast(r, (much + 3, than), (than + 1, n), "second_minus_first" if down else "first_minus_second")
    between = _find(words, "between")
    joint = _find(words[between:], "and") if between is not None else None
    if DIFFERENCE.search(low) and between is not None and joint is not None:
        r.w.take(words.index("difference"), between, between + joint)
        return _contrast(r, (between + 1, between + joint), (between + joint + 1, n), "first_minus_second")
    if COUNT.search(low):
        many = _find(words, "how", "many")
        if many is not None:
            r.w.take(many, many + 1)
        else:
            r.w.take(next(i for i in range(n) if words[i] in ("number", "count")))
        found = r.conditions(0, n, None)
        spec = PlainSpec(kind="count", population=[c for _, c in sorted(found, key=lambda x: x[0])])
        return r.result(spec if found else None, "count")
    op = r.op(0, n)
    if op is None:
        return None
    found = r.conditions(0, n, None)
    target = r.target(0, n)
    if target is None:
        return r.result(None, "aggregate")
    spec = PlainSpec(kind="aggregate", op=op[0], target=target, population=[c for _, c in found])  # type: ignore[arg-type]
    return r.result(spec, "aggregate")
