"""Profiling a table: column types, summary statistics and the causal roles columns may play.

Pure functions over a DataFrame, shared by the data profiler and by data repair (which
re-profiles the repaired data). Every classification carries a reason, because a causal
analysis built on a silently wrong column role is worse than none.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from whyflow.causal.dataprep.column_names import keyword_tokens
from whyflow.causal.dataprep.implausible import overflowing
from whyflow.causal.knowledge import ColumnMetadata, Metadata
from whyflow.causal.state import DataProfile

__all__ = [
    "ProfileReport",
    "build_profile",
    "parse_numeric_text",
    "decimal_comma",
    "looks_like_dates",
    "parse_dates",
    "is_missing_indicator",
    "NUMERIC_TYPES",
    "label_variants",
]

NUMERIC_TYPES = frozenset({"numeric", "binary", "ordinal"})
"""Feature types whose values are numbers (binary only when the values are numeric)."""

MAX_CATEGORY_LEVELS = 50
TEXT_NUMERIC_SHARE = 0.95

_TREATMENT_WORDS = {"treat", "treatment", "treated", "intervention", "program", "programme", "exposure", "exposed"}
_TREATMENT_WORDS |= {"training", "trained", "policy", "campaign", "assigned_treatment", "therapy", "drug"}
_OUTCOME_WORDS = {"outcome", "y", "target", "result", "response", "earnings", "income", "wage", "wages", "salary"}
_OUTCOME_WORDS |= {"revenue", "sales", "profit", "spend", "spending", "cost", "price", "mortality", "death"}
_OUTCOME_WORDS |= {"recovery", "survival", "re78", "conversion", "converted", "churn", "yield"}
_WEAK_OUTCOME_WORDS = {"score", "result", "response", "after", "post", "followup"}
_PRE_WORDS = {"prior", "pre", "baseline", "lag", "lagged", "previous", "before", "initial", "re74", "re75"}
_POST_WORDS = {"post", "after", "followup", "follow", "posttreatment"}
_ID_WORDS = {"id", "uuid", "guid", "identifier", "key", "index", "rowid"}
_INSTRUMENT_WORDS = {"instrument", "iv", "lottery", "assigned", "assignment", "eligible", "eligibility"}
_INSTRUMENT_WORDS |= {"draft", "encouragement", "encouraged", "offer", "offered", "randomized", "randomised"}
_TIME_WORDS = {"date", "time", "year", "period", "week", "month", "quarter", "day", "datetime", "timestamp", "wave"}
_RUNNING_WORDS = {"score", "age", "income", "test", "grade", "gpa", "points", "vote", "votes", "margin"}
_RUNNING_WORDS |= {"distance", "threshold", "cutoff", "rank", "size", "enrollment", "enrolment", "birth"}
_NUMBER_SPACE = re.compile(r"[\s$€£¥%'\u00a0\u202f]")


@dataclass
class ProfileReport:
    """A profile plus the reason behind each classification and facts for repair."""

    profile: DataProfile
    reasons: list[str] = field(default_factory=list)
    text_numeric: list[str] = field(default_factory=list)
    id_columns: list[str] = field(default_factory=list)
    constant_columns: list[str] = field(default_factory=list)
    n_unique: dict[str, int] = field(default_factory=dict)
    infinite: dict[str, int] = field(default_factory=dict)
    overflowing: dict[str, int] = field(default_factory=dict)
    """Finite values too large to be measurements (see :func:`overflowing`), by column."""


def is_missing_indicator(name: str) -> bool:
    """Whether a column is a ``<col>_missing`` indicator added by data repair."""
    return str(name).endswith("_missing")


def parse_numeric_text(series: pd.Series) -> pd.Series | None:
    """Parse numbers stored as text ("1,234", " 12 ", "$5", "7%"); None if the column is not numbers.

    A column counts as numeric text when at least 95% of its non-missing values parse after
    removing whitespace, thousands separators, currency and percent signs.
    """
    if pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
        return None
    if pd.api.types.is_datetime64_any_dtype(series):
        return None
    values = series.dropna()
    if values.empty:
        return None
    probe = values.sample(min(len(values), 2000), random_state=0) if len(values) > 2000 else values
    if pd.to_numeric(_number_text(probe.astype(str)), errors="coerce").notna().mean() < TEXT_NUMERIC_SHARE:
        return None
    parsed = pd.to_numeric(_number_text(series.astype("string")), errors="coerce").astype("float64")
    if parsed.notna().sum() < TEXT_NUMERIC_SHARE * series.notna().sum():
        return None
    return parsed


def decimal_comma(series: pd.Series) -> bool:
    """Whether a column of numbers as text writes decimals with a comma ("3,5"; "1.234,5")."""
    text = series.dropna().astype(str).str.replace(_NUMBER_SPACE, "", regex=True)
    commas = text[text.str.contains(",", regex=False)]
    if commas.empty:
        return False
    both = commas[commas.str.contains(".", regex=False)]
    if not both.empty:  # the separator written last is the decimal mark
        return bool((both.str.rfind(",") > both.str.rfind(".")).mean() > 0.5)
    # Thousands groups: 1-3 leading digits (not a lone 0: "0,125" is a decimal), then groups of 3.
    return not bool(commas.str.fullmatch(r"[-+]?[1-9]\d{0,2}(,\d{3})+").all())


def _number_text(text: pd.Series) -> pd.Series:
    """Text numbers in Python's notation: spaces, currency and % removed; decimal commas as points."""
    text = text.str.replace(_NUMBER_SPACE, "", regex=True)
    if decimal_comma(text):
        return text.str.replace(".", "", regex=False).str.replace(",", ".", regex=False)
    return text.str.replace(",", "", regex=False)


def label_variants(series: pd.Series) -> dict[str, str]:
    """Spelling variants of categorical labels (case, surrounding spaces) mapped to their main spelling."""
    counts = series.dropna().astype(str).value_counts()
    groups: dict[str, list[str]] = {}
    for label in counts.index:
        groups.setdefault(label.strip().casefold(), []).append(label)
    mapping: dict[str, str] = {}
    for labels in groups.values():
        clean = [lab for lab in labels if lab == lab.strip()] or [labels[0].strip()]
        main = clean[0]  # value_counts order: the most frequent clean spelling
        mapping.update({lab: main for lab in labels if lab != main})
    return mapping


_DATE_SHAPE = (
    r"\s*(\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4})([ T]\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?)?\s*"
)


def looks_like_dates(series: pd.Series) -> bool:
    """Whether a text column holds dates (2021-03-04, 04/03/2021, 2021-03-04 10:00), whatever its name."""
    if pd.api.types.is_datetime64_any_dtype(series):
        return True
    if pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
        return False
    values = series.dropna().astype(str)
    values = values.sample(200, random_state=0) if len(values) > 200 else values
    if values.empty or values.str.fullmatch(_DATE_SHAPE).mean() < TEXT_NUMERIC_SHARE:
        return False
    parsed = pd.to_datetime(values, errors="coerce", format="mixed")
    return bool(parsed.notna().mean() > TEXT_NUMERIC_SHARE)


def parse_dates(series: pd.Series) -> pd.Series:
    """Dates as text parsed to datetimes (unparseable values become missing)."""
    if pd.api.types.is_datetime64_any_dtype(series):
        return series
    text = series.astype("string")
    parts = text.str.extract(r"^\s*(\d{1,2})[-/.](\d{1,2})[-/.]\d{2,4}").astype("float64")
    # 04/03/2021: day first when some first field exceeds 12 and no second field does (Europe).
    dayfirst = bool((parts[0] > 12).any() and not (parts[1] > 12).any())
    return pd.to_datetime(text, errors="coerce", format="mixed", dayfirst=dayfirst)


def _column_type(series: pd.Series, name: str, n_unique: int, reasons: list[str]) -> str:
    """Classify one column: constant, id, datetime, binary, ordinal, numeric, categorical or text."""
    n_nonnull = int(series.notna().sum())
    if n_unique <= 1:
        reasons.append(f"{name}: constant ({n_unique} distinct value) - carries no information")
        return "constant"
    if pd.api.types.is_datetime64_any_dtype(series):
        return "datetime"
    numeric = pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series)
    integer_like = numeric and _integer_valued(series)
    unique_share = n_unique / max(n_nonnull, 1)
    if (integer_like or not numeric) and unique_share >= 0.95 and n_nonnull > 20 and keyword_tokens(name) & _ID_WORDS:
        reasons.append(f"{name}: identifier ({unique_share:.0%} distinct values, name says id) - never a covariate")
        return "id"
    if n_unique == 2:
        return "binary"
    if numeric:
        values = series.dropna()
        if integer_like and 3 <= n_unique <= 10 and float(values.max() - values.min()) <= 10:
            reasons.append(f"{name}: ordinal ({n_unique} integer levels from {values.min():g} to {values.max():g})")
            return "ordinal"
        return "numeric"
    if looks_like_dates(series):
        reasons.append(f"{name}: dates stored as text - a time axis, never a category or a covariate")
        return "datetime"
    if unique_share >= 0.95 and n_nonnull > 20:
        reasons.append(f"{name}: free text ({unique_share:.0%} distinct strings) - not used as a covariate")
        return "text"
    return "categorical"


def _integer_valued(series: pd.Series) -> bool:
    """Whether every value is a whole number; a fractional value among the first 512 settles it early."""
    values = series.dropna().to_numpy(dtype=float)
    if not np.all(np.mod(values[:512], 1) == 0):
        return False
    return bool(np.all(np.mod(values, 1) == 0))


def _numeric_stats(values: pd.Series, n_unique: int) -> dict[str, float]:
    v = values.dropna().astype("float64")
    if v.empty:
        return {"n_unique": float(n_unique)}
    q = v.quantile([0.25, 0.5, 0.75]).to_numpy()
    return {
        "mean": float(v.mean()),
        "std": float(v.std()) if len(v) > 1 else 0.0,
        "min": float(v.min()),
        "p25": float(q[0]),
        "median": float(q[1]),
        "p75": float(q[2]),
        "max": float(v.max()),
        "n_unique": float(n_unique),
    }


LABEL_WIDTH = 80
"""A category's label in the profile keeps at most this many characters (see :func:`_label`)."""


def _label(value: object) -> str:
    """A category's label as the profile stores it: text over :data:`LABEL_WIDTH` characters cut.

    The cut label says the text's length and a digest of it, so two long labels sharing their
    beginning stay two levels. The profile's counts are for display and for counting levels; a
    megabyte cell would otherwise be copied into every save of the state.
    """
    text = str(value)
    if len(text) <= LABEL_WIDTH:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{text[:LABEL_WIDTH]}… ({len(text):,} characters, #{digest})"


def _value_counts(series: pd.Series) -> dict[str, int]:
    counts = series.value_counts(dropna=True)
    out = {_label(k): int(v) for k, v in counts.head(MAX_CATEGORY_LEVELS).items()}
    rest = int(counts.iloc[MAX_CATEGORY_LEVELS:].sum()) if len(counts) > MAX_CATEGORY_LEVELS else 0
    if rest:
        out["(other)"] = rest
    return out


def _metadata_roles(metadata: Metadata | None) -> tuple[dict[str, str], dict[str, str]]:
    """Roles and measurement timing (pre/post) the metadata states, by column."""
    roles: dict[str, str] = {}
    measured: dict[str, str] = {}
    if metadata is None:
        return roles, measured
    for col, role in (metadata.roles or {}).items():
        roles[str(col)] = str(role).lower()
    for col, spec in (metadata.columns or {}).items():
        if isinstance(spec, ColumnMetadata):
            if spec.role:
                roles[str(col)] = str(spec.role).lower()
            if spec.measured:
                measured[str(col)] = str(spec.measured).lower()
    return roles, measured


def _treatment_score(name: str, series: pd.Series) -> float:
    tokens = keyword_tokens(name)
    score = 3.0 if tokens & _TREATMENT_WORDS else 0.0
    share = float(pd.Series(pd.factorize(series.dropna())[0]).mean()) if series.notna().any() else 0.0
    score += 1.0 if 0.05 <= share <= 0.95 else 0.0
    return score - (2.0 if tokens & (_OUTCOME_WORDS | _PRE_WORDS | _POST_WORDS) else 0.0)


def _outcome_score(name: str, position: int, n_columns: int) -> float:
    tokens = keyword_tokens(name)
    score = 3.0 if tokens & _OUTCOME_WORDS else (1.5 if tokens & _WEAK_OUTCOME_WORDS else 0.0)
    score -= 4.0 if tokens & _PRE_WORDS else 0.0
    return score + (0.5 if position == n_columns - 1 else 0.0)


def _rank(columns: list[str], scores: dict[str, float]) -> list[str]:
    return sorted(columns, key=lambda c: (-scores[c], columns.index(c)))


def _heaping(series: pd.Series) -> float | None:
    """A round value holding a suspicious share of a continuous variable, or None.

    Counted on a seeded sample of at most 100,000 values: a share needs no more.
    """
    v = series.dropna()
    if len(v) > 100_000:
        v = v.sample(100_000, random_state=0)
    counts = v.value_counts()
    top, n_top = counts.index[0], int(counts.iloc[0])
    median_count = float(counts.median())
    is_round = float(top) != 0 and float(top) % 10 == 0
    if is_round and n_top >= 0.03 * len(v) and n_top >= 5 * median_count:
        return float(top)
    return None


def _time_column(types: dict[str, str], frame: pd.DataFrame, hint: str | None) -> tuple[str | None, str]:
    if hint and hint in frame.columns:
        return hint, f"time column '{hint}' given by the study design"
    for col, kind in types.items():
        if kind == "datetime":
            return col, f"time column '{col}': datetime values"
    for col, kind in types.items():
        if keyword_tokens(col) & _TIME_WORDS and kind in ("numeric", "ordinal", "categorical"):
            return (
                col,
                f"time column '{col}': its name says time ({', '.join(sorted(keyword_tokens(col) & _TIME_WORDS))})",
            )
    return None, "no time dimension: no datetime column and no column named date/time/year/period/week"


def build_profile(
    frame: pd.DataFrame,
    treatment: str | None = None,
    outcome: str | None = None,
    metadata: Metadata | None = None,
    *,
    instrument: str | None = None,
    running_variable: str | None = None,
    time_column: str | None = None,
) -> ProfileReport:
    """Profile ``frame`` and classify its columns, explaining each decision in ``reasons``."""
    reasons: list[str] = []
    types: dict[str, str] = {}
    numeric_stats: dict[str, dict[str, float]] = {}
    categorical_stats: dict[str, dict[str, int]] = {}
    text_numeric: list[str] = []
    n_uniques: dict[str, int] = {}
    columns = [str(c) for c in frame.columns]
    infinite: dict[str, int] = {}
    huge: dict[str, int] = {}
    for col in columns:
        series = frame[col]
        parsed = parse_numeric_text(series)
        if parsed is not None:
            text_numeric.append(col)
            reasons.append(f"{col}: numbers stored as text (e.g. {series.dropna().iloc[0]!r}) - profiled as numbers")
            series = parsed
        if pd.api.types.is_float_dtype(series):
            n_inf = int(np.isinf(series.to_numpy(dtype="float64", na_value=np.nan)).sum())
            if n_inf:
                infinite[col] = n_inf
                reasons.append(f"{col}: {n_inf:,} infinite values (inf/-inf) - treated as missing")
                series = series.replace([np.inf, -np.inf], np.nan)
            too_large = overflowing(series.to_numpy(dtype="float64", na_value=np.nan))
            if too_large.any():
                huge[col] = int(too_large.sum())
                largest = float(np.abs(series.to_numpy(dtype="float64", na_value=np.nan)[too_large]).max())
                reasons.append(
                    f"{col}: {huge[col]:,} implausibly large values (up to {largest:.3g}; a sum of the column's "
                    f"squares would overflow) - not measurements, treated as missing"
                )
                series = series.mask(too_large)
        n_unique = int(series.nunique(dropna=True))
        n_uniques[col] = n_unique
        kind = _column_type(series, col, n_unique, reasons)
        types[col] = kind
        is_number = pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series)
        if is_number and kind in NUMERIC_TYPES | {"id"}:
            numeric_stats[col] = _numeric_stats(series.astype("float64"), n_unique)
        if kind in ("categorical", "binary", "ordinal"):
            categorical_stats[col] = _value_counts(series)
    report = ProfileReport(
        profile=DataProfile(
            n_samples=len(frame),
            n_features=len(columns),
            feature_names=columns,
            feature_types=types,
            missing_values={c: int(frame[c].isna().sum()) + infinite.get(c, 0) + huge.get(c, 0) for c in columns},
            numeric_stats=numeric_stats,
            categorical_stats=categorical_stats,
        ),
        reasons=reasons,
        text_numeric=text_numeric,
        id_columns=[c for c, k in types.items() if k == "id"],
        constant_columns=[c for c, k in types.items() if k == "constant"],
        n_unique=n_uniques,
        infinite=infinite,
        overflowing=huge,
    )
    _classify(report, frame, treatment, outcome, metadata, instrument, running_variable, time_column)
    return report


def _classify(
    report: ProfileReport,
    frame: pd.DataFrame,
    treatment: str | None,
    outcome: str | None,
    metadata: Metadata | None,
    instrument: str | None,
    running_variable: str | None,
    time_hint: str | None,
) -> None:
    """Fill the causal classifications of ``report.profile`` in place, with reasons."""
    prof, reasons = report.profile, report.reasons
    types = prof.feature_types
    columns = prof.feature_names
    roles, measured = _metadata_roles(metadata)
    treatment = treatment or next((c for c, r in roles.items() if r == "treatment" and c in types), None)
    outcome = outcome or next((c for c, r in roles.items() if r == "outcome" and c in types), None)

    binary = [c for c in columns if types[c] == "binary" and c != outcome and not is_missing_indicator(c)]
    t_scores = {c: _treatment_score(c, frame[c]) for c in binary}
    treatments = _rank(binary, t_scores)
    if treatment:
        treatments = [treatment] + [c for c in treatments if c != treatment]
        reasons.append(f"treatment candidates: '{treatment}' first (the user's choice)")
    if treatments:
        reasons.append(
            "treatment candidates: binary columns, ranked by name cues (treat/program/exposure...) and balance: "
            + ", ".join(treatments[:5])
        )
    else:
        reasons.append("treatment candidates: none (no binary column and no user choice)")

    contin = [c for c in columns if types[c] in ("numeric", "ordinal") and c != treatment]
    o_scores = {
        c: _outcome_score(c, columns.index(c), len(columns)) - (1.0 if types[c] == "ordinal" else 0.0) for c in contin
    }
    outcomes = _rank(contin, o_scores)
    if outcome:
        outcomes = [outcome] + [c for c in outcomes if c != outcome]
        reasons.append(f"outcome candidates: '{outcome}' first (the user's choice)")
    reasons.append(
        "outcome candidates: numeric non-binary columns, ranked by name cues (outcome/earnings/...; "
        "prior/baseline penalised): " + (", ".join(outcomes[:5]) or "none")
    )
    t0 = treatments[0] if treatments else None
    y0 = outcomes[0] if outcomes else None

    instruments = [instrument] if instrument and instrument in types else []
    for c in columns:
        if c in (t0, y0) or c in instruments or types[c] in ("id", "constant", "text", "datetime"):
            continue
        if roles.get(c) == "instrument":
            instruments.append(c)
            reasons.append(f"instrument candidate '{c}': the metadata says so")
        elif keyword_tokens(c) & _INSTRUMENT_WORDS:
            instruments.append(c)
            reasons.append(f"instrument candidate '{c}': its name suggests assignment/eligibility - verify exclusion")
    if not instruments:
        reasons.append("instruments: none - no column named like an instrument and no metadata role")

    time_col, why = _time_column(types, frame, time_hint)
    reasons.append(why)

    excluded_roles = {"mediator", "collider", "outcome", "treatment", "instrument", "id", "post_treatment"}
    confounders: list[str] = []
    for c in columns:
        if c in (t0, y0) or c in instruments:
            continue
        if types[c] in ("id", "constant", "text", "datetime"):
            continue
        if roles.get(c) in excluded_roles or measured.get(c) in ("post", "after", "followup"):
            reasons.append(
                f"'{c}' not a confounder: the metadata marks it {roles.get(c) or 'measured after treatment'}"
            )
            continue
        if keyword_tokens(c) & _POST_WORDS and not keyword_tokens(c) & _PRE_WORDS:
            reasons.append(f"'{c}' not a confounder: its name says it is measured after treatment")
            continue
        confounders.append(c)
    skipped = [c for c in columns if types[c] in ("id", "constant", "text", "datetime") and c not in (t0, y0)]
    reasons.append(
        f"potential confounders: the {len(confounders)} other usable columns"
        + (f"; left out (id/constant/text/datetime): {', '.join(skipped)}" if skipped else "")
    )

    discontinuity: list[str] = [running_variable] if running_variable and running_variable in types else []
    for c in columns:
        if c in (t0, y0) or c in discontinuity or types[c] != "numeric":
            continue
        if report.n_unique[c] <= 20:
            continue
        if keyword_tokens(c) & _RUNNING_WORDS:
            discontinuity.append(c)
            reasons.append(f"discontinuity candidate '{c}': a continuous variable of a kind often cut at a threshold")
            continue
        values = parse_numeric_text(frame[c]) if c in report.text_numeric else frame[c]
        heap = _heaping(values)
        if heap is not None:
            discontinuity.append(c)
            reasons.append(f"discontinuity candidate '{c}': values heap at the round number {heap:g}")

    prof.treatment_candidates = treatments
    prof.outcome_candidates = outcomes
    prof.potential_confounders = confounders
    prof.potential_instruments = instruments
    prof.has_time_dimension = time_col is not None
    prof.time_column = time_col
    prof.discontinuity_candidates = discontinuity
