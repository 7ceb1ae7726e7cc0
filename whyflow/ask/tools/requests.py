"""A question as a list of typed requests: one per ``@name[...]`` slot of its stated format.

Each slot gets its own operation (read from the slot's name, its placeholder and the format's
sentence about it), its own columns (the slot's words first, then the question's), options
(population or sample deviation, Pearson or Spearman, the outlier rule), the rounding its own
sentence asks for, and whether it is measured before or after a removal of outliers. Data steps
the question states for every part (a derived column, removing outliers) are read once. A slot
whose operation or columns cannot be read is kept as an ``unknown`` request, so its answer says
"not computed" in its own slot instead of borrowing another slot's value.

:func:`whyflow.ask.tools.request_spec.request_code` turns the requests into sandbox code.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from whyflow.ask.tools.answers import _DECIMALS, _INTEGER, _WORDS
from whyflow.ask.tools.request_clauses import (
    PAIRED_OPS,
    unplaced_clause,
    unplaced_restriction,
    unread_values,
    withhold_unplaced,
)
from whyflow.ask.tools.request_columns import leftover_words, name_words, own_columns, qualified_columns, slot_words
from whyflow.ask.tools.request_groups import group_conditions, stated_filters
from whyflow.ask.tools.request_ml import model_request, regression_request
from whyflow.ask.tools.request_rules import (
    _GROUP_TEST,
    _TWO_SAMPLE_KS,
    _columns_for,
    _correlated,
    _extreme,
    _group_test,
    _norm,
    _numeric,
    _options,
    _outlier_list,
    _quoted_options,
    _special_op,
    _strongest,
    _verdict,
    between_sides,
    quoted_extension,
)
from whyflow.ask.tools.request_spec import Request, RequestSpec
from whyflow.ask.tools.request_steps import (
    FormulaError,
    cleaning_steps,
    declared_names,
    derive_steps,
    drop_step,
    formula_steps,
    with_durations,
)
from whyflow.ask.tools.slots import ColumnInfo, as_column_infos, find_columns

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["format_slots", "parse_requests"]

_SLOT = re.compile(r"@([A-Za-z_][A-Za-z0-9_]*)\[([^\]]*)\]")
_TEXT_WORDS = {
    "type",
    "status",
    "decision",
    "result",
    "relationship",
    "normality",
    "strength",
    "name",
    "names",
    "category",
    "categories",
    "country",
    "countries",
    "station",
    "vehicle",
    "site",
    "identifier",
    "identifiers",
    "list",
    "level",
    "significant",
    "significance",
    "is",
    "has",
    "direction",
    "trend",
    "distribution",
    "feature",
    "features",
    "label",
    "most",
    "top",
    "which",
    "whether",
    "interpretation",
    "conclusion",
    "pattern",
    "impact",
    "effect",
    "accuracy",
    "score",
    "model",
    "error",
    "mse",
    "mae",
    "rmse",
    "prediction",
    "cluster",
}
_OPS: tuple[tuple[str, str], ...] = (
    (r"\bslope\b", "slope"),
    (r"\bintercept\b", "intercept"),
    (r"\br[_ ]?(?:squared|2)\b|\brsquared\b", "r2"),
    (r"\bwithin\b.*\b(?:std|stdev|sd|standard deviations?)\b", "count_within_sd"),
    (r"\bskew(?:ness)?\b", "skew"),
    (r"\bkurtosis\b", "kurtosis"),
    (
        r"\boutliers?\b.*\b(?:count|number|num|total|n)\b|\b(?:count|number|num|total|n)\b.*\boutliers?\b",
        "outlier_count",
    ),
    (r"\b(?:missing|null|nan|na)\b", "missing"),
    (r"\b(?:unique|distinct)\b", "unique"),
    (r"\bmedian\b", "median"),
    (r"\b(?:std|stdev|stddev|sd|standard deviation|std dev|deviation)\b", "std"),
    (r"\bvariance\b|\bvar\b", "var"),
    (r"\b(?:mean|average|avg)\b", "mean"),
    (r"\b(?:minimum|min)\b", "min"),
    (r"\b(?:maximum|max)\b", "max"),
    (r"\b(?:sum)\b", "sum"),
    (r"^(?!.*\boutliers?\b).*\brange\b", "range"),
    (r"\b(?:rows|entries|records|count|number)\b", "rows"),
)


_SUMMARIES = frozenset({"mean", "median", "std", "var", "skew", "kurtosis"})
_VERDICT_WORDS = frozenset(
    "relationship relation type status significance significant correlation correlated "
    "normality normal is distribution direction strength decision result".split()
)
_TRANSFORMED = frozenset(
    "transformed normalized normalised scaled standardized standardised log logged encoded binned squared sqrt".split()
)


def _sections(question: str) -> tuple[str, str, str]:
    """(question, constraints, format) of a prompt; the whole text is the question when unmarked."""
    fmt = re.search(r"^\s*Format:\s*(.*)\Z", question, re.S | re.M)
    head = question[: fmt.start()] if fmt else question
    con = re.search(r"^\s*Constraints:\s*(.*)\Z", head, re.S | re.M)
    return (head[: con.start()] if con else head), (con.group(1) if con else ""), (fmt.group(1) if fmt else "")


def format_slots(question: str) -> list[tuple[str, str, str]]:
    """Every distinct ``@name[placeholder]`` of the question with the format's sentences about it."""
    _, _, fmt = _sections(question)
    text = fmt or question
    found = [(m.group(1), m.group(2).strip()) for m in _SLOT.finditer(text)]
    seen: dict[str, str] = {}
    for name, placeholder in found:
        seen.setdefault(name, placeholder)
    chunks = [c.strip() for c in re.split(r"\bwhere\b|\n|;|(?<=\.)\s", _SLOT.sub(" ", text)) if c.strip()]
    out = []
    for name, placeholder in seen.items():
        keys = {name.lower(), placeholder.lower(), re.sub(r"\(.*?\)", "", placeholder).strip().lower()}
        about = []
        for chunk in chunks:  # from the slot's mention on: "a is rounded to 2 and b to 3 decimals"
            hits = [m.start() for k in keys if k for m in re.finditer(rf"\b{re.escape(k)}\b", chunk.lower())]
            if hits:
                start = min(hits)
                about.append(chunk[start - 1 if start and chunk[start - 1] in "\"'`" else start :])
        slash = re.search(r"\b(\w+)/(\w+)\b", placeholder)  # "(Yes/No)": the options themselves
        options = f'"{slash.group(1)}" or "{slash.group(2)}". ' if slash else ""
        if '"' in placeholder:  # [A string that should be either "Normal" or "Not Normal"]
            options += placeholder + " "
        out.append((name, placeholder, options + " ".join(about)))
    return out


def _decimals(text: str) -> int | None:
    match = _DECIMALS.search(text)
    if match:
        word = match.group(1).lower()
        return int(word) if word.isdigit() else _WORDS[word]
    return 0 if _INTEGER.search(text) else None


def _op(slot_text: str) -> str | None:
    if set(slot_text.split()) & _TEXT_WORDS:
        return None  # "skewness_type", "highest_horsepower_vehicle": a word or a row, not a number
    for pattern, op in _OPS:
        if re.search(pattern, slot_text):
            return op
    return None


def _correlation_op(slot_text: str, context: str) -> str | None:
    if set(slot_text.split()) & _TEXT_WORDS:
        return None
    if re.search(r"\bp ?val(?:ue)?\b|\bpvalue\b", slot_text):
        if re.search(r"shapiro|kolmogorov|\bks\b|normaltest|d'agostino", context) and not _TWO_SAMPLE_KS.search(
            context
        ):
            return "normality_p"
        if "correlat" in context and not re.search(r"t-?test|anova|\bchi\b|chi-?squared?|\bmann\b", context):
            return "corr_p"
        if _GROUP_TEST.search(context):
            return "group_test_p"
        return None
    if re.search(r"\bcorr(?:elation)?\b|\bcoefficient\b|\br\b", slot_text) and "correlat" in context:
        return "corr"
    return None


def _stage(slot_text: str, op: str) -> str:
    if re.search(r"\b(?:original|before|with outliers|raw|initial|old|pre)\b", slot_text):
        return "original"
    if re.search(r"\b(?:new|after|without|clean|cleaned|removed|filtered|updated|post)\b", slot_text):
        return "after"
    return "before" if op in ("outlier_count", "outlier_min", "outlier_max") else "after"


def parse_requests(question: str, frame: pd.DataFrame) -> RequestSpec | None:
    """The question's requests, one per format slot (None when the question states no slots)."""
    slots = format_slots(question)
    if not slots:
        return None
    body, constraints, fmt = _sections(question)
    context_raw = f"{body}\n{constraints}"
    context = context_raw.lower()
    infos = with_durations(as_column_infos(frame), frame)
    unplaced = unplaced_clause(context_raw)
    try:
        formulas = formula_steps(context_raw, infos)
    except FormulaError as exc:
        formulas, unplaced = [], unplaced or str(exc)
    derived = [s for s in derive_steps(context_raw, infos) if all(f["name"] != s.get("name") for f in formulas)]
    steps: list[dict[str, Any]] = cleaning_steps(context_raw, infos) + formulas + derived
    built = {_norm(s["name"]) for s in steps if s["kind"] == "derive"}
    unbuilt = [n for n in declared_names(context_raw, infos) if _norm(n) not in built and len(_norm(n)) > 3]
    infos = infos + [ColumnInfo(name=s["name"], dtype="float64", n_unique=1000) for s in steps if s["kind"] == "derive"]
    drop = drop_step(context_raw, infos)
    if drop:
        steps.append(drop)
    asked = [m.column for m in find_columns(context_raw, infos) if _numeric(m.column, infos)]
    quoted = [q for q in re.findall(r"[\"'`]([^\"'`]{1,60})[\"'`]", context_raw) if _numeric(q, infos)]  # exact names
    summarised = [
        m.column
        for sentence in re.split(r"(?<=[.!?])\s+|\n", context_raw)  # "calculate the mean of X"
        if re.search(r"\b(?:mean|median|standard deviation|skewness|kurtosis|variance)\b", sentence, re.I)
        and not re.search(r"\bfill|\breplac|\bimput(?:e|ed|ing)\b|imputation method|missing", sentence, re.I)
        for m in find_columns(sentence, infos)
        if _numeric(m.column, infos)
    ]
    summarised = [
        q
        for m in re.finditer(r"\b(?:mean|median|standard deviation|skewness|kurtosis)\b", context_raw, re.I)
        for q in re.findall(r"['\"`]([^'\"`]{1,60})['\"`]", context_raw[m.end() : m.end() + 60])
        if _numeric(q, infos)
    ] + summarised  # "the mean of the column 'No. of cases'"
    asked = [quoted_extension(c, context_raw, infos) for c in asked]
    summarised = [quoted_extension(c, context_raw, infos) for c in summarised]
    paired = _correlated(context_raw, infos)
    sides = between_sides(context_raw, infos)
    mentioned = [m.column for m in find_columns(context_raw, infos) if m.column in frame.columns]
    default_decimals = _decimals(fmt) if _decimals(fmt) is not None else _decimals(f"{constraints}\n{body}")
    requests = []
    word_sets = [set(name_words(name)) for name, _, _ in slots]
    shared = set.intersection(*word_sets) if len(slots) > 1 else word_sets[0]
    all_names = {_norm(n) for n, _, _ in slots} | {_norm(p) for _, p, _ in slots} | {_norm(c) for c in frame.columns}
    for name, placeholder, about in slots:
        slot_text = slot_words(f"{name} {placeholder}")
        decimals = _decimals(about) if _decimals(about) is not None else default_decimals
        if re.search(
            rf"(?:{re.escape(name)}|{re.escape(placeholder)})[\"'`]?\s+is\s+an?\s+"
            r"(?:positive\s+|non-negative\s+)?(?:integer|whole number)\b",
            about,
        ):
            decimals = 0  # "mean_value is a positive integer"
        if placeholder.strip().lower() in ("integer", "int", "an integer", "whole number"):
            decimals = 0  # "@total_calls[integer]"
        model = model_request(slot_text, about, context_raw, infos) or regression_request(slot_text, context_raw, infos)
        if model is not None and model.get("kind") == "ols":  # "a multiple linear regression of Y on A and B"
            reason = model.pop("reason", None)
            requests.append(
                Request(
                    slot=name,
                    op=model.pop("op"),
                    columns=model.pop("columns"),
                    options={} if reason else model,
                    decimals=decimals,
                    reason=reason,
                )
            )
            continue
        if model is not None:
            requests.append(
                Request(
                    slot=name,
                    op="model",
                    columns=[model["target"], *model["features"]],
                    options=model,
                    decimals=decimals,
                )
            )
            continue
        own = [
            next((q for q in quoted if q != c and _norm(q).startswith(_norm(c))), c) for c in own_columns(name, infos)
        ]
        named = {w for c in own for w in re.findall(r"[a-z]+|\d+", slot_words(c))} & _TEXT_WORDS  # "importance.score"
        op_text = " ".join(w for w in slot_text.split() if w not in named)
        if re.search(r"\b(?:mean|median|average|std|sum)\b", op_text):  # "mean_with_tree_null": null is a group
            op_text = " ".join(w for w in op_text.split() if w not in ("null", "notnull", "nonnull", "notna"))
        op = _special_op(op_text, about) or _correlation_op(op_text, context) or _op(op_text)
        own_string = rf"(?:{re.escape(name)}|{re.escape(placeholder)})[\"'`]?\s+is a string\b"
        if op is not None and re.search(own_string, about) and len(_quoted_options(about)) >= 2:
            op = None  # the format says this part is one of its listed words, not a number
        if op is None and len(slots) == 1:
            op = _correlation_op(slot_words(about), context) or _op(slot_words(about))
        if op in (None, "rows") and own and "total" in op_text.split():
            op = "sum"  # "total_abandoned_calls": the sum of the column the slot names, not a row count
        if (
            op not in (None, "r2")
            and set(slot_text.split()) & _TRANSFORMED
            and not any(st["kind"] == "derive" for st in steps)
        ):
            requests.append(Request(slot=name, op="unknown", reason="a transformed column this parser does not build"))
            continue
        listed = _outlier_list(slot_text, placeholder, f"{about} {fmt}", context, infos, asked) if op is None else None
        if listed is not None:
            drop = next((st["column"] for st in steps if st["kind"] == "drop_outliers"), None)
            columns = listed.pop("columns") if drop is None else [drop]
            requests.append(
                Request(
                    slot=name, op="outlier_list", columns=columns, options=listed, decimals=decimals, stage="before"
                )
            )
            continue
        strongest = _strongest(slot_text, context, asked) if op is None else None
        if strongest is not None:
            requests.append(
                Request(slot=name, op="strongest_corr", columns=strongest, options=_options("corr", context))
            )
            continue
        extreme = _extreme(slot_text, body + "\n" + constraints, infos, asked) if op is None else None
        if extreme is not None:
            requests.append(Request(slot=name, op="extreme", columns=extreme.pop("columns"), options=extreme))
            continue
        test = _group_test(frame, context_raw, infos, asked) if op is None and _GROUP_TEST.search(context) else None
        verdict = _verdict(slot_text, about, context, all_names, test) if op is None else None
        if verdict is not None:
            single = verdict["base"] in ("normality", "skew_sign", "skew_normal", "skew_class")
            if verdict["base"] == "group_test":
                cols = verdict.pop("columns")
            else:
                cols = _columns_for("mean" if single else "corr", own, asked if single else (paired or asked), steps)
                if cols is None and verdict["base"] == "direction":  # the sign of the strongest correlation
                    cols = next((r.columns for r in requests if r.op == "strongest_corr"), None)
            if cols is not None:
                rest = [w for w in leftover_words(name, cols, set()) if w not in _VERDICT_WORDS]
                group = group_conditions(rest, frame, infos, set(cols)) if rest else None
                if group:  # "relationship_type_female": the verdict on that group's rows
                    verdict["where"] = group[0] if len(group) == 1 else group
                requests.append(Request(slot=name, op="verdict", columns=cols, options=verdict))
                continue
        if op is None:
            requests.append(
                Request(
                    slot=name,
                    op="unknown",
                    decimals=decimals,
                    reason="no deterministic routine reads this part; a model can answer it",
                )
            )
            continue
        if op == "group_test_p":
            test = _group_test(frame, context_raw, infos, asked)
            if test is None:
                requests.append(Request(slot=name, op="unknown", reason="the groups of this test are not read"))
                continue
            requests.append(Request(slot=name, op=op, columns=test.pop("columns"), options=test, decimals=decimals))
            continue
        if op in ("missing", "unique", "missing_percent", "has_missing"):
            cue = r"\b(?:unique|distinct)\b" if op == "unique" else r"\b(?:missing|null|nan|na|empty)\b"
            near = [
                c
                for sentence in re.split(r"(?<=[.!?])\s+|\n", context_raw)
                if re.search(cue, sentence, re.I)
                for c in [q for q in re.findall(r"[\"'`]([^\"'`]{1,60})[\"'`]", sentence) if q in frame.columns]
                + [m.column for m in find_columns(sentence, infos) if m.column in frame.columns]
            ]
            own = [m.column for m in find_columns(slot_words(name), infos)] or near[:1] or own
        pool = list(dict.fromkeys(summarised + asked)) if op in _SUMMARIES and summarised else asked
        if op in PAIRED_OPS and sides and sides[0] and sides[1] and len(own) == 1:  # "between (a, b, c) and d"
            other = sides[1] if own[0] in sides[0] else sides[0] if own[0] in sides[1] else []
            own = own + [c for c in other if c != own[0]][:1]
        cols = _columns_for(
            op, own, (paired or asked) if op in ("corr", "corr_p") and len(own) < 2 else pool, steps, mentioned
        )
        if cols is None:
            requests.append(Request(slot=name, op="unknown", reason=f"no column named for this {op}"))
            continue
        options = _options(op, context)
        bare = (
            re.sub(r"(?i)(low|lowest|lower|high|highest|upper)", "", name)
            if op in ("outlier_min", "outlier_max")
            else name
        )
        chosen = qualified_columns(
            bare, op, cols, own, asked, shared, frame, infos
        )  # the end of the outliers' range is read
        if chosen is None:
            left = " ".join(leftover_words(name, cols, shared))
            requests.append(Request(slot=name, op="unknown", reason=f"'{left}' in this part is not read"))
            continue
        cols, group = chosen
        if group:
            options["where"] = group
        requests.append(
            Request(slot=name, op=op, columns=cols, options=options, decimals=decimals, stage=_stage(slot_text, op))
        )
    target = next((r.columns for r in requests if r.op == "strongest_corr"), None)
    for r in requests:  # "is that correlation positive or negative": the strongest pair's sign
        if target and r.op == "verdict" and r.options.get("base") == "direction":
            r.columns, r.options["against_strongest"] = target, True
    if not any(r.op == "model" for r in requests):
        used = {c for r in requests for c in r.columns} | {
            c for s in steps for c in s.get("columns", [s.get("column")])
        }
        used |= {w["column"] for r in requests for w in _conditions(r.options.get("where"))}
        used |= {r.options["group"] for r in requests if isinstance(r.options.get("group"), str)}  # a test's groups
        filters = stated_filters(context_raw, frame, {c for c in used if c})
        cut = next((i for i, s in enumerate(steps) if s["kind"] == "drop_outliers"), len(steps))
        steps = steps[:cut] + filters + steps[cut:]
    requests = withhold_unplaced(
        requests,
        clause=unplaced,
        unbuilt=unbuilt,
        side=sides[2] if sides else "",
        restriction=unplaced_restriction(context_raw, steps, [r.options for r in requests]),
    )
    unread = unread_values(context_raw, frame, steps)
    if unread:  # the rows the question is about are named by a value the data does not hold
        reason = f"'{unread[0]}' names rows by a value no column holds; not computed"
        requests = [Request(slot=r.slot, op="unknown", decimals=r.decimals, reason=reason) for r in requests]
    return RequestSpec(requests=_distinct(requests), steps=steps)


def _conditions(where: Any) -> list[dict[str, Any]]:
    return [where] if isinstance(where, dict) else list(where or [])


def _distinct(requests: list[Request]) -> list[Request]:
    """Two slots never share one computation: a second slot that reads as the same operation on
    the same columns was not understood, so it is left uncomputed rather than given the first's value."""
    seen: set[str] = set()
    out = []
    for r in requests:
        key = json.dumps([r.op, r.columns, r.options, r.stage], sort_keys=True, default=str)
        if r.op != "unknown" and key in seen:
            r = Request(slot=r.slot, op="unknown", decimals=r.decimals, reason="reads the same as another part")
        seen.add(key)
        out.append(r)
    return out
