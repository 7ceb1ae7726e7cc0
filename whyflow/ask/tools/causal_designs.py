"""A causal question that names its design (difference in differences, instrumental variables, a
regression discontinuity, synthetic control, nearest-neighbour matching, propensity-score
stratification) as one request: exactly that design, each role a column the question or its
data description names.

A column is named by its own name (quoted, in parentheses, or as a word when it is distinctive:
four characters or more, or with a digit, dot or underscore) or by a phrase the description gives
it ("margin: margin of victory (vote share)", "all causes (all)"). A role is read from the words
that state it ("X as the instrument", "running variable X", "unit column X", "the effect of X on
Y"); when a role the design needs is not stated, or its words name no column or several, the
question is declined with one line naming it: a column is never guessed. A row restriction
naming one column and its bounds ("only consider rows with a margin no larger than 0.5") becomes
row filters, one naming no column ("only consider people no older than 22") is declined; a level
of one text column named as the group ("for Tory candidates") becomes a row filter. Computed in the sandbox by
:func:`whyflow.ask.tools.request_designs.design_effect`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from whyflow.ask.tools.filters import COMPARISON_PHRASES
from whyflow.ask.tools.request_rules import _norm
from whyflow.ask.tools.request_spec import Request, RequestSpec

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DesignRequestError", "named_design", "parse_design"]

_DESIGNS = (
    (r"difference[- ]in[- ]differences?|(?-i:\bDiD\b)|two[- ]way fixed effects|(?-i:\bTWFE\b)", "did"),
    (r"synthetic control", "synth"),
    (r"discontinuit|(?-i:\bRDD?\b)", "rdd"),
    (r"instrumental variables?|two[- ]stage least squares|(?-i:\b2SLS\b|\bIV\b|\bLATE\b)|\binstrument", "iv"),
    (r"stratif|subclassif|\bstrata\b", "stratification"),
    (r"\bmatching\b|\bmatched\b", "matching"),
)
_WORDS = {
    "did": "difference in differences (pyfixest two-way fixed effects)",
    "synth": "synthetic control (pysyncon)",
    "rdd": "regression discontinuity (rdrobust local linear)",
    "iv": "instrumental variables (linearmodels 2SLS)",
    "stratification": "propensity-score stratification (logistic score)",
    "matching": "nearest-neighbour matching with replacement on the scaled covariates (Abadie-Imbens)",
}
_STOP = (
    r"(?=[,;?!]|\.(?:\s|$)|$|\s(?:for|among|within|using|by|with|when|controlling|holding|at|if|where|given|"
    r"via|through|and|while|based|in the|in a|to the|from|use|instrument\w*|match\w*|stratif\w*)\b)"
)
_SPAN = r"(?P<x>[^,;?!]{1,80}?)"
_NUMBER = r"(?P<c>zero|-?\d+(?:\.\d+)?)"
_COUNTS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}


class DesignRequestError(ValueError):
    """The question names a design whose roles it does not state unambiguously."""


@dataclass
class _Lexicon:
    """How the question and its description name each column."""

    columns: dict[str, str]
    aliases: list[tuple[str, str]] = field(default_factory=list)
    absent: list[tuple[str, str]] = field(default_factory=list)


def _lexicon(frame: pd.DataFrame, text: str) -> _Lexicon:
    """The columns by name, the description's phrases for them, and its phrases for names not in the data."""
    lex = _Lexicon({_norm(str(c)): str(c) for c in frame.columns})
    for name, phrase in re.findall(r"^\s*([A-Za-z_][\w.]{0,40})\s*[:=–-]\s*(.{3,200})$", text, re.M):
        words = re.split(r"\s*[(,;]", phrase.strip().lower())[0].strip()
        col = lex.columns.get(_norm(name))
        if len(words) >= 3:
            (lex.aliases if col else lex.absent).append((words, col or name))
    for before, inner in re.findall(r"((?:[A-Za-z-]+\s+){1,3})\(\s*[`'\"]?([A-Za-z_][\w.]{0,40})[`'\"]?\s*\)", text):
        col = lex.columns.get(_norm(inner))
        tail = " ".join(before.lower().split()[-2:])
        if col and len(tail) >= 5:
            lex.aliases.append((tail, col))
    return lex


def _distinctive(name: str) -> bool:
    return len(name) >= 4 or bool(re.search(r"[\d._]", name))


def _mentions(window: str, lex: _Lexicon) -> list[str]:
    """The columns a stretch of the question names, in order of first mention."""
    found: list[tuple[int, str]] = []
    for m in re.finditer(r"[`'\"(]\s*([A-Za-z_][\w.]{0,40})\s*[`'\")]", window):
        col = lex.columns.get(_norm(m.group(1)))
        if col:
            found.append((m.start(), col))
    for col in lex.columns.values():
        if _distinctive(col):
            for m in re.finditer(rf"(?<![\w.]){re.escape(col)}(?![\w]|\.\w)", window, re.I):
                found.append((m.start(), col))
    low = window.lower()
    for phrase, col in lex.aliases:
        at = low.find(phrase)
        if at >= 0:
            found.append((at, col))
    plain = re.sub(r"^(?:the|a|an)\s+", "", low.strip())
    if plain in lex.columns:
        found.append((0, lex.columns[plain]))
    return list(dict.fromkeys(col for _, col in sorted(found)))


def _absent(window: str, lex: _Lexicon) -> str | None:
    """The description's name, not a column of the data, for the phrase of a role."""
    low = re.sub(r"^(?:the|a|an)\s+", "", window.lower().strip())
    return next((name for phrase, name in lex.absent if phrase in low or (len(low) >= 5 and low in phrase)), None)


_BEFORE = "(?#before)"
_CLAUSE = re.compile(r"[,;]|\b(?:with|using|by|take|taking|treat|treating|as\s+(?:an?|the|our)\s+\w+)\b", re.I)


def _role(question: str, lex: _Lexicon, patterns: list[str], role: str) -> str | None:
    """The one column the first stating pattern names (None: the question states no such role)."""
    for pattern in patterns:
        for m in re.finditer(pattern, question, re.I):
            window = m.group("x")
            if pattern.startswith(_BEFORE):  # "X as the unit": only the words after the clause before it
                window = _CLAUSE.split(window)[-1]
            cols = _mentions(window, lex)
            if len(cols) == 1:
                return cols[0]
            if len(cols) > 1:
                raise DesignRequestError(
                    f"the {role} ('{window.strip()}') names several columns ({', '.join(cols)}); name one"
                )
            missing = _absent(window, lex)
            if missing:
                raise DesignRequestError(
                    f"the {role} '{window.strip()}' is '{missing}' in the data description, which is not a column "
                    "of the data"
                )
    return None


def _cue(words: str) -> list[str]:
    """'X as the <words>' and '<words> (column) is X'."""
    return [
        rf"{_BEFORE}{_SPAN}\s+as\s+(?:an?|the|our)?\s*(?:{words})\b",
        rf"\b(?:{words})(?:\s+(?:column|variable|indicator|identifier|id|index))?\s*(?:is|=|:|by|with)?\s+"
        rf"(?!for\b|of\b|on\b){_SPAN}{_STOP}",
    ]


_ESTIMAND_WORDS = re.compile(
    r"(?:average\s+)?(?:treatment\s+|causal\s+)?effect\s+on\s+the\s+(?P<who>treated|control|controls|untreated)"
    r"(?:\s+group)?(?:\s*\((?:ATT|ATC)\))?",
    re.I,
)
_EFFECT = r"\b(?:effects?|impacts?|(?-i:ATE|ATT|ATC|LATE))"


def _effect_roles(question: str, lex: _Lexicon) -> tuple[str | None, str | None]:
    """The treatment and the outcome of "the effect of X on Y" (or of a stated treatment/outcome column);
    "the effect on the treated" names the estimand, not an outcome."""
    question = _ESTIMAND_WORDS.sub(lambda m: "ATT" if m.group("who").lower() == "treated" else "ATC", question)
    treatment = _role(question, lex, [rf"{_EFFECT}\s+of\s+{_SPAN}\s+on\s"], "treatment")
    treatment = treatment or _role(question, lex, _cue(r"treatment|treatment indicator"), "treatment")
    outcome = _role(question, lex, [rf"{_EFFECT}\s+(?:of\s+.{{1,80}}?\s+)?on\s+{_SPAN}{_STOP}"], "outcome")
    outcome = outcome or _role(question, lex, _cue(r"outcome|response|dependent variable"), "outcome")
    return treatment, outcome


def named_design(question: str) -> str | None:
    """The design the question names (None: none); two named at once is an error."""
    named = list(dict.fromkeys(key for pattern, key in _DESIGNS if re.search(pattern, question, re.I)))
    if len(named) > 1 and named[:2] != ["rdd", "iv"]:  # a fuzzy discontinuity may say "instrument"
        raise DesignRequestError(f"the question names several designs ({', '.join(named)}); ask for one")
    return named[0] if named else None


def _need(roles: dict[str, str | None], design: str) -> None:
    """Every role the design needs is a column, and no column plays two roles."""
    named = [col for col in roles.values() if col is not None]
    twice = sorted({col for col in named if named.count(col) > 1})
    if twice:
        raise DesignRequestError(f"'{twice[0]}' is named for two roles of {_WORDS[design].split(' (')[0]}")
    missing = [name for name, col in roles.items() if col is None]
    if missing:
        raise DesignRequestError(
            f"{_WORDS[design].split(' (')[0]} needs the {', the '.join(missing)} column"
            f"{'s' if len(missing) > 1 else ''} named in the question; none is stated unambiguously"
        )


def _covariates(question: str, lex: _Lexicon, frame: pd.DataFrame, taken: set[str], default_all: bool) -> list[str]:
    """The covariates the question states ("controlling for A and B", "matching on A and B"); unstated,
    every other numeric column where the design adjusts for covariates (``default_all``), else none."""
    stated = re.search(
        rf"\b(?:controlling for|adjusting for|conditional on|covariates|match(?:ing|ed)? on(?: the)?)\s+{_SPAN}"
        r"(?=[;?!]|\.(?:\s|$)|$)",
        question,
        re.I,
    )
    if stated:
        named = [c for c in _mentions(stated.group("x"), lex) if c not in taken]
        if not named:
            raise DesignRequestError(f"the covariates '{stated.group('x').strip()}' name no column of the data")
        return named
    if not default_all:
        return []
    return [str(c) for c in frame.columns if str(c) not in taken and frame[c].dtype.kind in "biuf"]


def _count(question: str, pattern: str, default: int) -> int:
    m = re.search(pattern, question, re.I)
    if not m:
        return default
    word = m.group("k").lower()
    return int(word) if word.isdigit() else _COUNTS.get(word, default)


def _level_filters(question: str, frame: pd.DataFrame, taken: set[str]) -> list[dict[str, Any]]:
    """Row filters for a level of one text column the question names as its group ("for Tory candidates")."""
    steps: list[dict[str, Any]] = []
    for word in re.findall(r"\b(?:for|among|amongst|within)\s+(?:the\s+|all\s+)?([A-Za-z][\w-]+)", question, re.I):
        hits = []
        for col in frame.columns:
            if str(col) in taken or frame[col].dtype.kind not in "OSUb" and str(frame[col].dtype) != "category":
                continue
            levels = {str(v).lower(): v for v in frame[col].dropna().unique()[:200]}
            level = levels.get(word.lower())
            if level is not None:
                hits.append((str(col), level))
        if len(hits) > 1:
            raise DesignRequestError(f"'{word}' is a value of several columns ({', '.join(c for c, _ in hits)})")
        if hits:
            steps.append({"kind": "filter", "column": hits[0][0], "op": "==", "value": hits[0][1]})
    return steps


_INSTRUMENT = [
    rf"{_BEFORE}{_SPAN}\s+as\s+(?:an?|the|our)?\s*instruments?\b",
    rf"\binstrument(?:al variable)?s?\s*(?:is|=|:)\s*{_SPAN}{_STOP}",
    rf"\binstrument(?:ed|ing)?\s+(?:\w+\s+)?(?:by|with)\s+{_SPAN}{_STOP}",
]
_GLOBAL_FITS = re.compile(
    r"\btwo (?:separate )?(?:linear )?regressions\b|\b(?:regression|fit)s? on (?:each|both) sides?\b", re.I
)
"""A discontinuity stated as one linear fit on each side over all the rows ("the two regressions")."""
_STRATA_WORDS = (("quintile", 5), ("decile", 10), ("quartile", 4))


def _strata(question: str) -> int:
    """The number of propensity-score strata the question states (five unless it says otherwise)."""
    named = next((k for word, k in _STRATA_WORDS if word in question.lower()), None)
    pattern = r"\b(?P<k>\d+|two|three|four|five|six|seven|eight|nine|ten)\s+(?:strata|subclasses|blocks)"
    return named or _count(question, pattern, 5)


def _balancing(
    design: str, question: str, lex: _Lexicon, frame: pd.DataFrame, taken: set[str], estimand: str | None
) -> dict[str, Any]:
    """The options of matching or stratification: estimand, covariates, matches or strata."""
    if estimand == "atc":
        raise DesignRequestError(f"{_WORDS[design].split(' (')[0]} is run here for the ATE or the ATT, not the ATC")
    opts: dict[str, Any] = {
        "estimand": estimand or "ate",
        "covariates": _covariates(question, lex, frame, taken, True),
        "seed": 0,
        "bootstrap": 200,
    }
    if design == "matching":
        opts["k"] = _count(question, r"\b(?P<k>\d+|one|two|three|four|five)\s+nearest", 1)
        opts["bias_adjust"] = bool(re.search(r"bias[- ](?:adjust|correct)", question, re.I))
    else:
        opts["strata"] = _strata(question)
    return opts


_NEGATED = {">": "<=", ">=": "<", "<": ">=", "<=": ">"}
_COMPARISON = re.compile(
    r"\b(?P<neg>no\s+|not\s+)?(?P<op>"
    + "|".join(
        re.escape(phrase) for phrase, _ in COMPARISON_PHRASES if not phrase.startswith("no ") and phrase[0].isalpha()
    )
    + r")\s+(?P<v>-?\d+(?:\.\d+)?)",
    re.I,
)


def _restriction(sentence: str, lex: _Lexicon) -> list[dict[str, Any]]:
    """The row filters of an "only consider ..." sentence naming one column and its bounds ("a margin no
    larger than 0.5", "ages between 20 and 22"); a sentence naming no column or several is declined."""
    cols = _mentions(sentence, lex)
    between = re.search(r"\bbetween\s+(-?\d+(?:\.\d+)?)\s+and\s+(-?\d+(?:\.\d+)?)", sentence, re.I)
    bounds = [(">=", float(between.group(1))), ("<=", float(between.group(2)))] if between else []
    by_phrase = dict(COMPARISON_PHRASES)
    for m in _COMPARISON.finditer(sentence):
        op = by_phrase[m.group("op").lower()]
        bounds.append((_NEGATED.get(op, op) if m.group("neg") else op, float(m.group("v"))))
    if len(cols) != 1 or not bounds:
        raise DesignRequestError(
            f"'{sentence[:120]}' restricts the rows {'by no column of the data' if not cols else 'unclearly'}; "
            "state the column and its bounds (e.g. 'only consider rows with age between 20 and 22')"
        )
    return [{"kind": "filter", "column": cols[0], "op": op, "value": value} for op, value in bounds]


def _rdd_roles(question: str, lex: _Lexicon) -> dict[str, Any]:
    stated = [
        *_cue(r"running variable|forcing variable|assignment variable|score variable"),
        rf"\b(?:cut-?off|threshold|discontinuity)\b[^,;?!]{{0,30}}?\b(?:on|in)\s+(?:the\s+)?{_SPAN}{_STOP}",
    ]
    running = _role(question, lex, stated, "running variable")
    at_value = re.search(rf"(?:\bat\s+(?:an?\s+|the\s+)?|\ban?\s+){_NUMBER}\s+{_SPAN}{_STOP}", question, re.I)
    cutoff = re.search(
        rf"\b(?:cut-?off|threshold|discontinuity)\s+(?:\w+\s+){{0,3}}?(?:of|at|is|=|:)\s*{_NUMBER}\b", question, re.I
    )
    if running is None and at_value is not None:
        cols = _mentions(at_value.group("x"), lex)
        running = cols[0] if len(cols) == 1 else None
    value = cutoff.group("c") if cutoff else at_value.group("c") if at_value and running else None
    return {"running": running, "cutoff": None if value is None else (0.0 if value.lower() == "zero" else float(value))}


def _panel_roles(design: str, question: str, lex: _Lexicon, treatment: str | None) -> dict[str, str | None]:
    """The unit, time and treatment of a panel; or, for a difference in differences stated by its
    treated-group and post-period indicators (a repeated cross-section), those two."""
    unit = _role(question, lex, _cue(r"units?|entity|entities|panel units?"), "unit")
    time = _role(question, lex, _cue(r"time|periods?|years?|dates?|waves?"), "time")
    if design == "did" and not (unit and time):
        group = _role(question, lex, _cue(r"treated group|treatment group|group"), "treated group")
        period = _role(question, lex, _cue(r"post(?:-treatment)? period|post|after"), "post period")
        if group and period:
            return {"group": group, "period": period}
    return {"unit": unit, "time": time, "treatment": treatment}


def parse_design(
    question: str, context: str, frame: pd.DataFrame, estimand: str | None
) -> tuple[RequestSpec, str] | None:
    """The request of a question that names a design (None: it names none)."""
    from whyflow.ask.tools.request_clauses import restriction_sentences

    design = named_design(question)
    if design is None:
        return None
    if design == "matching" and re.search(r"propensity", question, re.I):
        raise DesignRequestError(
            "propensity-score matching is not run without a model; nearest-neighbour matching on the covariates is"
        )
    lex = _lexicon(frame, f"{context}\n{question}")
    treatment, outcome = _effect_roles(question, lex)
    opts: dict[str, Any] = {"design": design, "outcome": outcome}
    roles: dict[str, str | None] = {"outcome": outcome}
    if design in ("did", "synth"):
        roles.update(_panel_roles(design, question, lex, treatment))
    elif design == "iv":
        instrument = _role(question, lex, _INSTRUMENT, "instrument")
        roles.update(treatment=treatment, instrument=instrument)
    elif design == "rdd":
        found = _rdd_roles(question, lex)
        roles["running variable"] = found["running"]
        opts.update(running=found["running"], cutoff=found["cutoff"], treatment=treatment)
        opts["global"] = bool(_GLOBAL_FITS.search(question))
        if found["running"] and found["cutoff"] is None:
            raise DesignRequestError(
                f"regression discontinuity needs the cutoff of '{found['running']}' stated as a number"
            )
    else:
        roles["treatment"] = treatment
    _need(roles, design)
    opts.update({k: v for k, v in roles.items() if k not in ("running variable",)})
    taken = {str(v) for v in roles.values() if v} | ({str(treatment)} if treatment else set())
    if design in ("matching", "stratification"):
        opts.update(_balancing(design, question, lex, frame, taken, estimand))
    if design == "iv":
        opts["covariates"] = _covariates(question, lex, frame, taken, False)
    steps = [step for sentence in restriction_sentences(question) for step in _restriction(sentence, lex)]
    steps += _level_filters(question, frame, taken)
    return _spec(design, opts, steps), _sentence(design, opts, steps)


def _spec(design: str, opts: dict[str, Any], steps: list[dict[str, Any]]) -> RequestSpec:
    cols = [str(v) for k, v in opts.items() if k in ("treatment", "outcome") and v]
    return RequestSpec(requests=[Request(slot="effect", op="design", columns=cols, options=opts)], steps=steps)


def _sentence(design: str, opts: dict[str, Any], steps: list[dict[str, Any]]) -> str:
    names = {
        "unit": "unit",
        "time": "time",
        "group": "treated group",
        "period": "post period",
        "instrument": "instrument",
        "running": "running variable",
    }
    roles = ", ".join(f"{label} '{opts[k]}'" for k, label in names.items() if opts.get(k))
    if design == "rdd":
        roles += f" at the cutoff {opts['cutoff']:g}"
        what = f"the jump in '{opts['outcome']}'" + (
            f" (take-up '{opts['treatment']}')" if opts.get("treatment") else ""
        )
    elif design in ("matching", "stratification"):
        label = (
            "average treatment effect on the treated (ATT)"
            if opts["estimand"] == "att"
            else "average treatment effect (ATE)"
        )
        what = f"the {label} of '{opts['treatment']}' on '{opts['outcome']}'"
        count = len(opts["covariates"])
        roles = f"{count} covariate{'' if count == 1 else 's'}"
        if design == "matching":
            roles += f", {opts['k']} match{'' if opts['k'] == 1 else 'es'} per unit"
        if design == "matching":
            roles += ", with the regression bias adjustment" if opts["bias_adjust"] else ", without bias adjustment"
    elif opts.get("treatment"):
        what = f"the effect of '{opts['treatment']}' on '{opts['outcome']}'"
    else:
        what = f"the effect on '{opts['outcome']}'"
    subset = "".join(
        f", rows with {s['column']} {'=' if s['op'] == '==' else s['op']} {s['value']:g}"
        if isinstance(s["value"], float)
        else f", rows with {s['column']} = {s['value']}"
        for s in steps
    )
    words = (
        "regression discontinuity (one linear fit on each side, statsmodels)" if opts.get("global") else _WORDS[design]
    )
    return f"{{shown}} is {what}, estimated by {words}: {roles}{subset}; n = {{n}}; {{inference}}."
