"""The words the plain-question parser knows by heart: the statistics' names, the comparisons,
ordinals and number words, units after a number, the verbs that state a 0/1 act ('took the
training'), and the labels people use for the values male and female.
"""

from __future__ import annotations

import re

OPS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("standard", "deviation"), "std"),
    (("std",), "std"),
    (("variance",), "var"),
    (("average",), "mean"),
    (("mean",), "mean"),
    (("avg",), "mean"),
    (("median",), "median"),
    (("total",), "sum"),
    (("sum",), "sum"),
    (("maximum",), "max"),
    (("max",), "max"),
    (("highest",), "max"),
    (("largest",), "max"),
    (("minimum",), "min"),
    (("min",), "min"),
    (("lowest",), "min"),
    (("smallest",), "min"),
)
COMPARATORS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("greater", "than", "or", "equal", "to"), ">="),
    (("less", "than", "or", "equal", "to"), "<="),
    (("no", "more", "than"), "<="),
    (("no", "less", "than"), ">="),
    (("at", "least"), ">="),
    (("at", "most"), "<="),
    (("more", "than"), ">"),
    (("greater", "than"), ">"),
    (("higher", "than"), ">"),
    (("larger", "than"), ">"),
    (("less", "than"), "<"),
    (("fewer", "than"), "<"),
    (("lower", "than"), "<"),
    (("smaller", "than"), "<"),
    (("over",), ">"),
    (("above",), ">"),
    (("exceeding",), ">"),
    (("under",), "<"),
    (("below",), "<"),
    (("exactly",), "=="),
    (("equal", "to"), "=="),
)
AGE_COMPARATORS: dict[tuple[str, ...], str] = {
    ("older", "than"): ">",
    ("younger", "than"): "<",
    ("aged", "over"): ">",
    ("aged", "under"): "<",
}
ORDINALS = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
    "tenth": 10,
}
NUMBER_WORDS = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "twenty": 20,
}
UNITS = frozenset("year years old cm kg kilograms centimetres centimeters dollars usd percent point points".split())
ACT_VERBS = frozenset(
    "took take takes taking taken received receive receives got get gets had attended attend attends completed "
    "complete joined join participated participate enrolled enroll went underwent undergo did do does are were is "
    "was be being have has".split()
)
ALIASES = {
    "male": ("male", "m", "man", "men", "boy", "boys", "males"),
    "female": ("female", "f", "woman", "women", "girl", "girls", "females"),
}

# The structures of a question, by their cue words.
SHARE = re.compile(r"\b(?:percentage|percent|proportion|share|fraction)\s+of\b")
COUNT = re.compile(
    r"^\W*how many\b|(?<!average )(?<!mean )(?<!median )(?<!total )(?<!maximum )(?<!minimum )\b(?:number|count)\s+of\b"
)
MORE = re.compile(r"\bhow much (more|less|higher|lower|greater|smaller)\b")
RATE = re.compile(r"\b(\w+) rate (of|among|for|in)\b")
PEOPLE = frozenset("people persons passengers patients customers adults individuals respondents men women".split())
DIFFERENCE = re.compile(r"\bdifference\b")
NOT_ONE_NUMBER = re.compile(
    r"\b(?:by|per|each|every|across|versus|vs|or|grouped|breakdown|list|which|whether|top|rank|correlat\w*|plot|chart)\b"
)
SELF_DESCRIBED = (("identify", "themselves", "as"), ("describe", "themselves", "as"), ("consider", "themselves"))
"""Copulas of a survey's answer ('voters who identify themselves as conservatives'): read as 'are'."""
