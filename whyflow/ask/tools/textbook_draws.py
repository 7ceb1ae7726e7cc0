"""Textbook questions on independent draws: "three adults are randomly selected; what is the
probability that all three are between 180 and 185 cm tall?" is a binomial probability, the
share p of the population holding the event and the number of the k draws that must hold it
(all: p^k, none: (1 - p)^k, at least one, exactly / at least / at most j), read by
:class:`~whyflow.ask.tools.textbook_reader.Reader`.

The event is a category value named by its words, or a range of the one numeric column the
question names ('between 180 and 185', 'more than 30', 'less than 2'), by its name or by the
adjective a measure is said with ('tall' for a height column). The population's share is over the
rows, or over what a frequency column counts: a numeric column whose name is a count of the
drawn units ('num_of_adults' where adults are drawn) weights each row, so a table of heights and
how many adults have each is read as the adults it counts.
"""

from __future__ import annotations

import re

from whyflow.ask.tools.plain_words import NUMBER_WORDS, UNITS
from whyflow.ask.tools.textbook_reader import TEST_WORDS, Reader, TextbookParse, number, stance
from whyflow.ask.tools.textbook_spec import TextbookSpec, ValueRef
from whyflow.ask.tools.wording import POPULATION_NOUNS, same_root

__all__ = ["independent_draws"]

_COUNT = r"(?P<k>\d+|" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True)) + r")"
_UNIT = r"[a-z]+(?: (?!at\b|are\b|were\b|is\b|from\b)[a-z]+)?"
_DRAWN = re.compile(
    rf"\b(?:{_COUNT} (?P<unit>{_UNIT}) (?:are|were|is|get) (?:randomly |independently )?"
    r"(?:selected|chosen|drawn|picked|sampled)(?: at random)?"
    r"|(?:suppose (?:that )?|if )?(?:we |you )?(?:randomly )?(?:select|choose|draw|pick|sample) "
    rf"{_COUNT.replace('?P<k>', '?P<k2>')} (?P<unit2>{_UNIT})(?: at random)?)\b"
)
_HOW_MANY = re.compile(
    r"\bprobability (?:that |of )?(?:(?P<all>all(?: (?P<n1>\w+))?(?: of them)?)|(?P<none>none(?: of them)?|no one)"
    r"|(?P<least1>at least one(?: of them)?)|(?P<cmp>exactly|at least|at most) (?P<j>\w+)(?: of them)?)"
    r"(?: (?:are|is|were|was|have|has|being))?\b"
)
_RANGE = re.compile(
    r"\b(?:between (?P<lo>-?\d+(?:\.\d+)?) and (?P<hi>-?\d+(?:\.\d+)?)"
    r"|(?P<gt>more than|greater than|over|above|taller than|older than|heavier than|longer than) (?P<x>-?\d+(?:\.\d+)?)"
    r"|(?P<lt>less than|fewer than|under|below|shorter than|younger than|lighter than) (?P<y>-?\d+(?:\.\d+)?))"
    r"(?: (?P<unit>[a-z]+))?"
)
MEASURE_ADJECTIVES = {
    "tall": ("height", "stature"),
    "taller": ("height", "stature"),
    "shorter": ("height", "stature"),
    "old": ("age",),
    "older": ("age",),
    "younger": ("age",),
    "heavy": ("weight", "mass"),
    "heavier": ("weight", "mass"),
    "lighter": ("weight", "mass"),
    "long": ("length", "duration"),
    "longer": ("length", "duration"),
}
"""Adjectives that say a measure without naming it ('180 cm tall': a height): the words a column
of that measure is named with."""
_FREQUENCY = re.compile(r"^(?:num|number|n|count|freq|frequency)_(?:of_)?(?P<unit>[a-z]+)$")
"""A column named as a count of units ('num_of_adults', 'n_patients'); a bare 'count' or 'n' may
count anything, so it weights nothing."""


def _weights(r: Reader, unit: str) -> str | None:
    """The frequency column that counts the drawn units ('num_of_adults' for adults), if any."""
    counts = []
    for c in r.infos:
        found = _FREQUENCY.match(c.name.lower().replace(".", "_"))
        if c.numeric and found and same_root(found.group("unit"), unit):
            counts.append(c.name)
    return counts[0] if len(counts) == 1 else None


def independent_draws(r: Reader) -> TextbookParse | None:
    """P(all / none / at least one / exactly j of k independent draws hold the event)."""
    drawn = _DRAWN.search(r.low)
    how = _HOW_MANY.search(r.low)
    if not drawn or not how:
        return None
    k = number(drawn.group("k") or drawn.group("k2"))
    unit_group = "unit" if drawn.group("unit") else "unit2"
    unit = drawn.group(unit_group).split()[-1]
    r.take(drawn.start(), drawn.start(unit_group))
    r.take(drawn.end(unit_group), drawn.end())
    if unit in POPULATION_NOUNS:
        r.take(drawn.end(unit_group) - len(unit), drawn.end(unit_group))
    r.take(how.start(), how.end())
    if how.group("all"):
        quantifier, hits = "all", k
        if how.group("n1") and number(how.group("n1")) != k:
            return r.result(None, "draws")
    elif how.group("none"):
        quantifier, hits = "none", 0.0
    elif how.group("least1"):
        quantifier, hits = "at_least", 1.0
    else:
        quantifier = {"exactly": "exactly", "at least": "at_least", "at most": "at_most"}[how.group("cmp")]
        hits = number(how.group("j"))
    r.take_words(TEST_WORDS | {"probability", "what"})
    if k is None or hits is None or not float(k).is_integer() or not 0 <= hits <= k or k < 1:
        return r.result(None, "draws")
    weights = _weights(r, unit)
    event = _RANGE.search(r.low, how.end())
    values = [v for v in r.values() if v.start >= how.end()]
    spec_values: list[ValueRef] = []
    low = high = None
    measure: str | None = None
    if event and not values:
        r.take(event.start(), event.end("unit") if event.group("unit") in UNITS else event.end(event.lastindex or 0))
        if event.group("lo") is not None:
            low, high = sorted((float(event.group("lo")), float(event.group("hi"))))
        elif event.group("gt"):
            low = float(event.group("x"))
        else:
            high = float(event.group("y"))
        candidates = {c for c, s, e in r.columns() if r.by_name[c].numeric and c != weights}
        adjectives = [m for m in re.finditer(r"[a-z]+", r.low) if m.group(0) in MEASURE_ADJECTIVES]
        for m in adjectives:
            said = [
                c.name
                for c in r.infos
                if c.numeric
                and c.name != weights
                and set(re.findall(r"[a-z]+", c.name.lower())) & set(MEASURE_ADJECTIVES[m.group(0)])
            ]
            if len(said) == 1:
                candidates.add(said[0])
                r.take(m.start(), m.end())
        if len(candidates) != 1:
            return r.result(None, "draws")
        measure = candidates.pop()
        for c, s, e in r.columns():
            if c == measure:
                r.take(s, e)
    elif values and not event:
        if len(values) != 1:
            return r.result(None, "draws")
        v = values[0]
        r.take(v.start, v.end)
        stance(r, v.start)
        spec_values = [ValueRef(column=v.column, value=v.value, words=r.text[v.start : v.end])]
        for c, s, e in r.columns():
            if c == v.column:
                r.take(s, e)
    else:
        return r.result(None, "draws")
    spec = TextbookSpec(
        kind="draws",
        want=quantifier,  # type: ignore[arg-type]
        columns=[measure] if measure else [],
        values=spec_values,
        draws=int(k),
        hits=int(hits),
        low=low,
        high=high,
        strict=low is None or high is None,  # 'more than 30' leaves 30 out; 'between 30 and 40' keeps both
        weights=weights,
        unit=unit,
        decimals=r.prompt.decimals,
    )
    return r.result(spec, "draws")
