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
- the union of events (:mod:`whyflow.ask.tools.textbook_events`): "the probability a randomly
  selected <unit> has <a> or <b>", the share of rows holding either;
- a conditional probability: "the probability that a randomly chosen <A> <B>", "... <B> given that
  he is <A>": the share P(B | A) of :mod:`whyflow.ask.tools.plain_ops`;
- the difference of two means on the same rows (:mod:`whyflow.ask.tools.textbook_means`): "the
  null hypothesis that there is no difference in the average <measure> in <A> and <B>", a paired
  t-test;
- a numeric column's median, quartiles or interquartile range
  (:mod:`whyflow.ask.tools.textbook_quartiles`);
- a numeric column's skew direction (:mod:`whyflow.ask.tools.textbook_shape`);
- a study's design: "is this study an experiment or an observational study?", from the
  description's words on random assignment;
- one proportion or two (:mod:`whyflow.ask.tools.textbook_proportions`): the sample size, a
  proportion's standard error and confidence interval, a difference in rates, the higher group,
  the two-sample z-test of equal proportions.

A word no reading places (not a column, a value, a number, a test's own word or a function word)
means no spec: :class:`TextbookParse` then carries the words it could not read.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from whyflow.ask.tools.plain_spec import Condition, PlainSpec
from whyflow.ask.tools.slots import ColumnInfo, describe_columns
from whyflow.ask.tools.textbook_distributions import distribution_fit, z_score
from whyflow.ask.tools.textbook_draws import independent_draws
from whyflow.ask.tools.textbook_events import union
from whyflow.ask.tools.textbook_expected import expected_count
from whyflow.ask.tools.textbook_means import paired_difference
from whyflow.ask.tools.textbook_prompt import Prompt
from whyflow.ask.tools.textbook_proportion_test import one_proportion_test
from whyflow.ask.tools.textbook_proportions import (
    equal_proportions,
    higher_group,
    point_estimate,
    proportion,
    proportion_difference,
    sample_size,
)
from whyflow.ask.tools.textbook_quartiles import quartile
from whyflow.ask.tools.textbook_reader import (
    OUTCOME_NOUNS,
    TEST_WORDS,
    Reader,
    TextbookParse,
    categorical,
    flags,
    labels,
    number,
    recodes,
    stance,
)
from whyflow.ask.tools.textbook_shape import skew_direction
from whyflow.ask.tools.textbook_spec import TextbookSpec, ValueRef

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["TextbookParse", "parse_textbook"]


def _column_type(r: Reader) -> TextbookParse | None:
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
    decided = "categorical" if labels(info) or not info.numeric else None
    if info.numeric and (info.n_unique or 0) > 12:
        decided = "numerical"
    if decided is None:
        return r.result(None, "column_type")
    spec = TextbookSpec(kind="column_type", columns=[column], choices=list(r.prompt.choices))
    return r.result(spec, "column_type")


def _chi2_stated(r: Reader) -> TextbookParse | None:
    stat = re.search(
        r"\b(?:x2|x\^2|χ2|χ²|chi-square statistic|chi-squared statistic)\s*(?:=|of|is)\s*(\d+(?:\.\d+)?)", r.low
    )
    dof = re.search(r"\b(\w+)\s+degrees?\s+of\s+freedom\b", r.low)
    if not stat or not dof or "p-value" not in r.low:
        return None
    df = number(dof.group(1))
    if df is None or not float(df).is_integer():
        return r.result(None, "chi2_stated")
    r.take(stat.start(), stat.end())
    r.take(dof.start(), dof.end())
    r.take_words(TEST_WORDS)
    spec = TextbookSpec(
        kind="chi2_stated", want="p_value", statistic=float(stat.group(1)), df=int(df), decimals=r.prompt.decimals
    )
    return r.result(spec, "chi2_stated")


def _independence(r: Reader) -> TextbookParse | None:
    cue = re.search(r"\bindependent\b|\bindependence\b|\bchi-square test\b|\bchi-squared test\b", r.low)
    dof_only = "degrees of freedom" in r.low and "null hypothesis" in r.low and "chi-square distribution" in r.low
    if not cue and not dof_only:
        return None
    r.take_words(TEST_WORDS | {"independent", "independence"})
    r.take_phrase(r"\bwhether or not\b")
    r.take_phrase(r"\bthere is no difference in\b|\bno difference in\b|\bhad no\b|\bhas no\b|\bhave no\b")
    r.take_phrase(r"\b(?:is|are) not different\b|\b(?:does|do) not differ(?: in)?\b")
    r.take_phrase(r"\bunder the null hypothesis\b")
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
        if categorical(r.by_name[c]):
            r.take(s, e)
            if c not in found:
                found.append(c)
    for start, end, cond in flags(r):  # 'college grads and non-grads': the named column's two values
        if cond.column in found:
            r.take(start, end)
    count = re.search(r"\b(two|three|four|five|six|\d+) (\w+)", r.low)
    named = list(found)
    for v in r.values():  # a value names its column; a value of a named column would be a filter: unread
        if v.column in named:
            continue
        if v.column not in found:
            found.append(v.column)
        r.take(v.start, v.end)
    outcome = [m for m in re.finditer(r"\b\w+\b", r.low) if m.group(0) in OUTCOME_NOUNS]
    others = [
        c.name
        for c in r.infos
        if categorical(c)
        and c.name not in found
        and (c.n_unique or 0) >= 2
        and not any(recodes(r.frame, c.name, f) for f in found)  # the named variable written twice
    ]
    if len(found) == 1 and outcome and len(others) == 1:
        found.append(others[0])
        for m in outcome:
            r.take(m.start(), m.end())
        r.take_phrase(r"\b(?:on|about) the (?:topic|subject|question|issue|matter) of\b")  # what the opinion is on
    if count and found:  # 'the three treatments': the number of groups, which must be the column's
        n = number(count.group(1))
        sizes = {r.by_name[c].n_unique for c in found}
        if n is not None and n in sizes:
            r.take(count.start(1), count.end(1))
    single = [c.name for c in r.infos if categorical(c)]
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


def _disjoint(r: Reader) -> TextbookParse | None:
    cue = re.search(r"\b(disjoint|mutually exclusive)\b\W*$", r.low)
    if not cue or not r.low.startswith("are "):
        return None
    r.take(cue.start(), cue.end())
    r.take_phrase(r"^are (?:the )?(?:outcomes|events)?")
    matches = r.values()
    for m in matches:
        r.take(m.start, m.end)
        stance(r, m.start)
    r.take_phrase(r"\bbeing (?:a|an)\b")
    if len(matches) < 2:
        return r.result(None, "disjoint")
    refs = [ValueRef(column=m.column, value=m.value, words=r.text[m.start : m.end]) for m in matches]
    spec = TextbookSpec(kind="disjoint", values=refs, choices=list(r.prompt.choices))
    return r.result(spec, "disjoint")


def _probability(r: Reader) -> TextbookParse | None:
    cue = re.search(r"\bprobability (?:that|of) (?:a|an) (?:randomly (?:chosen|selected) )?", r.low)
    if not cue:
        return None
    r.take(cue.start(), cue.end())
    given = re.search(r"\bgiven that (?:he|she|they|it|the \w+) (?:is|are|was|were|does|do|did)?\b", r.low)
    if given:
        r.take(given.start(), given.end())
    found: list[tuple[int, int, Condition]] = flags(r)
    flagged = {c.column for _, _, c in found}
    for m in r.values():
        if m.column in flagged:
            continue
        found.append(
            (m.start, m.end, Condition(column=m.column, op="==", value=m.value, words=f"{m.column} = {m.value}"))
        )
        stance(r, m.start)
    for start, end, _ in found:
        r.take(start, end)
    for c, s, e in r.columns():  # 'likes In-N-Out the best': the column's own words beside its value
        if any(cond.column == c for _, _, cond in found):
            r.take(s, e)
    found.sort(key=lambda x: x[0])
    if any(re.search(r"\bor\b", r.low[a[1] : b[0]]) for a, b in zip(found, found[1:], strict=False)):
        return r.result(None, "probability")  # 'rent or grade b': a union, never a condition on the other
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


def _study_design(r: Reader) -> TextbookParse | None:
    """'Is this study an experiment or an observational study?': an experiment when the
    description says the units were assigned at random; otherwise not decided (a description may
    leave out how the groups were formed)."""
    forms = (r"an experiment or an observational study", r"an observational study or an experiment")
    cue = re.fullmatch(rf"is (?:this|the) (?:study|research|data) (?:{'|'.join(forms)})\W*", r.low)
    if not cue:
        return None
    r.take(0, len(r.text))
    said = re.search(
        r"\b(?:randomi[sz]ed|randomly (?:assigned|allocated)|random (?:assignment|allocation))\b",
        r.prompt.context,
        re.I,
    )
    if said is None:
        return r.result(None, "study_design")
    spec = TextbookSpec(kind="study_design", evidence=said.group(0), choices=list(r.prompt.choices))
    return r.result(spec, "study_design")


_CLASSES = (
    _study_design,
    expected_count,
    _column_type,
    _chi2_stated,
    _disjoint,
    _independence,
    paired_difference,
    quartile,
    z_score,
    distribution_fit,
    skew_direction,
    sample_size,
    equal_proportions,
    one_proportion_test,
    point_estimate,
    proportion,
    proportion_difference,
    higher_group,
    independent_draws,
    union,
    _probability,
)


def parse_textbook(
    prompt: Prompt, frame: pd.DataFrame | list[ColumnInfo], columns: list[ColumnInfo] | None = None
) -> TextbookParse | None:
    """The textbook question's spec, or why not; None when it is none of the classes read here.
    ``columns`` are the frame's columns as the ask flow describes them (with the phrases of the
    dataset's description); without them they are read from the frame."""
    infos = columns if columns is not None else frame if isinstance(frame, list) else describe_columns(frame)
    if not prompt.question:
        return None
    for read in _CLASSES:
        got = read(Reader(prompt, infos, None if isinstance(frame, list) else frame))
        if got is not None:
            return got
    return None
