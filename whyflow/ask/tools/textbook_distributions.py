"""Textbook questions on one numeric column's distribution, read by
:class:`~whyflow.ask.tools.textbook_reader.Reader`:

- the z-score of a given value: "what is the z-score of a height of 180 cm?", "how many standard
  deviations above the mean is an age of 60?" is (x - mean) / sd over the column's known values,
  the sample standard deviation (n - 1);
- a fitted distribution's parameter: "fit an exponential distribution to the waiting times; what
  is its rate?", "if weight is normally distributed, estimate its mean and standard deviation" is
  the maximum-likelihood fit of scipy (exponential from 0: rate 1 / mean; normal: the mean and the
  standard deviation with n in the denominator; Poisson: the mean).

The column is the one numeric column the question names; with none named or several, nothing is
computed.
"""

from __future__ import annotations

import re

from whyflow.ask.tools.plain_words import UNITS
from whyflow.ask.tools.textbook_reader import TEST_WORDS, Reader, TextbookParse
from whyflow.ask.tools.textbook_spec import TextbookSpec

__all__ = ["distribution_fit", "z_score"]

_Z = re.compile(
    r"\b(?:what is |find |compute |calculate )?(?:the )?(?:z-score|z score|standardi[sz]ed (?:value|score)|standard score)"
    r" (?:of|for) (?:an? |the )?(?P<mid>[a-z_ ]*?)\s*(?:of )?(?P<x>-?\d+(?:\.\d+)?)(?: (?P<unit>[a-z]+))?\b"
)
_SD_AWAY = re.compile(
    r"\bhow many standard deviations (?:above or below|below or above|above|below|from|away from) the mean is "
    r"(?:an? |the )?(?P<mid>[a-z_ ]*?)\s*(?:of )?(?P<x>-?\d+(?:\.\d+)?)(?: (?P<unit>[a-z]+))?\b"
)
_FIT = re.compile(
    r"\b(?:fit(?:ted|ting)? (?:an? |the )?(?P<d1>normal|gaussian|exponential|poisson) (?:distribution|model)"
    r"|(?:follows?|has|have) (?:an? |the )?(?P<d2>normal|gaussian|exponential|poisson) distribution"
    r"|(?:is|are) (?P<d3>normally|exponentially|poisson) distributed"
    r"|(?:an? |the )?(?P<d4>normal|gaussian|exponential|poisson) (?:distribution|model) (?:fitted|fit) to)\b"
)
_PARAMETER = re.compile(
    r"\b(?P<p>rate(?: parameter)?|lambda|λ|mean(?: parameter)?|average|standard deviation|sd|scale(?: parameter)?)\b"
)
_KIND = {"normal": "normal", "gaussian": "normal", "normally": "normal"}
_KIND |= {"exponential": "exponential", "exponentially": "exponential", "poisson": "poisson"}
_WANT = {
    ("exponential", "rate"): "rate",
    ("exponential", "lambda"): "rate",
    ("exponential", "mean"): "mean",
    ("exponential", "scale"): "mean",
    ("normal", "mean"): "mean",
    ("normal", "standard deviation"): "sd",
    ("normal", "sd"): "sd",
    ("poisson", "rate"): "rate",
    ("poisson", "lambda"): "rate",
    ("poisson", "mean"): "rate",
}


def _one_numeric(r: Reader, start: int, end: int) -> str | None:
    """The one numeric column named between ``start`` and ``end`` (placing its words), else None."""
    named = {c for c, s, e in r.columns() if start <= s and e <= end and r.by_name[c].numeric}
    if len(named) != 1:
        return None
    column = named.pop()
    for c, s, e in r.columns():
        if c == column:
            r.take(s, e)
    return column


def z_score(r: Reader) -> TextbookParse | None:
    """(x - mean) / sd of the column the question names, at the value it gives."""
    cue = _Z.search(r.low) or _SD_AWAY.search(r.low)
    if not cue:
        return None
    r.take(cue.start(), cue.start("mid"))
    r.take(cue.end("mid"), cue.end("x"))
    if cue.group("unit") in UNITS:
        r.take(cue.start("unit"), cue.end("unit"))
    column = _one_numeric(r, cue.start("mid"), cue.end("mid"))
    r.take_words(TEST_WORDS | {"what"})
    if column is None:
        return r.result(None, "z_score")
    spec = TextbookSpec(kind="z_score", columns=[column], given=float(cue.group("x")), decimals=r.prompt.decimals)
    return r.result(spec, "z_score")


def distribution_fit(r: Reader) -> TextbookParse | None:
    """A parameter of a normal, exponential or Poisson distribution fitted to the named column."""
    fit = _FIT.search(r.low)
    if not fit:
        return None
    kind = _KIND[next(g for g in fit.groups() if g)]
    asked = [m for m in _PARAMETER.finditer(r.low) if not (fit.start() <= m.start() < fit.end())]
    if not asked:
        return None  # 'is weight normally distributed?': a question on the shape, not a fit
    if any(re.match(r"\s*(?:of |=\s*|is )?-?\d", r.low[m.end() :]) for m in asked):
        return None  # 'normally distributed with mean 70': a stated distribution, not one fitted
    r.take(fit.start(), fit.end())
    wants = set()
    for m in asked:
        word = m.group("p").split()[0] if m.group("p") != "standard deviation" else "standard deviation"
        word = {"average": "mean", "λ": "lambda"}.get(word, word)
        want = _WANT.get((kind, word))
        if want is None:
            return r.result(None, "distribution_fit")
        wants.add(want)
        r.take(m.start(), m.end())
    column = _one_numeric(r, 0, len(r.text))
    r.take_words(
        TEST_WORDS
        | {"what", "estimate", "estimated", "fitted", "parameter", "its", "maximum", "likelihood", "suppose", "assume"}
    )
    r.take_phrase(r"\bmaximum likelihood estimate\b|\bmaximum-likelihood estimate\b|\bmle\b")
    r.take_phrase(r"\bto (?:the )?data\b|\bof (?:the|this) distribution\b")
    if column is None or len(wants) != 1:
        return r.result(None, "distribution_fit")
    spec = TextbookSpec(
        kind="distribution_fit",
        want=wants.pop(),  # type: ignore[arg-type]
        columns=[column],
        distribution=kind,  # type: ignore[arg-type]
        decimals=r.prompt.decimals,
    )
    return r.result(spec, "distribution_fit")
