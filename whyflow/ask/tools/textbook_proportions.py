"""Textbook questions about one proportion or two: the sample size, a proportion's standard error
and confidence interval, the difference in a yes/no rate between the two groups, and the group
with the higher (lower) share; each read by :class:`~whyflow.ask.tools.textbook_reader.Reader`.
"""

from __future__ import annotations

import re

from whyflow.ask.tools.textbook_reader import TEST_WORDS, Reader, TextbookParse, alike, flags, labels, stance
from whyflow.ask.tools.textbook_spec import TextbookSpec, ValueRef
from whyflow.ask.tools.wording import POPULATION_NOUNS

__all__ = ["higher_group", "point_estimate", "proportion", "proportion_difference", "sample_size"]


def sample_size(r: Reader) -> TextbookParse | None:
    """'How many participants were included in the survey?': the number of rows."""
    cue = re.fullmatch(
        r"how many (\w+) (?:were|are|was|is) (?:there )?(?:(?:included|surveyed|sampled|interviewed|asked|studied) )?"
        r"(?:in (?:the|this) (?:survey|study|sample|data|experiment|poll|dataset|data set))?\W*",
        r.low,
    )
    if not cue or cue.group(1) not in POPULATION_NOUNS:
        return None
    noun = (cue.start(1), cue.end(1))
    named = (
        [(s, e) for _, s, e in r.columns()] + [(m.start, m.end) for m in r.values()] + [(s, e) for s, e, _ in flags(r)]
    )
    if any(s < noun[1] and noun[0] < e for s, e in named):
        return None  # 'how many students': the rows a column or a value names, a count for the plain reader
    r.take(0, len(r.text))
    return r.result(TextbookSpec(kind="sample_size"), "sample_size")


def two_valued(r: Reader) -> list[str]:
    return [c.name for c in r.infos if len(labels(c)) == 2 or (c.numeric and c.n_unique == 2)]


def proportion(r: Reader) -> TextbookParse | None:
    """The standard error of a sample proportion, or its confidence interval: of the one
    two-valued column (the standard error is the same for either value), or of a named value."""
    se = re.search(r"\bstandard error of (?:the )?(?:point estimate|sample proportion|proportion)\b", r.low)
    ci = re.search(
        r"\b(\d+(?:\.\d+)?)\s*% confidence interval for (?:p, )?(?:the )?(?:population )?proportion\b", r.low
    )
    if not se and not ci:
        return None
    cue = se or ci
    assert cue is not None
    r.take(cue.start(), cue.end())
    r.take_words(TEST_WORDS | {"estimate", "construct", "output", "bound", "lower", "upper", "interval", "confidence"})
    named = [v for v in r.values()]
    for v in named:
        r.take(v.start, v.end)
        stance(r, v.start)
    for c, s, e in r.columns():  # 'supported a quarantine': the column's own word beside its value
        if any(v.column == c for v in named):
            r.take(s, e)
    columns = {v.column for v in named} or set(two_valued(r) if se else [])
    if len(columns) != 1 or len(named) > 1:
        return r.result(None, "proportion")
    column = columns.pop()
    value = named[0].value if named else labels(r.by_name[column])[0] if labels(r.by_name[column]) else None
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


_POINT = re.compile(
    r"\b(?:the )?point estimate(?: (?:of|for) (?:the )?(?:population |sample )?(?:proportion|share))?"
    r"(?: (?:in this case|here|from (?:the|this) (?:survey|poll|sample|study)))?\b"
)


def _described_value(r: Reader, column: str) -> str | None:
    """The one label of ``column`` that the data's description says ('whether they favored a
    quarantine' for 'favor' of favor / against), or None when it says none or several."""
    words = re.findall(r"[a-z]+", r.prompt.context.lower())
    said = [v for v in labels(r.by_name[column]) if any(alike(w, v.strip().lower()) for w in words if len(w) >= 4)]
    return said[0] if len(said) == 1 else None


def point_estimate(r: Reader) -> TextbookParse | None:
    """'What is the point estimate?': the sample proportion of the value the question names, or,
    where it names none, of the one value of the table's one two-valued column that the data's
    description names."""
    cue = _POINT.search(r.low)
    if not cue or re.search(r"\bstandard error\b|\bconfidence interval\b", r.low):
        return None
    if re.match(r"\s*(?:of|for)\b", r.low[cue.end() :]):
        return None  # 'the point estimate of the difference in rates': an estimate of something else
    r.take(cue.start(), cue.end())
    r.take_words(TEST_WORDS | {"estimate", "point"})
    named = r.values()
    for v in named:
        r.take(v.start, v.end)
        stance(r, v.start)
    for c, s, e in r.columns():
        if any(v.column == c for v in named):
            r.take(s, e)
    if len(named) > 1:
        return r.result(None, "point_estimate")
    value: str | None
    if named:
        column, value, words = named[0].column, named[0].value, r.text[named[0].start : named[0].end]
    else:
        columns = two_valued(r)
        if len(columns) != 1:
            return r.result(None, "point_estimate")
        column, value = columns[0], _described_value(r, columns[0])
        words = next((w for w in re.findall(r"[A-Za-z]+", r.prompt.context) if value and alike(w.lower(), value)), "")
    if value is None:
        return r.result(None, "point_estimate")
    spec = TextbookSpec(
        kind="proportion_point",
        values=[ValueRef(column=column, value=value, words=words)],
        described=not named,
        decimals=r.prompt.decimals,
    )
    return r.result(spec, "point_estimate")


def proportion_difference(r: Reader) -> TextbookParse | None:
    """'The absolute value of the difference in <flag> rates in the two groups': the gap between
    the share of the flag's yes in each value of the table's one other two-valued column."""
    cue = re.search(r"\bdifference in (?:the )?(.+?) (?:rates|proportions)\s+(?:in|between|of) the two groups\b", r.low)
    if not cue:
        return None
    r.take(cue.start(), cue.start(1))
    r.take(cue.end(1), cue.end())
    r.take_words(TEST_WORDS | {"estimate", "point"})
    absolute = r.take_phrase(r"\b(?:the )?absolute value of\b")
    mentioned = [(c, s, e) for c, s, e in r.columns() if s >= cue.start(1) and e <= cue.end(1)]
    names = {c for c, _, _ in mentioned}
    if len(names) != 1 or absolute is None:
        return r.result(None, "proportion_difference")
    flag = names.pop()
    for _, s, e in mentioned:
        r.take(s, e)
    groups = [c for c in two_valued(r) if c != flag]
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


def higher_group(r: Reader) -> TextbookParse | None:
    """'In which group did a higher percentage of patients experience improvement?': the value of
    the named column whose rows have the larger share of a yes/no column's yes."""
    cue = re.match(
        r"in which (\w+) (?:did|do|does|was|were|is|are) a (higher|larger|greater|lower|smaller) "
        r"(?:percentage|proportion|share|fraction) of\b",
        r.low,
    )
    if not cue:
        return None
    r.take(0, cue.end())
    group = [c for c, s, e in r.columns() if s <= cue.start(1) < e]
    mentioned = [(c, s, e) for c, s, e in r.columns() if s >= cue.end() and c not in group]
    for c, s, e in r.columns():
        if c in group and s <= cue.start(1) < e:
            r.take(s, e)
    found = flags(r)
    columns = {c for c, _, _ in mentioned} | {c.column for _, _, c in found}
    for _, s, e in mentioned:
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


_EQUAL = re.compile(
    r"\bthe (?:proportion|share|percentage|fraction) of (?P<g1>[^,.?]+?) (?:who|that|which) (?P<event>[^,.?]+?) "
    r"(?:is|are|was|were) (?:equal to|the same as) (?:that|the (?:proportion|share|percentage|fraction)) of "
    r"(?P<g2>[^,.?]+)"
)
_LEVEL = re.compile(
    r"\b(?:with |at )?(?:a |the )?(?:(?P<a>\d+(?:\.\d+)?)\s*% (?:significance level|level of significance)"
    r"|significance level of (?P<b>\d+(?:\.\d+)?)\s*%)"
)


def _groups(r: Reader, start: int, end: int) -> list[tuple[int, int, str, str]]:
    """(start, end, column, value) of the values or yes/no flags inside a span of the question."""
    marked = [(s, e, c.column, str(c.value)) for s, e, c in flags(r) if start <= s and e <= end]
    flagged = {column for _, _, column, _ in marked}
    named = [(v.start, v.end, v.column, v.value) for v in r.values() if start <= v.start and v.end <= end]
    return marked + [g for g in named if g[2] not in flagged]


def equal_proportions(r: Reader) -> TextbookParse | None:
    """'The proportion of <A> who <event> is equal to that of <B>': the two-sample z-test of
    proportions (pooled under the null, two-sided) of the event's share between the rows of A
    and those of B, A and B two values of one column (or a flag and its negation)."""
    cue = _EQUAL.search(r.low)
    if not cue:
        return None
    r.take(cue.start(), cue.start("g1"))
    r.take(cue.end("event"), cue.start("g2"))
    r.take(cue.end("g1"), cue.start("event"))  # 'who'
    first, second = _groups(r, cue.start("g1"), cue.end("g1")), _groups(r, cue.start("g2"), cue.end("g2"))
    events = [v for v in r.values() if cue.start("event") <= v.start and v.end <= cue.end("event")]
    for (s, e, column, _), (g_start, g_end) in [(g, (cue.start("g1"), cue.end("g1"))) for g in first] + [
        (g, (cue.start("g2"), cue.end("g2"))) for g in second
    ]:
        r.take(s, e)
        parts = [p for p in re.findall(r"[a-z]+", column.lower()) if len(p) >= 4]
        for w in re.finditer(r"[a-z]+", r.low[g_start:g_end]):  # 'college graduates' for 'college_grad'
            if any(w.group(0).startswith(p) for p in parts):
                r.take(g_start + w.start(), g_start + w.end())
    for v in events:
        r.take(v.start, v.end)
    r.take_words(TEST_WORDS | {"hypothesis", "proportion", "proportions", "equal"})
    level = _LEVEL.search(r.low)
    if level:
        r.take(level.start(), level.end())
    want = (
        "p_value"
        if "p-value" in r.low
        else "statistic"
        if re.search(r"\b(?:test statistic|z-statistic|z statistic|z-score)\b", r.low)
        else None
    )
    if want == "statistic":
        r.take_phrase(r"\b(?:test statistic|z-statistic|z statistic|z-score)\b")
    if re.search(r"\baccept or reject\b|\breject or accept\b", r.low):
        r.take_phrase(r"\baccept or reject\b|\breject or accept\b")
        want = "decision" if level else None
    if (
        want is None
        or len(first) != 1
        or len(second) != 1
        or len(events) != 1
        or first[0][2] != second[0][2]
        or first[0][3] == second[0][3]
        or events[0].column == first[0][2]
    ):
        return r.result(None, "equal_proportions")
    alpha = float(level.group("a") or level.group("b")) / 100 if level else 0.05
    group = first[0][2]
    spec = TextbookSpec(
        kind="two_proportion_z",
        want=want,  # type: ignore[arg-type]
        columns=[group],
        values=[
            ValueRef(column=events[0].column, value=events[0].value, words=r.text[events[0].start : events[0].end]),
            ValueRef(column=group, value=first[0][3], words=r.text[first[0][0] : first[0][1]]),
            ValueRef(column=group, value=second[0][3], words=r.text[second[0][0] : second[0][1]]),
        ],
        alpha=alpha,
        alpha_stated=level is not None,
        choices=list(r.prompt.choices),
        decimals=r.prompt.decimals,
    )
    return r.result(spec, "equal_proportions")
