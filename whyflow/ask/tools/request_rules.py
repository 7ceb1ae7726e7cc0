"""The rules a request's slot states in words, read from the question and its format: a verdict
decided by a computed number ("linear" / "nonlinear" / "none", "Normal" / "Not Normal", "Yes" /
"No"), the label with the highest value, a named group test, and the options of each operation
(population or sample deviation, Pearson or Spearman, the outlier rule). Used by
:mod:`whyflow.ask.tools.requests`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from whyflow.ask.tools.slots import ColumnInfo, find_columns

if TYPE_CHECKING:
    import pandas as pd

_ORDINALS = {"first": "1", "second": "2", "third": "3", "fourth": "4", "fifth": "5", "1st": "1", "2nd": "2", "3rd": "3"}


_TWO_SAMPLE_KS = re.compile(r"two.sample (?:kolmogorov|ks\b)|ks_2samp")
_GROUP_TEST = re.compile(
    r"t-?test|\bt test|mann.?whitney|anova|analysis of variance|kruskal|two.sample (?:kolmogorov|ks\b)|"
    r"ks_2samp"
)


def _group_test(frame: pd.DataFrame, text: str, infos: list[ColumnInfo], asked: list[str]) -> dict[str, Any] | None:
    """A two-sample or k-sample test the question names: the value column, the group column and,
    for two-sample tests on a column with more groups, the two groups the question names."""
    low = text.lower()
    test = (
        "mannwhitney"
        if re.search(r"mann.?whitney", low)
        else "anova"
        if re.search(r"anova|analysis of var", low)
        else "kruskal"
        if "kruskal" in low
        else "ks2"
        if _TWO_SAMPLE_KS.search(low)
        else "welch"
        if re.search(r"welch|unequal variance", low)
        else "ttest"
    )
    mentioned = [m.column for m in find_columns(text, infos)]
    groups = sorted(
        (
            c
            for c in infos
            if c.categorical
            and c.name in frame.columns
            and (c.name in mentioned or _values_named(frame, c.name, low) >= 2)
            and 1 < (c.n_unique or 0) <= 20
        ),
        key=lambda c: (-_values_named(frame, c.name, low), c.n_unique or 0),
    )
    values = [c for c in asked if not any(g.name == c for g in groups)]
    if not groups or not values:
        return None
    group = groups[0].name
    levels = [v for v in frame[group].dropna().unique().tolist()]
    chosen = levels
    if test not in ("anova", "kruskal") and len(levels) > 2:
        named = set(re.findall(r"\b(\d+)(?:st|nd|rd|th)?\b", low)) | {
            _ORDINALS[w] for w in re.findall(r"[a-z]+", low) if w in _ORDINALS
        }
        chosen = [v for v in levels if str(v).removesuffix(".0") in named or str(v).lower() in low.split()]
        if len(chosen) != 2:
            return None
    return {"test": test, "group": group, "levels": chosen, "columns": [values[0]]}


def _values_named(frame: pd.DataFrame, column: str, low: str) -> int:
    """How many of a column's values the text names as words ("male ... female": both of Sex's)."""
    words = set(re.findall(r"[a-z0-9]+", low))
    return sum(str(v).lower() in words for v in frame[column].dropna().unique()[:20] if not str(v).isdigit())


_STATISTIC = re.compile(
    r"\b(?:skew\w*|kurtosis|median|standard deviation|std|variance|range|correlation|growth|change|"
    r"increase|decrease|ratio|proportion|percentage|rate)\b",
    re.I,
)
"""Statistics a "which label has the highest ..." question may name that are not the value itself."""


def _extreme(slot_text: str, text: str, infos: list[ColumnInfo], asked: list[str]) -> dict[str, Any] | None:
    """ "Which country has the highest score": the label (a text column the slot names) of the row,
    or of the group when the question averages per label, with the largest or smallest value."""
    if set(slot_text.split()) & {"count", "number", "num", "total", "sum", "amount"}:
        return None  # a number slot ("most_missing_station_count") is never answered with a label
    low = text.lower()
    words = set(slot_text.split()) | set(re.findall(r"[a-z]+", low[:300]))
    if words & {"highest", "largest", "most", "maximum", "max", "top", "greatest"}:
        largest = True
    elif words & {"lowest", "smallest", "least", "minimum", "min", "fewest"}:
        largest = False
    else:
        return None
    labels = [
        c
        for c in infos
        if not c.numeric
        and (
            _norm(c.name) in {_norm(w) for w in slot_text.split()}
            or any(_norm(c.name).startswith(_norm(w)) and len(w) > 3 for w in slot_text.split())
        )
    ]
    cue = re.compile(r"\b(?:highest|largest|most|maximum|greatest|lowest|smallest|least|minimum|fewest)\b", re.I)
    near = [
        m.column
        for sentence in re.split(r"(?<=[.!?])\s+|\n", text)
        if cue.search(sentence)
        for m in find_columns(sentence, infos)
        if _numeric(m.column, infos)
    ]
    values = [c for c in near + asked if c not in {x.name for x in labels}]
    if len(labels) != 1 or not values:
        return None
    cued = " ".join(s for s in re.split(r"(?<=[.!?])\s+|\n", text) if cue.search(s)) + " " + slot_text
    named_stats = {m.group(0).lower() for m in _STATISTIC.finditer(cued)} - set(words_of(values[0]))
    if named_stats:  # "the highest skewness": a statistic per label this rule does not compute
        return None
    per_group = bool(re.search(r"\b(?:average|mean)\b", low)) and bool(re.search(r"\b(?:each|per|every)\b", low))
    return {"columns": [labels[0].name, values[0]], "largest": largest, "per_group": per_group}


_NEGATIVE = re.compile(r"^(?:no|not|non|false|none)\b|\b(?:not|non)[- ]|^non|^not|^no$|^false$", re.I)


def _quoted_options(about: str) -> list[str]:
    found = re.findall(r"\"([^\"]{1,40})\"|(?<![A-Za-z])'([^']{1,40})'(?![A-Za-z])", about)
    return list(dict.fromkeys((a or b).strip() for a, b in found if (a or b).strip()))


def _bounds(context: str, cue: str) -> list[float]:
    """Numbers between 0 and 1 in the sentences of ``context`` that match ``cue``, largest first."""
    sentences = [x for x in re.split(r"(?<=[.;!?])\s+|\n", context) if re.search(cue, x)]
    found = {float(n) for x in sentences for n in re.findall(r"(?<![\w.])(0?\.\d+)(?!\d)", x)}
    return sorted((n for n in found if 0 < n < 1), reverse=True)


def _verdict(
    slot_text: str, about: str, context: str, names: set[str], group_test: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    """A yes/no (or linear/nonlinear/none) slot decided by a computed number and the rule the
    question states, answered with the exact words its format lists; None without such words."""
    words = set(slot_text.split())
    options = [o for o in _quoted_options(about) if _norm(o) not in names and " is " not in o]
    short = [o for o in options if len(o.split()) <= 4]
    options = short if len(short) >= 2 else options
    if not options and re.search(r"\bboolean\b", about, re.I):  # as the format spells them: "(true)", "(false)"
        options = (
            ["true", "false"] if re.search(r"\btrue\b", about) and re.search(r"\bfalse\b", about) else ["True", "False"]
        )
    yes = [o for o in options if not _NEGATIVE.search(o)]
    no = [o for o in options if _NEGATIVE.search(o)]
    alpha = re.search(
        r"(?:alpha|significance level)[^0-9]{0,20}(0?\.\d+)|p-?value[^.]{0,30}?(?:less|greater|smaller|"
        r"larger) than\s+(?:or equal to\s+)?(0?\.\d+)",
        context,
    )
    level = float(next(g for g in alpha.groups() if g)) if alpha else 0.05
    base: str | None = None
    if words & {"relationship", "relation"} and "correlat" in context:
        low = [o for o in options if o.lower().startswith(("nonlinear", "non-linear"))]
        lin = [o for o in options if o.lower() == "linear"]
        none = [o for o in options if o.lower() in ("none", "no relationship", "no")]
        if not (low and lin):
            return _verdict(" ".join(words - {"relationship", "relation"}), about, context, names, group_test)
        r_min = re.search(r"(?:absolute value of r|\|r\||abs\(r\))[^0-9]{0,30}(0?\.\d+)", context)
        return {
            "base": "relationship",
            "alpha": level,
            "r_min": float(r_min.group(1)) if r_min else 0.5,
            "linear": lin[0],
            "nonlinear": low[0],
            "none": none[0] if none else None,
            **_options("corr", context),
        }
    pos = [o for o in options if re.search(r"\bpositive", o, re.I)]
    neg = [o for o in options if re.search(r"\bnegative", o, re.I)]
    if pos and neg and words & {"type", "direction", "sign"}:
        if words & {"skew", "skewness"}:
            return {"base": "skew_sign", "positive": pos[0], "negative": neg[0], **_options("skew", context)}
        if words & {"correlation", "corr"} and "correlat" in context:
            return {"base": "direction", "positive": pos[0], "negative": neg[0], **_options("corr", context)}
    bounds = _bounds(context, r"strong|moderate|weak")
    lows = {o.lower(): o for o in options}
    if {"strong", "moderate", "weak"} <= set(lows) and "correlat" in context and len(bounds) >= 2:
        return {
            "base": "strength",
            "strong": lows["strong"],
            "moderate": lows["moderate"],
            "weak": lows["weak"],
            "strong_min": bounds[0],
            "moderate_min": bounds[1],
            **_options("corr", context),
        }
    left = [o for o in options if re.search(r"left|negative", o, re.I)]
    right = [o for o in options if re.search(r"right|positive", o, re.I)]
    middle = [o for o in options if re.search(r"symmetric|normal|approx", o, re.I)]
    skew_bounds = _bounds(context, r"skew")
    if left and right and middle and skew_bounds:
        return {
            "base": "skew_class",
            "left": left[0],
            "right": right[0],
            "middle": middle[0],
            "bound": skew_bounds[-1],
            **_options("skew", context),
        }
    if len(yes) != 1 or len(no) != 1:
        return None
    if words & {"normal", "normality", "normally"} or all("normal" in o.lower() for o in yes + no):
        test = _options("normality_p", context)
        if not re.search(r"shapiro|kolmogorov|\bks\b|normaltest|d'agostino", context):
            if skew_bounds:  # "normal if the skewness lies between -0.5 and 0.5"
                return {
                    "base": "skew_normal",
                    "bound": skew_bounds[-1],
                    "yes": yes[0],
                    "no": no[0],
                    **_options("skew", context),
                }
            return None
        base = "normality"
        return {"base": base, "alpha": level, "yes": yes[0], "no": no[0], **test}
    if (
        words & {"significant", "significance", "difference", "significantly", "different"}
        and _GROUP_TEST.search(context)
        and group_test
    ):
        return {"base": "group_test", "alpha": level, "yes": yes[0], "no": no[0], **group_test}
    correlation = "correlat" in context and not re.search(r"t-?test|anova|\bchi\b|chi-?squared?", context)
    if correlation and (words & {"significant", "significance"} or "correlat" in yes[0].lower()):
        if "p-value" not in context and "p value" not in context:  # "correlate if |r| >= 0.1": a rule on r alone
            r_min = re.search(r"(?:absolute value of r|\|r\|)[^0-9.]{0,40}(0?\.\d+)", context)
            return (
                {
                    "base": "r_threshold",
                    "r_min": float(r_min.group(1)),
                    "yes": yes[0],
                    "no": no[0],
                    **_options("corr", context),
                }
                if r_min
                else None
            )
        return {"base": "significance", "alpha": level, "yes": yes[0], "no": no[0], **_options("corr", context)}
    if (
        correlation
        and words & {"relationship", "relation", "status"}
        and re.search(r"(?:absolute value of r|\|r\|)[^0-9.]{0,40}(0?\.\d+)", context)
        and "p-value" not in context
    ):
        r_min = re.search(r"(?:absolute value of r|\|r\|)[^0-9.]{0,40}(0?\.\d+)", context)
        assert r_min is not None
        return {
            "base": "r_threshold",
            "r_min": float(r_min.group(1)),
            "yes": yes[0],
            "no": no[0],
            **_options("corr", context),
        }
    return None


def _options(op: str, context: str) -> dict[str, Any]:
    opts: dict[str, Any] = {}
    if op in ("std", "var") and re.search(r"population|divided by n\b|/\s*n\b|ddof\s*=\s*0", context):
        opts["ddof"] = 0
    if op in ("skew", "kurtosis") and re.search(r"scipy|fisher.pearson|bias", context):
        opts["library"] = "scipy"
    if op in ("corr", "corr_p"):
        opts["method"] = "spearman" if "spearman" in context else "kendall" if "kendall" in context else "pearson"
    if op == "normality_p":
        opts["test"] = (
            "ks"
            if re.search(r"kolmogorov|\bks\b", context)
            else "normaltest"
            if re.search(r"normaltest|d'agostino", context)
            else "shapiro"
        )
    if op in ("outlier_count", "outlier_min", "outlier_max"):
        opts.update(_outlier_rule(context))
    least = re.search(r"at least (\d+) (?:times|observations|occurrences|records|rows|entries)", context)
    if op == "unique" and least:  # "unique species that appear at least 5 times"
        opts["min_count"] = int(least.group(1))
    return opts


def _outlier_rule(context: str) -> dict[str, Any]:
    if re.search(r"z.?score|standard deviations? from the mean", context):
        number = re.search(
            r"(?:greater than|exceed\w*|more than|above|beyond|>|of|threshold of)\s*\+?(\d+(?:\.\d+)?)",
            context[context.find("z") :] if "z" in context else context,
        )
        return {"method": "zscore", "threshold": float(number.group(1)) if number else 3.0}
    k = re.search(r"(\d+(?:\.\d+)?)\s*\*?\s*(?:times\s+)?(?:the\s+)?iqr", context)
    return {"method": "iqr", "threshold": float(k.group(1)) if k else 1.5}


def _numeric(name: str, infos: list[ColumnInfo]) -> bool:
    return any(c.name == name and c.numeric for c in infos)


def words_of(text: str) -> list[str]:
    """The lower-case words and numbers of a name or a sentence, snake_case and camelCase split."""
    return re.findall(r"[a-z]+|\d+", re.sub(r"([a-z])([A-Z])", r"\1 \2", text).lower())


def quoted_extension(column: str, text: str, infos: list[ColumnInfo]) -> str:
    """The column name the text quotes that extends a column read from its words ('number of deaths'
    read as 'No. of deaths' where the question quotes "No. of deaths_max"), else the column."""
    names = {c.name for c in infos}
    quoted = [q for q in re.findall(r"[\"'`]([^\"'`]{1,60})[\"'`]", text) if q in names]
    return next((q for q in quoted if q != column and _norm(q).startswith(_norm(column))), column)


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", text.lower())


def _outlier_list(
    slot_text: str, placeholder: str, about: str, context: str, infos: list[ColumnInfo], asked: list[str]
) -> dict[str, Any] | None:
    """A slot listing the outliers themselves: their labels (the countries, the ids the format
    names) or their values, in the format's separator and order."""
    words = set(slot_text.split())
    if not words & {"outlier", "outliers"} or words & {"count", "number", "num", "n", "total"}:
        return None
    if not re.search(r"\blist|,\s*\.\.\.|\.\.\.|\bids?\b|countr", f"{placeholder} {about}", re.I):
        return None
    values = [c for c in asked if c in {i.name for i in infos if i.numeric}]
    if not values:
        return None
    quoted = set(re.findall(r"[\"'`]([^\"'`]{1,40})[\"'`]", about))
    label = next((i.name for i in infos if i.name in quoted and i.name not in values), None)
    if label is None:
        label = next(
            (
                i.name
                for i in infos
                if not i.numeric and any(_norm(i.name).startswith(_norm(w)[:6]) for w in words if len(w) > 4)
            ),
            None,
        )
    if label is None and words & {"id", "ids", "identifiers"}:  # "outlier_ids": the rows' identifier column
        label = next((i.name for i in infos if _norm(i.name).endswith("id") and i.name not in values), None)
    sep = "," if re.search(r"\w,\w", placeholder) else ", "
    return {
        "label": label,
        "separator": sep,
        "sort": bool(re.search(r"ascending|sorted", about, re.I)),
        "columns": values[:1],
        **_outlier_rule(context),
    }


def _special_op(slot_text: str, about: str) -> str | None:
    """Operations a slot names only with its format's words: the outliers as a count ("class1_outliers"
    is a non-negative integer), the share of missing values in percent, the column with the most
    missing values ("max_missing_values[column_name]")."""
    words = set(slot_text.split())
    low = about.lower()
    if "shapiro" in words and words & {"w", "statistic", "stat"}:
        return "normality_stat"
    if words & {"outlier", "outliers"} and "range" in words:  # "outlier_range_low": the smallest outlier
        if words & {"low", "lowest", "min", "minimum", "lower"}:
            return "outlier_min"
        if words & {"high", "highest", "max", "maximum", "upper"}:
            return "outlier_max"
    if words & {"outlier", "outliers"} and not words & {"list", "ids", "id", "values", "range", "names", "index"}:
        if re.search(r"\b(?:integers?|counts?|number of)\b", low):
            return "outlier_count"
    if words & {"missing", "null", "nan", "na"}:
        if words & {"has", "any", "contains", "have"}:
            return "has_missing"
        if words & {"percentage", "percent", "proportion", "pct"}:
            return "missing_percent"
        if words & {"column", "name"} or re.search(r"\bname of the column\b|\bcolumn name\b", low):
            return "most_missing"
    return None


def _strongest(slot_text: str, context: str, asked: list[str]) -> list[str] | None:
    """ "Which variable has the strongest correlation with the happiness score": the column the
    question correlates every other numeric column with (returned as the request's one column)."""
    words = set(slot_text.split())
    if not (
        words & {"strongest", "highest", "most", "largest"}
        and words & {"variable", "feature", "column", "factor", "predictor", "name"}
    ):
        return None
    if "correlat" not in context or not asked:
        return None
    return asked[:1]


_EVERY_OTHER = re.compile(r"\b(?:all|every|each|any)\b[^,;]*\b(?:variables?|columns?|features?|factors?)\b", re.I)
_BACK_REFERENCE = re.compile(r"\b(?:these|those|the) (?:two|2|both) (?:columns|variables|features)\b|\bthem\b", re.I)


def between_sides(text: str, infos: list[ColumnInfo]) -> tuple[list[str], list[str], str] | None:
    """The numeric columns of each side of a "correlation between A and B" clause, and the words of
    a side that names no column ('' when both do). The first clause whose two sides both name
    columns wins ("all other variables" names every column; "these two columns" the pair an earlier
    sentence names); else the first with a side that names none; None when no clause has two sides."""
    unread: tuple[list[str], list[str], str] | None = None
    earlier: list[str] = []
    for sentence in re.split(r"(?<=[.!?])\s+|\n", text):
        between = re.search(r"\bbetween\b(.*)", sentence, re.I)
        if between and re.search(r"correlat|relat|associat", sentence, re.I):
            clause = re.split(r"[?;:]|\.(?=\s|$)", between.group(1))[0]
            sides = re.split(r"\band\b", clause)
            if _BACK_REFERENCE.search(clause) and len(earlier) >= 2:
                return [earlier[0]], [earlier[1]], ""
            if len(sides) == 2:
                found = [[m.column for m in find_columns(side, infos) if _numeric(m.column, infos)] for side in sides]
                missing = [
                    side.strip(" ,")
                    for side, cols in zip(sides, found, strict=True)
                    if not cols and not _EVERY_OTHER.search(side)
                ]
                if not missing:
                    return found[0], found[1], ""
                unread = unread or (found[0], found[1], missing[0])
        earlier += [m.column for m in find_columns(sentence, infos) if _numeric(m.column, infos)]
    return unread


def _correlated(text: str, infos: list[ColumnInfo]) -> list[str]:
    """The two columns of the first sentence that correlates two named columns."""
    sides = between_sides(text, infos)
    if sides is not None and sides[0] and sides[1]:  # one column of each side, not two of the first
        return [sides[0][0], next((c for c in sides[1] if c != sides[0][0]), sides[1][0])]
    for sentence in re.split(r"(?<=[.!?])\s+|\n", text):
        if re.search(r"correlat|relat|associat", sentence, re.I):
            between = re.search(r"\bbetween\b(.*)", sentence, re.I)  # "adding A and B, then correlate C and D"
            cols = (
                [m.column for m in find_columns(between.group(1), infos) if _numeric(m.column, infos)]
                if between
                else []
            )
            if len(cols) >= 2:
                return cols[:2]
            cols = [m.column for m in find_columns(sentence, infos) if _numeric(m.column, infos)]
            if len(cols) >= 2:
                return cols[:2]
    return []


def _columns_for(
    op: str, own: list[str], asked: list[str], steps: list[dict[str, Any]], anything: list[str] | None = None
) -> list[str] | None:
    """The request's columns: its own, then those the question names (``anything``: of any type)."""
    anything = anything or []
    derived = [s["name"] for s in steps if s["kind"] == "derive"]
    if op == "rows":
        return own
    if op == "has_missing":  # only the column the slot names: "has_nan_values_in_new_feature" of no other
        return own[:1] or None
    if op in ("missing", "unique", "missing_percent"):
        return own[:1] or anything[:1]
    if op == "most_missing":
        return []
    pool = list(dict.fromkeys(own + asked + derived))
    if op in ("corr", "corr_p", "slope", "intercept", "r2"):
        return pool[:2] if len(pool) >= 2 else None
    if own:
        return own[:1]
    drop = next((s["column"] for s in steps if s["kind"] == "drop_outliers"), None)
    first = derived[:1] or ([drop] if drop else []) or asked[:1]
    return first or None
