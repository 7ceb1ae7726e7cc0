"""The form an answer must take, read from the question, and the answer written in that form.

Questions often prescribe the form: "rounded to two decimal places", "in dollars", "list the...",
or named tokens such as ``@mean_fare[mean_value]`` (the InfiAgent-DABench convention, where the
answer must read ``@mean_fare[34.65]``). :func:`parse_output_format` reads those hints;
:func:`format_answer` writes a result that code computed in that form. It never invents a number:
every value it prints is taken from ``result``.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Token", "OutputFormat", "parse_output_format", "format_answer", "format_value", "flatten_result"]

_WORDS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_DECIMALS = re.compile(
    r"(\d+|zero|one|two|three|four|five|six)\s*(?:-\s*)?(?:decimal\s*places?|decimal\s*points?|decimals?|d\.?p\.?\b|"
    r"digits?\s+after\s+the\s+decimal(?:\s+point)?)",
    re.IGNORECASE,
)
_INTEGER = re.compile(r"nearest\s+(?:integer|whole\s+number)|as\s+an?\s+(?:integer|whole\s+number)", re.IGNORECASE)
_TOKEN = re.compile(r"@([A-Za-z_][A-Za-z0-9_]*)\[([^\]]*)\]")
_UNITS = (
    "dollars",
    "usd",
    "euros",
    "years",
    "months",
    "days",
    "hours",
    "minutes",
    "seconds",
    "kg",
    "km",
    "miles",
    "percent",
)
_UNIT = re.compile(r"\bin\s+(" + "|".join(_UNITS) + r")\b", re.IGNORECASE)
_LIST = re.compile(r"\b(?:as\s+a\s+list|list\s+(?:the|all|of)|comma[- ]separated|which\s+\w+\s+are)\b", re.IGNORECASE)
_ALIASES = {
    "r": ("correlation", "coefficient", "r", "pearson_r", "corr"),
    "p": ("p_value", "pvalue", "p", "significance"),
    "statistic": ("statistic", "stat", "t", "t_statistic", "chi2", "f", "u", "w", "z", "test_statistic"),
    "mean": ("mean", "average", "avg"),
    "count": ("count", "n", "number", "total"),
    "slope": ("slope", "coef", "coefficient_x", "beta"),
    "intercept": ("intercept", "const"),
}


class Token(BaseModel):
    """A named answer token the question prescribes: ``@name[placeholder]``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    placeholder: str


class OutputFormat(BaseModel):
    """How the answer must look: rounding, a unit, a list, named tokens."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    decimals: int | None = Field(default=None, description="Round numbers to this many decimals (None: 4 significant).")
    unit: str | None = None
    as_list: bool = False
    tokens: tuple[Token, ...] = ()


def parse_output_format(question: str) -> OutputFormat:
    """Read the answer's prescribed form from the question (absent hints stay at their defaults)."""
    decimals: int | None = None
    match = _DECIMALS.search(question)
    if match:
        word = match.group(1).lower()
        decimals = int(word) if word.isdigit() else _WORDS[word]
    elif _INTEGER.search(question):
        decimals = 0
    unit = _UNIT.search(question)
    tokens = tuple(Token(name=m.group(1), placeholder=m.group(2).strip()) for m in _TOKEN.finditer(question))
    return OutputFormat(
        decimals=decimals,
        unit=unit.group(1).lower() if unit else None,
        as_list=bool(_LIST.search(question)),
        tokens=tokens,
    )


def format_value(value: Any, fmt: OutputFormat) -> str:
    """One value as text: numbers rounded as asked (else to 4 significant digits), lists joined."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return "not available"
        if fmt.decimals is not None:
            return f"{round(value, fmt.decimals):.{fmt.decimals}f}"
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        if abs(value) >= 1000:
            return f"{value:.2f}"
        return f"{value:.4g}"
    if isinstance(value, list | tuple):
        return ", ".join(format_value(v, fmt) for v in value)
    if isinstance(value, Mapping):
        return "; ".join(f"{k}: {format_value(v, fmt)}" for k, v in value.items())
    return str(value)


def flatten_result(result: Any) -> dict[str, Any]:
    """Scalar entries of a (possibly nested) result dict, keys joined with '_' and lower-cased."""
    flat: dict[str, Any] = {}
    if isinstance(result, Mapping):
        for key, value in result.items():
            if isinstance(value, Mapping):
                for sub, inner in flatten_result(value).items():
                    flat[f"{str(key).lower()}_{sub}"] = inner
            else:
                flat[str(key).lower()] = value
    return flat


def _token_value(token: Token, result: Any, index: int, count: int) -> Any:
    """The part of ``result`` a token names: the scalar itself, or the dict entry its name points to."""
    if not isinstance(result, Mapping):
        return (
            result
            if count == 1 or not isinstance(result, list | tuple)
            else (result[index] if index < len(result) else None)
        )
    flat = flatten_result(result)
    if not flat:
        return None
    wanted = [token.name.lower(), token.placeholder.lower()]
    for name in wanted:
        if name in flat:
            return flat[name]
    for alias_group in _ALIASES.values():
        if any(
            any(a == part for part in re.split(r"_", name)) or a in name
            for name in wanted
            for a in alias_group
            if len(a) > 2
        ):
            for key in flat:
                if key in alias_group or any(a == key for a in alias_group):
                    return flat[key]
    best = difflib.get_close_matches(wanted[0], list(flat), n=1, cutoff=0.5)
    if best:
        return flat[best[0]]
    return list(flat.values())[index] if count == len(flat) else None


def format_answer(
    question: str, result: Any, output_format: OutputFormat | None = None, template: str | None = None
) -> str:
    """The answer in the form the question asks for, every number taken from ``result``.

    With tokens (``@mean_fare[mean_value]``) the answer is the filled tokens, one per line;
    otherwise the example's sentence ``template`` ({result} and {result[key]} filled), or the
    formatted result with its unit.
    """
    fmt = output_format or parse_output_format(question)
    if fmt.tokens:
        lines = []
        for index, token in enumerate(fmt.tokens):
            value = _token_value(token, result, index, len(fmt.tokens))
            shown = format_value(value, fmt) if value is not None else "not computed"
            lines.append(f"@{token.name}[{shown}]")
        return "\n".join(lines)
    text = format_value(result, fmt)
    if fmt.unit and isinstance(result, int | float) and not isinstance(result, bool):
        text = f"{text} {fmt.unit}"
    if template:
        return _fill_sentence(template, result, text, fmt)
    return text


def _fill_sentence(template: str, result: Any, text: str, fmt: OutputFormat) -> str:
    """Fill ``{result}`` and ``{result[key]}`` placeholders of an answer sentence."""

    def entry(match: re.Match[str]) -> str:
        key = match.group(1)
        if isinstance(result, Mapping) and key in result:
            return format_value(result[key], fmt)
        return "?"

    sentence = re.sub(r"\{result\[([^\]]+)\]\}", entry, template)
    return sentence.replace("{result}", text)
