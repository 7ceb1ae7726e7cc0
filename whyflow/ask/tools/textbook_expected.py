"""Textbook questions on expected counts under independence: "if the treatments were equally
effective, how many patients on the drug would we expect to be cured?" is the cell (drug, cured)
of the two-way table's expected counts, its row total times its column total over the number of
rows (what Pearson's chi-square test compares the observed counts with), read by
:class:`~whyflow.ask.tools.textbook_reader.Reader`.

The question must say the hypothesis ('if A and B were independent', 'if the <groups> were
equally effective', 'under independence'): an expected count without it is not defined here.
The two values it names (one of each column, in either order: the count is symmetric) are the
cell. A share the question states as the hypothesis's own ('meaning about 28% would be cured
regardless of the treatment') must be the data's overall share of that value to its stated
digits, or no number is given: a different figure is a different question.
"""

from __future__ import annotations

import re

from whyflow.ask.tools.slots import find_columns
from whyflow.ask.tools.textbook_reader import TEST_WORDS, Reader, TextbookParse, recodes, stance
from whyflow.ask.tools.textbook_spec import TextbookSpec, ValueRef
from whyflow.ask.tools.wording import FUNCTION_WORDS, POPULATION_NOUNS

__all__ = ["expected_count"]

_ASK = re.compile(
    r"\b(?:(?P<many>how many)\b(?P<mid>[a-z ]*?)\b(?P<verb>(?:would|should|do|will|might) (?:we|you|one) expect)\b"
    r"|(?:the )?expected (?:number|count|frequency|cell count)(?: of)?\b)"
)
_HYPOTHESIS = re.compile(
    r"\b(?:if|assuming(?: that)?|suppose(?: that)?) (?:the )?(?P<a>[a-z_ ]+?) (?:and (?:the )?(?P<b>[a-z_ ]+?) )?"
    r"(?:were|was|are|is) (?:actually |really |truly |in fact )?"
    r"(?:independent(?: of (?:each other|one another))?|equally effective|unrelated|not associated)\b"
    r"|\bunder (?:the )?(?:null )?(?:hypothesis )?(?:of )?independence\b"
    r"|\bunder the null hypothesis(?: of independence)?\b"
)
_STATED = re.compile(
    r"\b(?:(?:meaning|that is|i\.e\.|so that)[, ]+)?(?:(?:about|around|roughly|approximately) )?"
    r"(?P<pct>\d+(?:\.\d+)?)\s*% of (?:the |all )?(?P<unit>[a-z]+)\b"
)
_AUXILIARY = re.compile(r"(?:\s*\b(?:would|will|to|be|are|were|have|get|do)\b)*\s*")
_REGARDLESS = re.compile(
    r"\b(?:regardless of|irrespective of|whatever) (?:what |which |the )?(?P<col>[a-z_]+)"
    r"(?: they (?:were|are) (?:asked|given|assigned|in|shown))?\b"
)
_GROUP = re.compile(r"\b(?:from|in|of|among|on) the (?P<g>[a-z0-9_ -]+?) (?:group|arm|condition)\b")


def _stated_share(r: Reader, values: list[ValueRef], spans: list[tuple[int, int]]) -> int | None:
    """The index of the value whose share the question states ('about 27.85% of respondents would
    disclose'), placing the statement's words, when that is the data's overall share of it to the
    stated digits; -1 when the statement disagrees or the data are not at hand; None if none."""
    found = _STATED.search(r.low)
    if not found:
        return None
    after = [i for i, s in enumerate(spans) if s[0] >= found.end()]
    if not after or not _AUXILIARY.fullmatch(r.low[found.end() : spans[after[0]][0]]):
        return None
    r.take(found.start(), spans[after[0]][0])
    if found.group("unit") in POPULATION_NOUNS:
        r.take(found.start("unit"), found.end("unit"))
    ref = values[after[0]]
    if r.frame is None:
        return -1
    text = found.group("pct")
    digits = (len(text.split(".")[1]) if "." in text else 0) + 2
    others = [v.column for v in values if v.column != ref.column]
    rows = r.frame[[ref.column, *others]].dropna()
    column = rows[ref.column].astype("string").str.strip().str.lower()
    share = float((column == ref.value.strip().lower()).mean()) if len(rows) else float("nan")
    return after[0] if abs(share - float(text) / 100) <= 0.5 * 10**-digits + 1e-12 else -1


def _column_named(r: Reader, start: int, end: int) -> str | None:
    """The one column that the words ``text[start:end]`` name, all of them ('the arms'), or None."""
    words = r.text[start:end]
    mentions = [m for m in find_columns(words, r.infos) if m.via != "value"]
    content = [w for w in re.findall(r"[A-Za-z]+", words) if w.lower() not in FUNCTION_WORDS]
    if len({m.column for m in mentions}) != 1 or sum(m.end - m.start for m in mentions[:1]) < len(content):
        return None
    r.take(start, end)
    return mentions[0].column


def expected_count(r: Reader) -> TextbookParse | None:
    """The expected count of one cell of a two-way table under independence."""
    ask = _ASK.search(r.low)
    hypothesis = _HYPOTHESIS.search(r.low)
    if not ask or not hypothesis:
        return None
    if ask.group("many"):
        r.take(ask.start("many"), ask.end("many"))
        r.take(ask.start("verb"), ask.end("verb"))
    else:
        r.take(ask.start(), ask.end())
    for noun in re.finditer(r"[a-z]+", r.low):  # 'how many patients': the rows themselves
        if noun.group(0) in POPULATION_NOUNS:
            r.take(noun.start(), noun.end())
    if hypothesis.group("a"):  # the frame of 'if A and B were independent'; A and B are placed as columns
        r.take(hypothesis.start(), hypothesis.start("a"))
        if hypothesis.group("b"):
            r.take(hypothesis.end("a"), hypothesis.start("b"))
        r.take(hypothesis.end("b") if hypothesis.group("b") else hypothesis.end("a"), hypothesis.end())
    else:
        r.take(hypothesis.start(), hypothesis.end())
    r.take_words(TEST_WORDS | {"expect", "expected", "equally", "effective", "independent", "independence"})
    matches = r.values()
    refs, spans = [], []
    for m in matches:
        r.take(m.start, m.end)
        stance(r, m.start)
        refs.append(ValueRef(column=m.column, value=m.value, words=r.text[m.start : m.end]))
        spans.append((m.start, m.end))
    stated = _stated_share(r, refs, spans)
    if stated == -1:
        return r.result(None, "expected_count")
    if stated is not None:  # the hypothesis's value, of the cell's column: the cell is the other two
        cell_columns = {v.column for i, v in enumerate(refs) if i != stated}
        if refs[stated].column not in cell_columns:
            return r.result(None, "expected_count")
        refs.pop(stated)
        spans.pop(stated)
    regardless = _REGARDLESS.search(r.low)
    named_columns = {c for c, s, e in r.columns()}
    for _, s, e in r.columns():
        r.take(s, e)
    for group in ("a", "b"):
        if hypothesis.group(group):
            named = _column_named(r, hypothesis.start(group), hypothesis.end(group))
            named_columns |= {named} if named else set()
    if regardless:  # 'regardless of which arm they were in': its column is placed as a column
        named = _column_named(r, regardless.start("col"), regardless.end("col"))
        if named:
            named_columns.add(named)
            r.take(regardless.start(), regardless.end())
    for g in _GROUP.finditer(r.low):
        if any(g.start("g") <= s and e <= g.end("g") for s, e in spans):
            r.take(g.start(), g.start("g"))
            r.take(g.end("g"), g.end())
    if len(refs) != 2 or refs[0].column == refs[1].column:
        return r.result(None, "expected_count")
    cell = {v.column for v in refs}
    # the columns the hypothesis names must be the cell's (or one of them written twice)
    frame_columns = cell | {c for c in named_columns for v in cell if recodes(r.frame, c, v)}
    if not named_columns <= frame_columns:
        return r.result(None, "expected_count")
    spec = TextbookSpec(
        kind="expected_count",
        columns=[refs[0].column, refs[1].column],
        values=refs,
        decimals=r.prompt.decimals,
    )
    return r.result(spec, "expected_count")
