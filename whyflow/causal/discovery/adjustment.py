"""Choosing what to adjust for and preparing the analysis frame for the estimators.

One place decides the covariates of both ps_diagnostics and the effect estimators, so the two
agents always describe the same adjustment: confounder_discovery's set when present, else the
profile's potential confounders; never mediators, colliders, post-treatment variables or
deterministic functions of the treatment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from whyflow.causal.dataprep.frame_checks import at_most_distinct
from whyflow.causal.diagnostics import ConfounderDiscovery
from whyflow.causal.discovery.design_rank import collinear_columns
from whyflow.causal.knowledge import DomainKnowledge
from whyflow.causal.review.improvements import CODES, ordered_codes
from whyflow.core.errors import AgentError

SPARSE_COVARIATE_SHARE = 0.5
"""A covariate missing in more rows than this is left out of complete-case adjustment (stated, never silent)."""

__all__ = [
    "CODES",
    "Adjustment",
    "Prepared",
    "critique_codes",
    "choose_adjustment",
    "derived_from_treatment",
    "encode_treatment",
    "prepare",
    "safe_name",
]


@dataclass
class Adjustment:
    """The covariates to adjust for, what was excluded and why, and where they came from."""

    covariates: list[str]
    excluded: dict[str, str] = field(default_factory=dict)
    source: str = ""
    added: list[str] = field(default_factory=list)
    caveat: str = ""
    recipe_choice: list[str] | None = None
    """With stated controls (``--controls``): the covariates the recipe would have chosen; ``None`` otherwise."""


@dataclass
class Prepared:
    """Complete cases with a 0/1 treatment, a float outcome and an encoded covariate matrix."""

    frame: pd.DataFrame
    t: np.ndarray
    y: np.ndarray
    X: pd.DataFrame
    treated_label: str
    n_missing_dropped: int
    notes: list[str] = field(default_factory=list)
    rows: np.ndarray | None = None
    """The analysed rows as the data's own row labels (the frame, t, y and X are renumbered 0..n-1)."""
    collinear: dict[str, str] = field(default_factory=dict)
    """Encoded covariate columns dropped because the design [1, t, X] would be singular, with why."""


def critique_codes(critique_history: list[Any] | None) -> list[str]:
    """Improvement codes in the latest critique (``code: words`` strings), in order."""
    return ordered_codes(critique_history[-1].improvements) if critique_history else []


def derived_from_treatment(frame: pd.DataFrame, treatment: str, candidates: list[str]) -> list[str]:
    """Columns that are deterministic functions of the treatment (constant within each arm).

    Such a column is the treatment under another name: adjusting for it leaves no variation in
    treatment to learn from (perfect separation).
    """
    t = frame[treatment]
    n_levels = int(t.nunique())
    out: list[str] = []
    for col in candidates:
        pair = frame[[treatment, col]]
        if pair.isna().to_numpy().any():
            pair = pair.dropna()
        if pair.empty or at_most_distinct(pair[col], 1):
            continue
        # Constant within each arm: not if an arm already varies in the first rows; else every value
        # equals its arm's first (groupby's nunique, without hashing every value).
        head = pair.iloc[:512]
        varies = len(pair) > len(head) and bool((head.groupby(treatment)[col].nunique() > 1).any())
        if not varies and bool((pair[col] == pair.groupby(treatment, sort=False)[col].transform("first")).all()):
            out.append(col)
            continue
        # One treatment level per value: only possible when the column has no more values than the treatment.
        if at_most_distinct(pair[col], n_levels) and (pair.groupby(col)[treatment].nunique() <= 1).all():
            out.append(col)
            continue
        if pd.api.types.is_numeric_dtype(pair[col]) and pd.api.types.is_numeric_dtype(pair[treatment]):
            if pair[col].std() > 0 and pair[treatment].std() > 0 and abs(pair[col].corr(pair[treatment])) > 0.999:
                out.append(col)
    return out


def _exclusions(
    confounder_discovery: ConfounderDiscovery | None, domain_knowledge: DomainKnowledge | None
) -> dict[str, str]:
    excluded: dict[str, str] = {}
    cd = confounder_discovery or ConfounderDiscovery()
    for col, reason in cd.excluded.items():
        excluded[str(col)] = f"excluded by confounder discovery: {reason}"
    for cols, label in (
        (cd.mediators, "mediator (on the causal path)"),
        (cd.colliders, "collider (common effect)"),
        (cd.descendants, "descendant of the treatment"),
        (cd.derived_from_treatment, "deterministic function of the treatment"),
    ):
        for col in cols:
            excluded.setdefault(str(col), label)
    for col in cd.instruments:
        excluded.setdefault(str(col), "instrument (affects the outcome only through the treatment)")
    dk = domain_knowledge or DomainKnowledge()
    for col in dk.post_treatment:
        excluded.setdefault(str(col), "measured after the treatment (domain knowledge)")
    for col, role in dk.roles.items():
        if role in ("mediator", "id", "collider"):
            excluded.setdefault(str(col), f"role '{role}' in domain knowledge")
    return excluded


def choose_adjustment(
    frame: pd.DataFrame,
    treatment: str,
    outcome: str,
    potential_confounders: list[str],
    confounder_discovery: ConfounderDiscovery | None = None,
    domain_knowledge: DomainKnowledge | None = None,
    *,
    widen: bool = False,
    design_columns: tuple[str | None, ...] = (),
    stated: list[str] | None = None,
) -> Adjustment:
    """The covariates to adjust for, with every exclusion and its reason.

    ``widen`` (critique code ``widen_adjustment_set``) adds discovery's data-associated
    variables and the profile's potential confounders that no rule excludes. ``stated`` (the
    analyst's ``--controls``) is the answer as given: the recipe's own choice is still made and
    returned beside it (``recipe_choice``), and where the recipe would leave a stated control out
    the caveat says why (widening never applies to a stated set).
    """
    if stated is not None:
        own = choose_adjustment(
            frame,
            treatment,
            outcome,
            potential_confounders,
            confounder_discovery,
            domain_knowledge,
            design_columns=design_columns,
        )
        return _as_stated(frame, stated, own)
    cd = (
        confounder_discovery
        if confounder_discovery is not None and confounder_discovery.treatment in (None, treatment)
        else None
    )
    excluded = _exclusions(cd, domain_knowledge)
    reserved = {treatment, outcome, *[c for c in design_columns if c]}
    if cd is not None and cd.recipe_adjustment_set is not None:  # discovery recorded stated controls
        base = [str(c) for c in cd.recipe_adjustment_set]
        source = "confounder_discovery adjustment set"
    elif cd is not None and "adjustment_set" in cd.model_fields_set:
        base = [str(c) for c in cd.adjustment_set]
        source = "confounder_discovery adjustment set"
    else:
        base = [str(c) for c in potential_confounders]
        source = "profile's potential confounders (no confounder discovery)"
    pool = list(base)
    added: list[str] = []
    if widen:
        for col in [*(cd.data_associated if cd is not None else []), *potential_confounders]:
            if col not in pool:
                pool.append(str(col))
                added.append(str(col))
    pool = [c for c in pool if c in frame.columns and c not in reserved]
    if cd is None:
        _column_roles(frame, treatment, outcome, [c for c in pool if c not in excluded], domain_knowledge, excluded)
    for col in derived_from_treatment(frame, treatment, [c for c in pool if c not in excluded]):
        excluded[col] = "deterministic function of the treatment (constant within each arm)"
    sparse = []
    for col in pool:
        share = float(frame[col].isna().mean()) if len(frame) else 0.0
        if col not in excluded and share > SPARSE_COVARIATE_SHARE:
            # Complete cases with it would keep almost no rows: leave it out, and say it is unadjusted.
            excluded[col] = f"missing in {share:.0%} of rows: too sparse to adjust for (not imputed here)"
            sparse.append(col)
    for col in pool:
        if col not in excluded and at_most_distinct(frame[col], 1):
            excluded[col] = "constant column"
        elif col not in excluded and frame[col].dtype == object and not at_most_distinct(frame[col], 50):
            excluded[col] = "high-cardinality text column (identifier-like)"
    covariates = [c for c in pool if c not in excluded]
    shown = {c: r for c, r in excluded.items() if c in frame.columns and c not in reserved}
    caveat = ""
    if cd is None and not _has_timing(domain_knowledge) and covariates:
        caveat = (
            "Unverified: with no causal graph and no timing metadata, every adjusted covariate "
            f"({', '.join(covariates)}) is assumed to be measured before {treatment}. A covariate caused by "
            f"{treatment} (a mediator) would pull the estimate towards its direct part; run the full causal "
            "recipe or pass --metadata with a temporal order to check."
        )
    if sparse:
        caveat = (
            f"Not adjusted for {', '.join(sparse)} (missing in more than {SPARSE_COVARIATE_SHARE:.0%} of rows): "
            "if it is a confounder the estimate is biased; the full causal recipe imputes it in data repair. " + caveat
        ).strip()
    return Adjustment(
        covariates=covariates,
        excluded=shown,
        source=source,
        added=[c for c in added if c in covariates],
        caveat=caveat,
    )


def _as_stated(frame: pd.DataFrame, stated: list[str], own: Adjustment) -> Adjustment:
    """The analyst's controls as the adjustment, the recipe's own choice beside them."""
    from whyflow.causal.discovery.stated_controls import with_indicators

    covariates = with_indicators(stated, frame.columns)
    against = {c: own.excluded[c] for c in covariates if c in own.excluded}
    caveat = ""
    if against:
        caveat = "Stated controls the recipe would leave out: " + "; ".join(f"{c} ({r})" for c, r in against.items())
        caveat += ". They are adjusted for as stated; if one is caused by the treatment the estimate is biased."
    return Adjustment(
        covariates=covariates,
        excluded={c: r for c, r in own.excluded.items() if c not in covariates},
        source="controls stated by the analyst (--controls)",
        caveat=caveat,
        recipe_choice=list(own.covariates),
    )


def _column_roles(
    frame: pd.DataFrame,
    treatment: str,
    outcome: str,
    pool: list[str],
    domain_knowledge: DomainKnowledge | None,
    excluded: dict[str, str],
) -> None:
    """Without confounder discovery, the column-role rules still keep identifiers, functions of the
    outcome or the treatment and post-treatment names out (columns known to precede the treatment excepted)."""
    from whyflow.causal.dataprep.column_roles import classify_columns

    if outcome not in frame.columns or treatment not in frame.columns:
        return
    dk = domain_knowledge or DomainKnowledge()
    pre = {str(c) for c in dk.pre_treatment}
    pre |= {str(c) for c, r in dk.roles.items() if r == "confounder"}
    for role in classify_columns(frame, treatment, outcome, pool, protected=pre):
        if role.leave_out:
            excluded[role.column] = role.reason


def _has_timing(domain_knowledge: DomainKnowledge | None) -> bool:
    dk = domain_knowledge or DomainKnowledge()
    return bool(dk.temporal_order or dk.post_treatment)


def encode_treatment(series: pd.Series) -> tuple[np.ndarray, str, str]:
    """Map a two-valued treatment to 0/1; returns (t, treated label, a note saying which is 1)."""
    values = series.dropna().unique()
    if len(values) != 2:
        raise AgentError(
            f"treatment '{series.name}' has {len(values)} distinct values; the backdoor estimators need a "
            "binary treatment (declare an instrument or a discontinuity design, or dichotomise it)"
        )
    as_set = {str(v).lower() for v in values}
    if set(values) <= {0, 1} or as_set <= {"0", "1", "0.0", "1.0"}:
        return series.astype(float).to_numpy(), "1", f"'{series.name}' is coded 0/1 (1 = treated)."
    if as_set == {"true", "false"}:
        treated = [v for v in values if str(v).lower() == "true"][0]
    else:
        positive = {"yes", "y", "treated", "treatment", "on", "t"}
        hits = [v for v in values if str(v).lower() in positive]
        treated = hits[0] if hits else sorted(values, key=str)[-1]
    t = (series == treated).astype(float).to_numpy()
    return (
        t,
        str(treated),
        f"'{series.name}' has values {sorted(map(str, values))}; '{treated}' is taken as treated (1).",
    )


def safe_name(name: str) -> str:
    """A column name usable in formulas and as a DoWhy node (non-word characters to _)."""
    return re.sub(r"\W+", "_", str(name)).strip("_") or "col"


def prepare(
    frame: pd.DataFrame, treatment: str, outcome: str, covariates: list[str], *, binary: bool = True
) -> Prepared:
    """Complete cases of (treatment, outcome, covariates) with categoricals one-hot encoded."""
    cols = list(dict.fromkeys([treatment, outcome, *covariates]))
    # The columns themselves, not frame[cols] (a copy of the table): copy-on-write keeps them intact.
    sub = pd.DataFrame({c: frame[c] for c in cols}, copy=False)
    complete = sub.notna().all(axis=1)
    if not complete.all():
        sub = sub.loc[complete]
    n_missing = len(frame) - len(sub)
    if len(sub) < 20:
        raise AgentError(f"only {len(sub)} complete rows for {treatment} -> {outcome}; too few to estimate an effect")
    if not pd.api.types.is_numeric_dtype(sub[outcome]):
        raise AgentError(f"outcome '{outcome}' is not numeric ({sub[outcome].dtype}); encode it first")
    if binary:
        t, label, note = encode_treatment(sub[treatment])
    else:
        t, label, note = sub[treatment].astype(float).to_numpy(), "", f"'{treatment}' used as numeric"
    parts = []
    for col in covariates:
        s = sub[col]
        if pd.api.types.is_bool_dtype(s) or pd.api.types.is_numeric_dtype(s):
            parts.append(pd.DataFrame({safe_name(col): s.astype(float).to_numpy()}, index=sub.index))
        else:
            dummies = pd.get_dummies(s.astype(str), prefix=safe_name(col), drop_first=True, dtype=float)
            dummies.columns = [safe_name(c) for c in dummies.columns]
            parts.append(dummies)
    X = pd.concat(parts, axis=1) if parts else pd.DataFrame(index=sub.index)
    varies = X.std() > 0 if len(X.columns) else None
    X = X.loc[:, varies] if varies is not None and not varies.all() else X
    notes = [note]
    collinear = collinear_columns(t, X)
    if collinear:
        X = X.drop(columns=list(collinear))
        notes.append(
            "dropped from the design, which they would make singular: "
            + "; ".join(f"{c} ({why.split(':')[0]})" for c, why in collinear.items())
        )
    if n_missing:
        notes.append(f"{n_missing} rows with missing values in the used columns dropped.")
    return Prepared(
        frame=sub.reset_index(drop=True),
        t=t,
        y=sub[outcome].astype(float).to_numpy(),
        X=X.reset_index(drop=True),
        treated_label=label,
        n_missing_dropped=n_missing,
        notes=notes,
        rows=sub.index.to_numpy(),
        collinear=collinear,
    )
