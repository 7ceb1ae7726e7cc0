"""What both effect-estimator agents share: their options, their contract, and the pair steps.

``effect_estimator`` runs a fixed plan and ``effect_estimator_react`` chooses each step; both
resolve the pairs, set each pair up and finish it (one headline, typed results) here, so
identical choices give identical estimates and neither agent imports the other.
"""

from __future__ import annotations

import difflib
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, Field
from pydantic_core import PydanticCustomError

from whyflow.causal.estimates import Stability
from whyflow.causal.estimation.methods import METHOD_KEYS, REGISTRY
from whyflow.causal.state import TreatmentEffectResult
from whyflow.causal.view import AnalysisView
from whyflow.core.agent import AgentParams
from whyflow.runtime.data import check_columns

if TYPE_CHECKING:
    from whyflow.causal.estimation.backdoor import Estimate
    from whyflow.causal.estimation.pair_setup import PairSetup

__all__ = [
    "ESTIMATOR_OPTIONAL",
    "ESTIMATOR_REQUIRED",
    "ESTIMATOR_WRITES",
    "EffectEstimatorParams",
    "MethodKey",
    "FAN_OUT_METHODS",
    "finish_pair",
    "fit_in_parts",
    "known_method",
    "resolve_pairs",
    "setup_for_pair",
]

ESTIMATOR_REQUIRED = ("data_profile", "dataframe_path")
ESTIMATOR_OPTIONAL = (
    "confounder_discovery",
    "ps_diagnostics",
    "proposed_dag",
    "domain_knowledge",
    "critique_history",
    "eda_result",
)
ESTIMATOR_WRITES = ("treatment_effects", "analyzed_pairs")


def known_method(key: str) -> str:
    """A ``methods:`` entry must be a key of the estimator registry (:data:`whyflow.causal.estimation.methods.METHOD_KEYS`)."""
    if key in REGISTRY:  # the live registry, so an added entry validates at once
        return key
    close = difflib.get_close_matches(key, list(REGISTRY), n=1)
    raise PydanticCustomError(
        "unknown_method",
        "unknown method '{method}'{hint}; choose from {keys}",
        {"method": key, "hint": f" (did you mean '{close[0]}'?)" if close else "", "keys": ", ".join(REGISTRY)},
    )


MethodKey = Annotated[str, AfterValidator(known_method), Field(json_schema_extra={"enum": list(METHOD_KEYS)})]
"""An estimator's key, checked when the recipe loads (editors complete it from the schema's enum)."""


class EffectEstimatorParams(AgentParams):
    """``methods`` pins the menu (keys of :data:`whyflow.causal.estimation.methods.METHOD_KEYS`); ``bootstrap`` resamples.

    ``propensity_model``: "auto" picks logistic or boosting by cross-validated log loss.
    """

    methods: list[MethodKey] | None = Field(
        None, description="estimators to run, by key (None: chosen from the data and the design)"
    )
    bootstrap: int = Field(
        200, ge=10, description="bootstrap resamples of the matching and stratification SEs (under 10 give none)"
    )
    propensity_model: Literal["auto", "logistic", "gbm"] = Field("auto", description="propensity score model")


def resolve_pairs(view: AnalysisView) -> tuple[list[dict[str, Any]], list[str]]:
    """The pairs to analyse, primary first, as CausalPair dicts, and how they were chosen."""
    pair = view.pair("estimate")
    treatment, outcome = pair.treatment, pair.outcome
    why = [f"{pair.note[0].upper()}{pair.note[1:]}: {treatment} -> {outcome}."] if pair.note else []
    rationale = pair.note or "the study's primary pair"
    pairs = [{"treatment": treatment, "outcome": outcome, "rationale": rationale, "priority": 1}]
    for p in sorted(view.analyzed_pairs, key=lambda p: p.priority):
        if (p.treatment, p.outcome) != (treatment, outcome):
            pairs.append(
                {
                    "treatment": p.treatment,
                    "outcome": p.outcome,
                    "rationale": p.rationale,
                    "priority": max(p.priority, 2),
                }
            )
    return pairs, why


def setup_for_pair(
    view: AnalysisView,
    frame: Any,
    treatment: str,
    outcome: str,
    codes: list[str],
    model: str,
    seed: int,
    bootstrap: int,
    cache_dir: Any = None,
) -> Any:
    """Check the columns and build the pair's PairSetup from the view.

    ``cache_dir`` (the run's data folder) lets the estimator reuse the propensity fit that
    ps_diagnostics stored for the same covariates, rows and seed.
    """
    from whyflow.causal.estimation.pair_analysis import setup_pair

    check_columns(frame, {"treatment": treatment, "outcome": outcome}, "the analysis data")
    return setup_pair(
        frame,
        treatment,
        outcome,
        profile=view.data_profile,
        view_design=view.design,
        confounder_discovery=view.confounder_discovery,
        domain_knowledge=view.domain_knowledge,
        codes=codes,
        ps_model=model,
        seed=seed,
        bootstrap=bootstrap,
        cache_dir=cache_dir,
        ps_diagnostics=view.ps_diagnostics,
    )


FAN_OUT_METHODS = ("dr_learner", "x_learner", "t_learner", "s_learner")
"""Methods fitted as parts of one fan-out (:func:`fit_in_parts`): the costly learners, each independent
of the others and of the pair's other methods (each reads the shared nuisances and is seeded by the run's
seed). Costliest first (the DR-learner's five folds, the X-learner's four models, the T-learner's two, the
S-learner's one), so two workers end nearly together: at 100,000 rows x 18 covariates the fan-out took
3.3 s with the S-learner first, 3.1 s in this order."""


def _fit_part(setup: Any, name: str) -> Any:
    """One method as a part: its Estimate, or the AgentError that ``run_method`` raised (a skip)."""
    from whyflow.causal.estimation.pair_analysis import run_method
    from whyflow.core.errors import AgentError

    try:
        return run_method(setup, name)
    except AgentError as exc:
        return exc


def fit_in_parts(setup: Any, names: list[str]) -> dict[str, Any]:
    """The methods of ``names`` in :data:`FAN_OUT_METHODS`, fitted by :func:`whyflow.runtime.parallel.map_parts`.

    Returns name -> Estimate or AgentError (the caller records it as a skip), the same values
    ``run_method`` gives one at a time. The parts get a copy of the setup without the raw data
    frames (these learners read the encoded covariates, the outcome, the treatment and the
    shared nuisances), so a Dask worker is sent what it needs and not the whole table.
    """
    import dataclasses

    from whyflow.runtime.parallel import map_parts

    todo = sorted((n for n in names if n in FAN_OUT_METHODS), key=FAN_OUT_METHODS.index)
    if not todo:
        return {}
    prep = dataclasses.replace(setup.prep, frame=setup.prep.frame.iloc[:0])
    slim = dataclasses.replace(
        setup,
        frame=setup.frame.iloc[:0],
        prep=prep,
        changes=[],
        notes=[],
        skipped={},
        _dowhy=None,
        _cov_frame=setup.covariates,  # the covariates the setup made, not a copy per part
        _cov_of=prep,
    )
    return dict(zip(todo, map_parts(partial(_fit_part, slim), todo, name="estimator"), strict=True))


def _save_rows(setup: Any, round_no: int) -> str | None:
    """Write the pair's analysed rows to the run's data folder; the path, or None without one."""
    import numpy as np

    from whyflow.causal.discovery.adjustment import safe_name

    if setup.cache_dir is None or setup.prep.rows is None:
        return None
    path = Path(setup.cache_dir) / f"sample_{safe_name(setup.treatment)}__{safe_name(setup.outcome)}_r{round_no}.npy"
    np.save(path, np.asarray(setup.prep.rows))
    return str(path)


def _stability(setup: PairSetup, est: Estimate) -> Stability | None:
    """The headline's common-support and flexible-nuisance re-estimates (whyflow.causal.estimation.stability)."""
    from whyflow.causal.estimation.stability import stability_checks

    try:
        return stability_checks(setup, est.estimate, est.std_error)
    except Exception as exc:  # noqa: BLE001 - a check that cannot run says why; the critique reads it
        return Stability(skipped=f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}")


def finish_pair(
    view: AnalysisView, setup: Any, estimates: dict[str, Any], round_no: int
) -> tuple[list[TreatmentEffectResult], str, str]:
    """Typed results with exactly one headline, plus the reasoning text for the pair."""
    from whyflow.causal.estimation.headline import choose_headline
    from whyflow.causal.estimation.pair_analysis import mark_credibility, to_result

    mark_credibility(setup, estimates)
    head, reason = choose_headline(setup, estimates, view.ps_diagnostics)
    panel = None
    if "did" not in setup.design and view.data_profile is not None:
        from whyflow.causal.dataprep.panel_shape import repeated_units

        panel = repeated_units(setup.frame, view.data_profile.time_column, (setup.treatment, setup.outcome))
    sample = _save_rows(setup, round_no)
    rows = []
    for key, est in estimates.items():
        row = to_result(setup, key, est, round_no, setup.changes)
        if sample and not REGISTRY[key].is_design:  # design estimators read their own rows
            row.details.sample_rows = sample
        if key == head:
            population = row.details.population
            if population:
                reason_text = f"{reason} Population: the estimate describes {population}, not the whole sample."
            else:
                reason_text = reason
            extras = {**row.details.extras, **({"repeated_units": panel} if panel else {})}
            backdoor = not REGISTRY[key].is_design and key != "naive"
            row.details = row.details.model_copy(
                update={
                    "headline": True,
                    "headline_reason": reason_text,
                    "skipped_methods": dict(setup.skipped),
                    "stability": _stability(setup, est) if backdoor else None,
                    "extras": extras,
                }
            )
        rows.append(row)
    adj = setup.adjustment
    text = [
        f"Adjustment set ({adj.source}): {', '.join(adj.covariates) or 'none'}.",
        *([adj.caveat] if adj.caveat else []),
        ("Excluded: " + "; ".join(f"{c} ({r})" for c, r in adj.excluded.items()) + ".")
        if adj.excluded
        else "Nothing excluded.",
        *setup.notes,
    ]
    if setup.nuisance is not None and setup.nuisance.cv_loss:
        text.append(setup.nuisance.describe() + ".")
    if setup.overlap and setup.binary:
        o = setup.overlap
        text.append(
            f"Propensity ({setup.ps_model}): {o['outside_support']['overall']:.1%} outside common support, overlap "
            f"{'adequate' if o['overlap_ok'] else 'poor'}."
        )
    text.extend(setup.changes)
    text.append(f"Headline: {reason}")
    text.append(
        "Estimates: "
        + "; ".join(f"{e.method} {e.estimate:.4g} [{e.ci[0]:.4g}, {e.ci[1]:.4g}]" for e in estimates.values())
        + "."
    )
    return rows, " ".join(text), head
