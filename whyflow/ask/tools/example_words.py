"""The words of a question that a filled worked example reads, and the ones it leaves unread.

A worked example reads its own vocabulary (its title, description, questions and tags: 'mean',
'correlation', 'histogram'), the columns it was filled with and the filters read beside it
(their names, their values, their numbers). Any other content word of the asked sentence was
dropped on the way to the example's number: the question is then not answered without a model.
Sentences that only describe the data (a statement before the question) are context, not asked.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from whyflow.ask.tools.library import COLUMN_SLOTS, get_example
from whyflow.ask.tools.slots import WORD_RE, ColumnInfo, describe_columns, find_columns, tokens
from whyflow.ask.tools.wording import NEGATIONS, expand_contractions, roots, same_root, unread

if TYPE_CHECKING:
    import pandas as pd

    from whyflow.ask.tools.retrieval import FilledPlan

__all__ = ["asked_part", "example_refusal", "example_unread"]

_ALIASES = {"male": ("men", "man", "males", "boys"), "female": ("women", "woman", "females", "girls")}


def asked_part(question: str) -> str:
    """The sentences that ask (ending in '?'), or the whole text when none does."""
    sentences = [s for s in re.split(r"(?<=[.!?])\s+|\n+", question.strip()) if s.strip()]
    asked = [s for s in sentences if s.rstrip().endswith("?")]
    return " ".join(asked) if asked else question


_CHOICE = re.compile(
    r"\banswer with\s+[\"'“]([^\"'”]+)[\"'”]\s+or\s+[\"'“]([^\"'”]+)[\"'”]|^\s*choices\s*:", re.I | re.M
)


_FLAG_VALUES = frozenset({"0", "1", "0.0", "1.0", "yes", "no", "true", "false", "y", "n"})


_ALL_VARIABLES = re.compile(
    r"\b(?:take|use|include|consider|control for|adjust for)\b[^.?!]{0,30}\ball (?:the )?"
    r"(?:provided |other |available |given )?(?:variables|covariates|columns|features|predictors)\b",
    re.I,
)
_ONLY_VARIABLES = re.compile(
    r"\b(?:do not|don't|not) (?:consider|use|include) (?:any )?(?:variables|columns|covariates) other than\b([^.?!]*)",
    re.I,
)


def _variables_refusal(question: str, filled: FilledPlan, columns: list[str]) -> str | None:
    """Why the example's columns are not the variable set the question states ('take all provided
    variables into consideration', 'no variables other than A, B and C'), or None."""
    example = get_example(filled.example_id)
    used = {str(v) for n, v in filled.params.items() if n in example.slots and example.slots[n].kind in COLUMN_SLOTS}
    if not used:
        return None
    only = _ONLY_VARIABLES.search(question)
    named = set(re.findall(r"[\"'`]([^\"'`]{1,60})[\"'`]", only.group(1))) if only else set()
    if only and named and named != used:
        return f"the question names the variables {sorted(named)}; this worked example uses {sorted(used)}"
    if _ALL_VARIABLES.search(question) and columns and len(used) < len(columns):
        return f"the question asks for all {len(columns)} provided variables; this worked example uses {sorted(used)}"
    return None


def example_refusal(question: str, filled: FilledPlan, columns: list[str] | None = None) -> str | None:
    """Why a filled example does not answer the question at all, or None: the question asks to
    choose between stated answers (a worked example's number or table chooses none), states a
    variable set the example does not use (``columns``: the data's), or the example keeps rows by
    a filter read from the description around the question, not from the question itself ('of the
    34 patients in the control group' is context, not the population)."""
    choice = _CHOICE.search(question)
    if choice:
        options = f"'{choice.group(1)}' and '{choice.group(2)}'" if choice.group(1) else "one of the stated choices"
        return f"I understood the data but not how to decide between {options}"
    variables = _variables_refusal(question, filled, columns or [])
    if variables:
        return f"I understood the question but not its model: {variables}"
    asked = asked_part(question).lower()
    for described in filled.filters:
        parts = described.split(" ", 2)
        value = parts[2].strip().lower() if len(parts) == 3 else ""
        number = _as_number(value)
        shown = str(int(number)) if number is not None and number.is_integer() else value
        said = (
            value in asked or shown in re.findall(r"[\w.]+", asked) or any(a in asked for a in _ALIASES.get(value, ()))
        )
        if value in _FLAG_VALUES:  # a 0/1 column kept by its own word ('urban workers', 'in the south')
            said = said or bool(set(re.findall(r"[a-z]+", parts[0].lower())) & set(re.findall(r"[a-z]+", asked)))
        if value and not said:
            return f"I understood the question but not the row filter '{described}', which only the description states"
    return None


def example_unread(
    question: str, filled: FilledPlan, frame: pd.DataFrame
) -> tuple[list[tuple[int, int]], list[str], str]:
    """(placed spans, unread words, the text they index) of the asked part for a filled example."""
    text = expand_contractions(asked_part(question))
    example = get_example(filled.example_id)
    vocabulary = set(tokens(example.text_for_retrieval().lower()))
    vocabulary |= {r for w in vocabulary for r in roots(w)} if vocabulary else set()
    columns = {str(v) for n, v in filled.params.items() if n in example.slots and example.slots[n].kind in COLUMN_SLOTS}
    filters = [f.split(" ") for f in filled.filters]
    columns |= {f[0] for f in filters if f}
    numbers = {float(v) for v in filled.params.values() if isinstance(v, int | float) and not isinstance(v, bool)}
    values = {str(v).strip().lower() for v in filled.params.values() if isinstance(v, str)}
    for parts in filters:
        tail = " ".join(parts[2:]).strip().lower()
        values.add(tail)
        try:
            numbers.add(float(tail))
        except ValueError:
            pass
    values |= {alias for v in list(values) for alias in _ALIASES.get(v, ())}
    negative = any(v in ("0", "0.0", "no", "false", "n") for v in values)
    infos = describe_columns(frame)
    placed: list[tuple[int, int]] = []
    found = list(WORD_RE.finditer(text))
    for m in find_columns(text, infos):
        if m.column in columns and m.end <= len(found):
            placed.append((found[m.start].start(), found[m.end - 1].end()))
    named = list(placed)  # the used columns' own words
    for i, match in enumerate(found):
        word = match.group(0).lower()
        number = _as_number(word)
        if number is not None:
            ok = number in numbers
        elif word in NEGATIONS:  # 'non-smokers' beside 'smokers' names the other group of a used column
            after = found[i + 1] if i + 1 < len(found) else None
            beside = after is not None and (
                any(s <= after.start() and after.end() <= e for s, e in named)
                or any(_singular(after.group(0).lower()) == c.lower() for c in columns)
            )
            ok = negative or word in vocabulary or beside
        elif word in ("number", "amount") and i + 2 < len(found) and found[i + 1].group(0).lower() == "of":
            after = found[i + 2]  # 'the mean number of rings': the column itself
            ok = any(s <= after.start() and after.end() <= e for s, e in named) or bool(roots(word) & vocabulary)
        else:
            ok = word in values or bool(roots(word) & vocabulary) or any(_singular(word) == c.lower() for c in columns)
        if ok:
            placed.append((match.start(), match.end()))
    return placed, _conditions_unread(text, placed, found, infos, columns, filled), text


_COMPARES = frozenset(
    "more less greater fewer higher lower larger smaller over under above below than least most older younger "
    "between exceeding equal exactly".split()
)
_RELATIVE = frozenset({"who", "whom", "whose", "that", "which", "where"})
_PREPOSITIONS = frozenset({"in", "of", "for", "to", "at", "on", "by", "from", "with", "and", "or"})
_POPULATION = frozenset({"for", "among", "amongst"})
"""An unread word right after these names the rows asked about ('median earnings for women')."""
_CONTRAST = re.compile(r"\b(?:versus|vs|compared|than|or not|those who|between)\b", re.I)


def _conditions_unread(
    text: str,
    placed: list[tuple[int, int]],
    found: list[re.Match[str]],
    infos: list[ColumnInfo],
    columns: set[str],
    filled: FilledPlan,
) -> list[str]:
    """The unread words that state a condition on the rows (the example's number would then be
    of other rows): a negation, a number after a comparison, a value or a 0/1 column's word the
    example does not use, a word right after 'for' or 'among', and any word of a relative clause ('who did not train', 'that live
    far away'). Other unread words (a unit, 'price' after 'close', 'draw') leave the number as
    it is."""
    content = set(unread(text, placed))
    example = get_example(filled.example_id)
    groups = [n for n, slot in example.slots.items() if slot.role == "group" and filled.params.get(n)]
    grouped = bool(groups) and bool(_CONTRAST.search(text))  # 'those who got the email versus those who did not
    held: dict[str, str] = {}
    for info in infos:
        if info.name in columns or (info.n_unique or 0) > 30:
            continue
        for v in info.values:
            low = v.strip().lower()
            for name in (low, *_ALIASES.get(low, ())):
                if len(name) >= 3 and not name.isdigit():
                    held[name] = info.name
    flags = [i.name for i in infos if i.name not in columns and _two_valued(i)]
    out: list[str] = []
    clause = False
    for i, match in enumerate(found):
        word = match.group(0).lower()
        prior = found[i - 1].group(0).lower() if i else ""
        if word in _RELATIVE and i and prior not in _PREPOSITIONS and not grouped:
            clause = True  # a relative clause ('people who ...'), not a question word ('in which year')
        inside = any(s <= match.start() and match.end() <= e for s, e in placed)
        if inside or word not in content:
            continue
        before = {w.group(0).lower() for w in found[max(0, i - 3) : i]}
        if (
            (word in NEGATIONS and not grouped)
            or (_as_number(word) is not None and before & _COMPARES)
            or word in held
            or prior in _POPULATION
            or (
                len(word) >= 4
                and any(same_root(word, part) for f in flags for part in re.findall(r"[a-z]{4,}", f.lower()))
            )
            or clause
        ):
            out.append(word)
    return out


def _two_valued(info: ColumnInfo) -> bool:
    return (info.n_unique or 0) == 2


def _as_number(word: str) -> float | None:
    try:
        return float(word)
    except ValueError:
        return None


def _singular(word: str) -> str:
    return tokens(word)[0] if tokens(word) else word
