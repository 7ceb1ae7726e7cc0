"""Textbook questions testing one proportion against a stated value: "the null hypothesis that
the proportion of cured patients is 0.5; identify the p-value" is the one-sample z-test of a
proportion (statsmodels' proportions_ztest, its standard error from the null value as textbooks
teach it), two-sided unless the question says the alternative ('greater than 0.5'), read by
:class:`~whyflow.ask.tools.textbook_reader.Reader`.
"""

from __future__ import annotations

import re

from whyflow.ask.tools.textbook_reader import TEST_WORDS, Reader, TextbookParse, flags, stance
from whyflow.ask.tools.textbook_spec import TextbookSpec, ValueRef
from whyflow.ask.tools.wording import POPULATION_NOUNS

__all__ = ["one_proportion_test"]

_RELATIONS = {
    "is": "two-sided",
    "equals": "two-sided",
    "is equal to": "two-sided",
    "=": "two-sided",
    "is different from": "two-sided",
    "differs from": "two-sided",
    "is not": "two-sided",
    "is greater than": "larger",
    "is more than": "larger",
    "is higher than": "larger",
    "is above": "larger",
    "exceeds": "larger",
    "is less than": "smaller",
    "is lower than": "smaller",
    "is smaller than": "smaller",
    "is below": "smaller",
}
_RELATIONS |= {k.removeprefix("is "): v for k, v in _RELATIONS.items() if k.startswith("is ") and k != "is not"}
"""'is greater than', or 'greater than' where the copula opens the question ('Is the proportion of
smokers less than 25%?')."""
_CLAIM = re.compile(
    r"\b(?:the )?(?:population |true )?(?:proportion|share|percentage|fraction) of (?P<event>[^,.?]+?) "
    r"(?P<rel>" + "|".join(sorted((re.escape(k) for k in _RELATIONS), key=len, reverse=True)) + r") "
    r"(?P<p0>\d*\.\d+|\d+(?:\.\d+)?\s*%|one half|half)(?!\w)"
)
_LEVEL = re.compile(
    r"\b(?:with |at )?(?:a |the )?(?:(?P<a>\d+(?:\.\d+)?)\s*% (?:significance level|level of significance)"
    r"|significance level of (?P<b>\d+(?:\.\d+)?)\s*%)"
)
_STATISTIC = re.compile(r"\b(?:test statistic|z-statistic|z statistic|z-score|z score|z value|z-value)\b")


def _null_value(text: str) -> float | None:
    if text in ("half", "one half"):
        return 0.5
    value = float(text.rstrip("%").strip()) / (100 if text.endswith("%") else 1)
    return value if 0 < value < 1 else None


def one_proportion_test(r: Reader) -> TextbookParse | None:
    """The one-sample z-test of the share of a value against a stated proportion."""
    claim = _CLAIM.search(r.low)
    if not claim:
        return None
    p0 = _null_value(claim.group("p0"))
    r.take(claim.start(), claim.start("event"))
    r.take(claim.end("event"), claim.end())
    alternative = _RELATIONS[claim.group("rel")]
    side = re.search(r"\b(one|two)-(?:sided|tailed)\b", r.low)
    if side:
        r.take(side.start(), side.end())
        if (side.group(1) == "two") != (alternative == "two-sided"):
            return r.result(None, "one_proportion_test")  # 'one-sided' without a direction: unsaid
    events = [v for v in r.values() if claim.start("event") <= v.start and v.end <= claim.end("event")]
    marked = [(s, e, c) for s, e, c in flags(r) if claim.start("event") <= s and e <= claim.end("event")]
    for v in events:
        r.take(v.start, v.end)
        stance(r, v.start)
    for s, e, _ in marked:
        r.take(s, e)
    named = {v.column for v in events} | {c.column for _, _, c in marked}
    for c, s, e in r.columns():
        if c in named:
            r.take(s, e)
    for noun in re.finditer(r"[a-z]+", r.low[claim.start("event") : claim.end("event")]):
        if noun.group(0) in POPULATION_NOUNS:
            r.take(claim.start("event") + noun.start(), claim.start("event") + noun.end())
    r.take_words(TEST_WORDS | {"hypothesis", "proportion", "one-sample", "z-test", "z", "report", "what"})
    r.take_phrase(r"\bone-sample z-test(?: of (?:a|one) proportion)?\b|\bz-test\b")
    level = _LEVEL.search(r.low)
    if level:
        r.take(level.start(), level.end())
    want = "p_value" if "p-value" in r.low else "statistic" if _STATISTIC.search(r.low) else None
    if want == "statistic":
        r.take_phrase(_STATISTIC.pattern)
    if re.search(r"\baccept or reject\b|\breject or accept\b", r.low):
        r.take_phrase(r"\baccept or reject\b|\breject or accept\b")
        want = "decision" if level else None
    refs = [ValueRef(column=v.column, value=v.value, words=r.text[v.start : v.end]) for v in events]
    refs += [ValueRef(column=c.column, value=str(c.value), words=r.text[s:e]) for s, e, c in marked]
    if want is None or p0 is None or len(refs) != 1:
        return r.result(None, "one_proportion_test")
    spec = TextbookSpec(
        kind="one_proportion_z",
        want=want,  # type: ignore[arg-type]
        values=refs,
        null_value=p0,
        alternative=alternative,  # type: ignore[arg-type]
        alpha=float(level.group("a") or level.group("b")) / 100 if level else 0.05,
        alpha_stated=level is not None,
        choices=list(r.prompt.choices),
        decimals=r.prompt.decimals,
    )
    return r.result(spec, "one_proportion_test")
