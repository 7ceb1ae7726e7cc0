"""A textbook statistics question read into a spec, with every word of it accounted for.

The classes of question read, each by the language of a statistics textbook, never by one
dataset's column names:

- a variable's type: "is the <column> variable numerical or categorical?";
- a stated chi-square statistic: "the test statistic X2 = 5.89 ... a chi-square distribution with
  three degrees of freedom ... identify the p-value";
- independence of two categorical columns: "is <A> independent of <B>?", "are <A> and <B>
  independent?", "given the null hypothesis that there is no difference in the <outcome> of the
  <groups>, conduct a chi-square test" (the p-value, the statistic, the degrees of freedom, or
  accept / reject at a stated level), Pearson's test as textbooks teach it;
- disjoint events: "are the outcomes <a>, <b> and <c> disjoint?", "are <A> and <B> mutually
  exclusive?" (values named by their words, across columns or within one);
- a conditional probability: "the probability that a randomly chosen <A> <B>", "... <B> given that
  he is <A>": the share P(B | A) of :mod:`whyflow.ask.tools.plain_ops`.

A word no reading places (not a column, a value, a number, a test's own word or a function word)
means no spec: :class:`TextbookParse` then carries the words it could not read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from whyflow.ask.tools.plain_spec import Condition, PlainSpec
from whyflow.ask.tools.plain_words import NUMBER_WORDS
from whyflow.ask.tools.slots import ColumnInfo, describe_columns, find_columns
from whyflow.ask.tools.textbook_prompt import Prompt, restated
from whyflow.ask.tools.textbook_spec import TextbookSpec, ValueRef
from whyflow.ask.tools.wording import (
    FUNCTION_WORDS,
    NEGATIONS,
    POPULATION_NOUNS,
    expand_contractions,
    same_root,
    unread,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["TextbookParse", "parse_textbook"]

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
class _Match:
    column: str
    value: str
    start: int  # character span in the question
    end: int


class _Reader:
    def __init__(self, prompt: Prompt, infos: list[ColumnInfo]) -> None:
        self.prompt = prompt
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
        named = {v.strip().lower() for c in self.infos for v in _labels(c)}
        missing = unread(self.text, self.placed + again, content=named)
        missing = [w for w in missing if w not in TEST_WORDS or w in NEGATIONS]
        placed = sorted(self.placed + again)
        if spec is not None and isinstance(spec, PlainSpec) and again:
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

    def values(self) -> list[_Match]:
        """Category values named by their words: the whole label ('the earth is warming'), or a
        run of its words no other label holds ('In-N-Out' for 'In-N-Out Burger'), or one word of
        four letters or more sharing a root with a one-word label ('conservatives')."""
        q = [(m.group(0).lower(), m.start(), m.end()) for m in _TOKEN.finditer(self.text)]
        labels = [(c.name, v, [t.lower() for t in _TOKEN.findall(v)]) for c in self.infos for v in _labels(c)]
        runs: dict[tuple[str, ...], set[tuple[str, str]]] = {}
        for column, value, toks in labels:
            for i in range(len(toks)):
                for j in range(i + 1, len(toks) + 1):
                    runs.setdefault(tuple(toks[i:j]), set()).add((column, value))
        out: list[_Match] = []
        i = 0
        while i < len(q):
            best: tuple[int, set[tuple[str, str]]] | None = None
            for column, value, toks in labels:
                for n in range(len(toks), 0, -1):
                    run = tuple(w for w, _, _ in q[i : i + n])
                    if len(run) < n:
                        continue
                    whole = n == len(toks) and run == tuple(toks)
                    joined = not re.search(r"\s", self.text[q[i][1] : q[i + n - 1][2]])  # 'In-N-Out'
                    part = run in runs and n >= 2 and (run[0] not in FUNCTION_WORDS or joined)
                    single = n == 1 and len(toks) == 1 and len(run[0]) >= 4 and same_root(run[0], toks[0])
                    if whole or (part and (column, value) in runs[run]) or single:
                        owners = runs.get(run, set()) if not single else {(column, value)}
                        if best is None or n > best[0]:
                            best = (n, set(owners) if whole or part else {(column, value)})
                        elif n == best[0]:
                            best[1].add((column, value))
                        break
            if best is not None and len(best[1]) == 1 and (q[i][0] not in FUNCTION_WORDS or best[0] >= 2):
                column, value = next(iter(best[1]))
                out.append(_Match(column, value, q[i][1], q[i + best[0] - 1][2]))
                i += best[0]
            else:
                i += 1
        return out


def _labels(info: ColumnInfo) -> list[str]:
    if info.numeric or not info.values or (info.n_unique or 0) > 30:
        return []
    return [v for v in info.values if v.strip()]


def _categorical(info: ColumnInfo) -> bool:
    return bool(_labels(info)) or (info.numeric and (info.n_unique or 99) <= 12)


def _number(word: str) -> float | None:
    if re.fullmatch(r"\d+(?:\.\d+)?", word):
        return float(word)
    return float(NUMBER_WORDS[word]) if word in NUMBER_WORDS else None


# ---- the classes of question ---------------------------------------------------------------------
def _column_type(r: _Reader) -> TextbookParse | None:
    cue = re.search(r"\b(numerical|numeric|quantitative) or (categorical|qualitative)\b", r.low) or re.search(
        r"\b(categorical|qualitative) or (numerical|numeric|quantitative)\b", r.low
    )
    if not cue or not r.low.startswith("is "):
        return None
    r.take(cue.start(), cue.end())
    r.take_phrase(r"\b(variable|column)\b")
    named = {c for c, s, e in r.columns() if e <= cue.start()}
    for c, s, e in r.columns():
        if c in named:
            r.take(s, e)
    if len(named) != 1:
        return r.result(None, "column_type")
    column = named.pop()
    info = r.by_name[column]
    decided = "categorical" if _labels(info) or not info.numeric else None
    if info.numeric and (info.n_unique or 0) > 12:
        decided = "numerical"
    if decided is None:
        return r.result(None, "column_type")
    spec = TextbookSpec(kind="column_type", columns=[column], choices=list(r.prompt.choices))
    return r.result(spec, "column_type")


def _chi2_stated(r: _Reader) -> TextbookParse | None:
    stat = re.search(
        r"\b(?:x2|x\^2|χ2|χ²|chi-square statistic|chi-squared statistic)\s*(?:=|of|is)\s*(\d+(?:\.\d+)?)", r.low
    )
    dof = re.search(r"\b(\w+)\s+degrees?\s+of\s+freedom\b", r.low)
    if not stat or not dof or "p-value" not in r.low:
        return None
    df = _number(dof.group(1))
    if df is None or not float(df).is_integer():
        return r.result(None, "chi2_stated")
    r.take(stat.start(), stat.end())
    r.take(dof.start(), dof.end())
    r.take_words(TEST_WORDS)
    spec = TextbookSpec(
        kind="chi2_stated", want="p_value", statistic=float(stat.group(1)), df=int(df), decimals=r.prompt.decimals
    )
    return r.result(spec, "chi2_stated")


def _independence(r: _Reader) -> TextbookParse | None:
    cue = re.search(r"\bindependent\b|\bindependence\b|\bchi-square test\b|\bchi-squared test\b", r.low)
    dof_only = "degrees of freedom" in r.low and "null hypothesis" in r.low and "chi-square distribution" in r.low
    if not cue and not dof_only:
        return None
    r.take_words(TEST_WORDS | {"independent", "independence"})
    r.take_phrase(r"\bwhether or not\b")
    r.take_phrase(r"\bthere is no difference in\b|\bno difference in\b|\bhad no\b|\bhas no\b|\bhave no\b")
    want = "independent"
    if "degrees of freedom" in r.low:
        want = "df"
    elif "p-value" in r.low:
        want = "p_value"
    elif re.search(r"\baccept or reject\b|\breject or accept\b", r.low):
        want = "decision"
    elif re.search(r"\btest statistic\b", r.low):
        want = "statistic"
    if want == "df":
        r.take_phrase(r"\bhow many degrees of freedom\b")
    alpha, stated = 0.05, False
    level = re.search(r"\b(\d+(?:\.\d+)?)\s*%\s*(?:significance level|level of significance)\b", r.low) or re.search(
        r"\bsignificance level of (\d+(?:\.\d+)?)\s*%", r.low
    )
    if level:
        alpha, stated = float(level.group(1)) / 100, True
        r.take(level.start(), level.end())
    if want == "decision" and not stated:
        return r.result(None, "independence")
    found: list[str] = []
    for c, s, e in r.columns():
        if _categorical(r.by_name[c]):
            r.take(s, e)
            if c not in found:
                found.append(c)
    count = re.search(r"\b(two|three|four|five|six|\d+) (\w+)", r.low)
    named = list(found)
    for v in r.values():  # a value names its column; a value of a named column would be a filter: unread
        if v.column in named:
            continue
        if v.column not in found:
            found.append(v.column)
        r.take(v.start, v.end)
    outcome = [m for m in re.finditer(r"\b\w+\b", r.low) if m.group(0) in OUTCOME_NOUNS]
    others = [c.name for c in r.infos if _categorical(c) and c.name not in found and (c.n_unique or 0) >= 2]
    if len(found) == 1 and outcome and len(others) == 1:
        found.append(others[0])
        for m in outcome:
            r.take(m.start(), m.end())
    if count and found:  # 'the three treatments': the number of groups, which must be the column's
        n = _number(count.group(1))
        sizes = {r.by_name[c].n_unique for c in found}
        if n is not None and n in sizes:
            r.take(count.start(1), count.end(1))
    single = [c.name for c in r.infos if _categorical(c)]
    if want == "df" and not found and len(single) == 1 and len(r.infos) == 1:
        # one categorical column and no second one: a goodness-of-fit test over its categories
        spec = TextbookSpec(kind="goodness_of_fit", want="df", columns=single)
        return r.result(spec, "independence")
    if len(found) != 2:
        return r.result(None, "independence")
    spec = TextbookSpec(
        kind="independence",
        want=want,  # type: ignore[arg-type]
        columns=found,
        alpha=alpha,
        alpha_stated=stated,
        choices=list(r.prompt.choices),
        decimals=r.prompt.decimals,
    )
    if want == "independent" and not {c.lower() for c in r.prompt.choices} >= {"yes", "no"}:
        return r.result(None, "independence")
    return r.result(spec, "independence")


def _disjoint(r: _Reader) -> TextbookParse | None:
    cue = re.search(r"\b(disjoint|mutually exclusive)\b\W*$", r.low)
    if not cue or not r.low.startswith("are "):
        return None
    r.take(cue.start(), cue.end())
    r.take_phrase(r"^are (?:the )?(?:outcomes|events)?")
    matches = r.values()
    for m in matches:
        r.take(m.start, m.end)
        _stance(r, m.start)
    r.take_phrase(r"\bbeing (?:a|an)\b")
    if len(matches) < 2:
        return r.result(None, "disjoint")
    refs = [ValueRef(column=m.column, value=m.value, words=r.text[m.start : m.end]) for m in matches]
    spec = TextbookSpec(kind="disjoint", values=refs, choices=list(r.prompt.choices))
    return r.result(spec, "disjoint")


def _stance(r: _Reader, at: int) -> None:
    """Places the verb that introduces a value ('believes [that] the earth is warming')."""
    before = re.search(r"\b(\w+)((?: that)?(?: the)?)\s*$", r.low[:at])
    if before and before.group(1) in STANCE:
        r.take(before.start(), at)


def _flags(r: _Reader) -> list[tuple[int, int, Condition]]:
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


def _probability(r: _Reader) -> TextbookParse | None:
    cue = re.search(r"\bprobability (?:that|of) (?:a|an) (?:randomly (?:chosen|selected) )?", r.low)
    if not cue:
        return None
    r.take(cue.start(), cue.end())
    given = re.search(r"\bgiven that (?:he|she|they|it|the \w+) (?:is|are|was|were|does|do|did)?\b", r.low)
    if given:
        r.take(given.start(), given.end())
    found: list[tuple[int, int, Condition]] = _flags(r)
    flagged = {c.column for _, _, c in found}
    for m in r.values():
        if m.column in flagged:
            continue
        found.append(
            (m.start, m.end, Condition(column=m.column, op="==", value=m.value, words=f"{m.column} = {m.value}"))
        )
        _stance(r, m.start)
    for start, end, _ in found:
        r.take(start, end)
    for c, s, e in r.columns():  # 'likes In-N-Out the best': the column's own words beside its value
        if any(cond.column == c for _, _, cond in found):
            r.take(s, e)
    found.sort(key=lambda x: x[0])
    conditions = [c for _, _, c in found]
    if len(conditions) < 2 or len({c.column for c in conditions}) != len(conditions):
        return r.result(None, "probability")
    if given:
        event = [c for s, _, c in found if s < given.start()]
        population = [c for s, _, c in found if s >= given.end()]
    else:
        event, population = conditions[-1:], conditions[:-1]
    if not event or not population:
        return r.result(None, "probability")
    return r.result(PlainSpec(kind="share", population=population, event=event), "probability")


def _sample_size(r: _Reader) -> TextbookParse | None:
    """'How many participants were included in the survey?': the number of rows."""
    cue = re.fullmatch(
        r"how many (\w+) (?:were|are|was|is) (?:there )?(?:(?:included|surveyed|sampled|interviewed|asked|studied) )?"
        r"(?:in (?:the|this) (?:survey|study|sample|data|experiment|poll|dataset|data set))?\W*",
        r.low,
    )
    if not cue or cue.group(1) not in POPULATION_NOUNS:
        return None
    r.take(0, len(r.text))
    return r.result(TextbookSpec(kind="sample_size"), "sample_size")


def _two_valued(r: _Reader) -> list[str]:
    return [c.name for c in r.infos if len(_labels(c)) == 2 or (c.numeric and c.n_unique == 2)]


def _proportion(r: _Reader) -> TextbookParse | None:
    """The standard error of a sample proportion, or its confidence interval: of the one
    two-valued column (the standard error is the same for either value), or of a named value."""
    se = re.search(r"\bstandard error of (?:the )?(?:point estimate|sample proportion|proportion)\b", r.low)
    ci = re.search(r"\b(\d+(?:\.\d+)?)\s*% confidence interval for (?:p, )?(?:the )?(?:population )?proportion\b", r.low)
    if not se and not ci:
        return None
    cue = se or ci
    assert cue is not None
    r.take(cue.start(), cue.end())
    r.take_words(TEST_WORDS | {"estimate", "construct", "output", "bound", "lower", "upper", "interval", "confidence"})
    named = [v for v in r.values()]
    for v in named:
        r.take(v.start, v.end)
        _stance(r, v.start)
    columns = {v.column for v in named} or set(_two_valued(r) if se else [])
    if len(columns) != 1 or len(named) > 1:
        return r.result(None, "proportion")
    column = columns.pop()
    value = named[0].value if named else _labels(r.by_name[column])[0] if _labels(r.by_name[column]) else None
    if value is None or (ci and not named):
        return r.result(None, "proportion")
    want = "answer"
    if ci:
        want = "lower" if "lower bound" in r.low else "upper" if "upper bound" in r.low else "answer"
    level = float(ci.group(1)) / 100 if ci else 0.95
    spec = TextbookSpec(
        kind="proportion_ci" if ci else "proportion_se",
        want=want,  # type: ignore[arg-type]
        values=[ValueRef(column=column, value=value, words=r.text[named[0].start : named[0].end] if named else column)],
        alpha=1 - level,
        decimals=r.prompt.decimals,
    )
    return r.result(spec, "proportion")


def _proportion_difference(r: _Reader) -> TextbookParse | None:
    """'The absolute value of the difference in <flag> rates in the two groups': the gap between
    the share of the flag's yes in each value of the table's one other two-valued column."""
    cue = re.search(r"\bdifference in (?:the )?(.+?) (?:rates|proportions)\s+(?:in|between|of) the two groups\b", r.low)
    if not cue:
        return None
    r.take(cue.start(), cue.start(1))
    r.take(cue.end(1), cue.end())
    r.take_words(TEST_WORDS | {"estimate", "point"})
    absolute = r.take_phrase(r"\b(?:the )?absolute value of\b")
    flags = [(c, s, e) for c, s, e in r.columns() if s >= cue.start(1) and e <= cue.end(1)]
    names = {c for c, _, _ in flags}
    if len(names) != 1 or absolute is None:
        return r.result(None, "proportion_difference")
    flag = names.pop()
    for _, s, e in flags:
        r.take(s, e)
    groups = [c for c in _two_valued(r) if c != flag]
    yes = {v.strip().lower() for v in r.by_name[flag].values}
    if len(groups) != 1 or yes != {"yes", "no"}:
        return r.result(None, "proportion_difference")
    value = next(v for v in r.by_name[flag].values if v.strip().lower() == "yes")
    spec = TextbookSpec(
        kind="proportion_difference",
        columns=[flag, groups[0]],
        values=[ValueRef(column=flag, value=value, words=flag)],
        decimals=r.prompt.decimals,
    )
    return r.result(spec, "proportion_difference")


def _higher_group(r: _Reader) -> TextbookParse | None:
    """'In which group did a higher percentage of patients experience improvement?': the value of
    the named column whose rows have the larger share of a yes/no column's yes."""
    cue = re.match(r"in which (\w+) (?:did|do|does|was|were|is|are) a (higher|larger|greater|lower|smaller) "
                   r"(?:percentage|proportion|share|fraction) of\b", r.low)
    if not cue:
        return None
    r.take(0, cue.end())
    group = [c for c, s, e in r.columns() if s <= cue.start(1) < e]
    flags = [(c, s, e) for c, s, e in r.columns() if s >= cue.end() and c not in group]
    for c, s, e in r.columns():
        if c in group and s <= cue.start(1) < e:
            r.take(s, e)
    found = _flags(r)
    columns = {c for c, _, _ in flags} | {c.column for _, _, c in found}
    for _, s, e in flags:
        r.take(s, e)
    for s, e, _ in found:
        r.take(s, e)
    if len(group) != 1 or len(columns) != 1:
        return r.result(None, "higher_group")
    flag = columns.pop()
    yes = next((v for v in r.by_name[flag].values if v.strip().lower() == "yes"), None)
    if yes is None:
        return r.result(None, "higher_group")
    spec = TextbookSpec(
        kind="higher_group",
        want="statistic" if cue.group(2) in ("higher", "larger", "greater") else "answer",
        columns=[group[0]],
        values=[ValueRef(column=flag, value=yes, words=flag)],
        choices=list(r.prompt.choices),
    )
    return r.result(spec, "higher_group")


_CLASSES = (
    _column_type,
    _chi2_stated,
    _disjoint,
    _independence,
    _sample_size,
    _proportion,
    _proportion_difference,
    _higher_group,
    _probability,
)


def parse_textbook(prompt: Prompt, frame: pd.DataFrame | list[ColumnInfo]) -> TextbookParse | None:
    """The textbook question's spec, or why not; None when it is none of the classes read here."""
    infos = frame if isinstance(frame, list) else describe_columns(frame)
    if not prompt.question:
        return None
    for read in _CLASSES:
        got = read(_Reader(prompt, infos))
        if got is not None:
            return got
    return None
