"""The report's template context: everything the notebook's Jinja templates show, from the typed state.

:func:`build_context` turns the notebook agent's view of the state (its typed records) into the
values the sections print (every number comes from the state; nothing is invented here), and
:func:`recompute_kind` names the cheap estimator a notebook cell refits to reproduce an estimate
(its registry entry's). The refutation table comes from :mod:`whyflow.causal.report.refuter_section`,
the event-time figure's words from :mod:`whyflow.causal.report.event_study_section`;
the assumptions, the critique rounds and what the language model wrote from
:mod:`whyflow.causal.report.review_section`. The agent in :mod:`whyflow.causal.report.notebook_generator`
renders, writes and executes the notebook.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from whyflow.causal.diagnostics import ConfounderDiscovery, ExpectationFailure, PSDiagnostics, RepairAction
from whyflow.causal.estimation.methods import REGISTRY
from whyflow.causal.estimation.ols import block_rows_for
from whyflow.causal.prompts import MODEL_MARK
from whyflow.causal.queries import effects_for_pair
from whyflow.causal.report.event_study_section import event_study_context
from whyflow.causal.report.refuter_section import refuter_context
from whyflow.causal.report.review_section import (
    assumption_rows,
    critique_rounds,
    domain_llm_context,
    recommendations,
)
from whyflow.causal.state import AnalysisState, CausalDAG, DataProfile, TreatmentEffectResult
from whyflow.causal.view import AnalysisView
from whyflow.core.job import AgentTrace
from whyflow.core.view import required

__all__ = ["build_context", "recompute_kind"]

Refit = Literal["ols", "ipw", "aipw"]
"""A cheap estimator a notebook cell refits: least squares, inverse-probability weighting or AIPW."""

Indexed = list[tuple[int, TreatmentEffectResult]]
"""The pair's estimates, each with its index in the state's ``treatment_effects`` (the cells look it up)."""


def recompute_kind(estimate: TreatmentEffectResult) -> Refit | None:
    """How the notebook reproduces ``estimate``: its registry entry's ``recompute`` (None: shown from the state)."""
    spec = REGISTRY.get(estimate.details.method_key)
    return spec.recompute if spec is not None else None


def build_context(view: AnalysisView, job_dir: Path, seed: int, title: str | None) -> dict[str, Any]:
    """Everything the templates use, from the state only (numbers are never invented here)."""
    decisions: list[str] = []
    profile = required(view.data_profile, "data_profile")
    found = view.maybe_pair()
    treatment, outcome = (found.treatment, found.outcome) if found else (None, None)
    pair_note = f"{found.note[0].upper()}{found.note[1:]}." if found and found.note else ""
    if pair_note:
        decisions.append(pair_note)
    binary = treatment is not None and profile.feature_types.get(treatment) == "binary"
    run_info = _read_json(job_dir / "run.json")
    data = view.dataframe_path
    has_data = bool(data and Path(data).exists())
    pair = _pair_effects(view.treatment_effects, treatment, outcome)
    effects = [e for _, e in pair]
    head_index, headline = next(((i, e) for i, e in pair if e.details.headline), (-1, None))  # the first flagged
    rows = [_row(index, e) for index, e in pair]
    head = next((r for r in rows if r["headline"]), None)
    if head is not None and headline is not None:
        head["sentence"] = _sentence(headline, treatment, outcome, binary)
        head["reason"] = headline.details.headline_reason or ""
    confounders, ps = view.confounder_discovery, view.ps_diagnostics
    repairs = view.data_repairs
    recompute = _recompute(pair, headline, confounders, ps, has_data, binary, decisions)
    agreement = _agreement(effects, headline)
    return {
        "title": title
        or (
            f"Causal analysis: the effect of {treatment} on {outcome}"
            if treatment and outcome
            else f"Data report: {view.dataset_info.name or 'dataset'}"
        ),
        "job_id": view.job_id,
        "created_at": _when(view.created_at),
        "seed": seed,
        "treatment": treatment,
        "outcome": outcome,
        "pair_note": pair_note,
        "treatment_binary": binary,
        "dataset": _dataset(view, profile, run_info),
        "profile": profile,
        "has_data": has_data,
        "block_rows": block_rows_for(profile.n_samples, profile.n_features + 1),
        "paths": _paths(view, job_dir, decisions),
        "missing": [(c, n) for c, n in profile.missing_values.items() if n],
        "repairs": {
            "expectations": [r for r in repairs if isinstance(r, ExpectationFailure)],
            "actions": [r for r in repairs if isinstance(r, RepairAction)],
        },
        "eda": view.eda_result,
        "domain": view.domain_knowledge,
        "dag": view.proposed_dag,
        **_dag(view.proposed_dag, treatment, outcome),
        "confounders": confounders,
        "ps": ps,
        "effects": rows,
        "headline": head,
        "other_pairs": _other_pairs(view.treatment_effects, treatment, outcome),
        "recompute": recompute,
        "agreement": agreement,
        "event_study": event_study_context(head_index, headline),
        "propensity": _propensity(confounders, ps, headline, has_data, binary),
        "refute": refuter_context(view.sensitivity_results, recompute, confounders, has_data),
        "assumptions": assumption_rows(view, headline, agreement),
        "sensitivity": view.sensitivity_results,
        "critique": critique_rounds(view.critique_history, view.debate_history),
        "recommendations": recommendations(view.recommendations),
        "domain_llm": domain_llm_context(view.domain_knowledge),
        "model_mark": MODEL_MARK,
        "traces": _traces(view.agent_traces),
        "versions": _versions(),
        "run_info": run_info,
        "has_run_json": run_info is not None,
        "has_recipe": (job_dir / "recipe.yaml").exists(),
        "decisions": decisions,
    }


def _read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object from the job folder (``run.json``: the run's settings), None when absent or not one."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _when(value: datetime) -> str:
    return f"{value:%Y-%m-%d %H:%M} UTC"


def _dataset(view: AnalysisView, profile: DataProfile, run_info: dict[str, Any] | None) -> dict[str, Any]:
    info, meta, known = view.dataset_info, view.raw_metadata, view.domain_knowledge
    run = run_info or {}
    database = bool((run.get("fingerprint") or {}).get("content_sha256"))  # rows read from a database
    return {
        "name": info.name,
        "source": str(run.get("data")) if database else info.local_path or info.url,
        "rows": profile.n_samples,
        "cols": profile.n_features,
        "sha256": run.get("data_sha256"),
        "sha256_of": "rows read (their content, whatever file holds them)" if database else "input file",
        "description": (known.description if known is not None else None)
        or (meta.description if meta is not None else None),
        "duplicates": profile.duplicates_note,
        "subgroup": profile.subgroup,
    }


def _paths(view: AnalysisView, job_dir: Path, decisions: list[str]) -> dict[str, Any]:
    data = view.dataframe_path
    data_file = None
    if data:
        p = Path(data).resolve()
        data_file = str(p.relative_to(job_dir)) if p.is_relative_to(job_dir) else str(p)
    state_file = "report_state.json"
    if _saved_state_matches(job_dir / "state.json", view):
        state_file = "state.json"
    else:
        decisions.append("state.json is absent or older than this step's view, so the notebook reads report_state.json")
    return {"job_dir": str(job_dir), "data_file": data_file, "state_file": state_file}


def _saved_state_matches(path: Path, view: AnalysisView) -> bool:
    """Whether the job's saved ``state.json`` is this job's state with this view's estimates.

    The notebook's cells then read ``state.json``; otherwise the snapshot the agent wrote. A file that
    is absent, or not a state of the current layout, never matches.
    """
    try:
        saved = AnalysisState.model_validate_json(path.read_bytes())
    except (OSError, ValueError):
        return False
    mine = [(e.method, e.estimate) for e in view.treatment_effects]
    return saved.job_id == view.job_id and [(e.method, e.estimate) for e in saved.treatment_effects] == mine


def _dag(dag: CausalDAG | None, treatment: str | None, outcome: str | None) -> dict[str, Any]:
    if dag is None:
        return {"dag_counts": {}, "dag_focus": []}
    counts: dict[str, int] = {}
    for e in dag.edges:
        counts[e.edge_type] = counts.get(e.edge_type, 0) + 1
    focus = [e for e in dag.edges if {e.source, e.target} & {treatment, outcome}]
    return {"dag_counts": counts, "dag_focus": focus[:25]}


def _pair_effects(effects: list[TreatmentEffectResult], treatment: str | None, outcome: str | None) -> Indexed:
    """The pair's estimates, all rounds, each with its index in the state's list."""
    if treatment is None or outcome is None:
        return []
    mine = {id(e) for e in effects_for_pair(effects, treatment, outcome)}
    return [(index, e) for index, e in enumerate(effects) if id(e) in mine]


def _row(index: int, e: TreatmentEffectResult) -> dict[str, Any]:
    """One estimate as the estimates table prints it, with its index in the state's list."""
    d = e.details
    return {
        "index": index,
        "method": e.method,
        "estimand": e.estimand,
        "estimate": e.estimate,
        "std_error": e.std_error,
        "ci_lower": e.ci_lower,
        "ci_upper": e.ci_upper,
        "p_value": e.p_value,
        "assumptions_tested": e.assumptions_tested,
        "treatment_variable": e.treatment_variable,
        "outcome_variable": e.outcome_variable,
        "details": d,
        "headline": d.headline,
        "round": d.round,
        "n_used": d.n_used,
    }


def _other_pairs(
    effects: list[TreatmentEffectResult], treatment: str | None, outcome: str | None
) -> list[dict[str, Any]]:
    counts: dict[tuple[str, str], int] = {}
    for e in effects:
        t, y = e.treatment_variable, e.outcome_variable
        if t is not None and y is not None and (t, y) != (treatment, outcome):
            counts[(t, y)] = counts.get((t, y), 0) + 1
    return [{"treatment": t, "outcome": y, "n": n} for (t, y), n in counts.items()]


def _sentence(e: TreatmentEffectResult, treatment: str | None, outcome: str | None, binary: bool) -> str:
    """The headline in plain words, e.g. "Receiving training raised earnings by about 1,480 (95% CI ...)"."""
    from whyflow.causal.report.notebook import fmt_num

    est = e.estimate
    verb = "raised" if est > 0 else "lowered" if est < 0 else "did not change"
    subject = f"Receiving `{treatment}`" if binary else f"A one-unit increase in `{treatment}`"
    if binary and e.estimand.upper() == "ATT":
        subject = f"Among those who received it, receiving `{treatment}`"
    size = f" by about {fmt_num(abs(est))}" if est else ""
    text = (
        f"{subject} {verb} `{outcome}`{size} (95% CI {fmt_num(e.ci_lower)} to {fmt_num(e.ci_upper)}), "
        f"estimated by {e.method} ({e.estimand})."
    )
    if e.ci_lower <= 0 <= e.ci_upper:
        text += " The interval includes zero, so the data are also consistent with no effect."
    return text


def _agreement(effects: list[TreatmentEffectResult], headline: TreatmentEffectResult | None) -> dict[str, Any] | None:
    """How far the adjusted estimates agree with the headline (unadjusted baselines, family ``naive``, left out)."""
    from whyflow.causal.report.notebook import fmt_num

    adjusted = [e for e in effects if not e.details.is_naive]
    left_out = len(effects) - len(adjusted)
    note = f" ({left_out} unadjusted baseline{'s' if left_out > 1 else ''} left out)" if left_out else ""
    if len(adjusted) < 2:
        if not adjusted:
            return None
        return {
            "text": f"Only one adjusted estimate was computed{note}, so agreement between estimators cannot be judged."
        }
    ref = headline or adjusted[-1]
    values = [e.estimate for e in adjusted]
    same_sign = sum(1 for v in values if (v > 0) == (ref.estimate > 0))
    covering = sum(1 for e in adjusted if e.ci_lower <= ref.estimate <= e.ci_upper)
    spread = (max(values) - min(values)) / ref.std_error if ref.std_error else float("nan")
    n = len(adjusted)
    text = (
        f"{n} adjusted estimates{note} range from {fmt_num(min(values))} to {fmt_num(max(values))} "
        f"(a spread of {spread:.1f} {'headline ' if headline else ''}standard errors); {same_sign} of {n} "
        f"share the sign of the {'headline' if headline else 'last estimate'}, and {covering} of {n} intervals contain it."
    )
    return {"text": text, "spread_se": spread, "same_sign": same_sign, "covering": covering, "n": n}


def _two_floats(value: Any) -> list[float] | None:
    """A ``[low, high]`` pair an estimator reported (its propensity clipping), as floats."""
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return [float(value[0]), float(value[1])]
    return None


def _recompute(
    pair: Indexed,
    headline: TreatmentEffectResult | None,
    confounders: ConfounderDiscovery | None,
    ps: PSDiagnostics | None,
    has_data: bool,
    binary: bool,
    decisions: list[str],
) -> dict[str, Any] | None:
    """Which estimate the notebook refits, how, and with which recorded settings."""
    if not has_data or not pair:
        return None

    def ok(e: TreatmentEffectResult) -> Refit | None:
        kind = recompute_kind(e)
        return kind if kind == "ols" or (kind is not None and binary) else None

    effects = [e for _, e in pair]
    exact = [e for e in reversed(effects) if ok(e) == "ols" and not e.details.is_naive]
    target = headline if headline is not None and ok(headline) else next((e for e in reversed(effects) if ok(e)), None)
    if target is not None and ok(target) in ("ipw", "aipw") and exact:
        # Weighting estimators hinge on how the propensity was fitted (cross-fitting folds, regularisation,
        # clipping); a deterministic regression estimate gives the meaningful pass/fail check.
        target = exact[0]
    if target is None:
        decisions.append("no estimate uses a method the notebook can refit cheaply; all are shown from the state")
        return None
    kind, d, notes = ok(target), target.details, []
    hc = re.search(r"\bHC[0-3]\b", d.se_method or "")  # the estimators name the type in se_method
    cov_type = hc.group(0) if hc else None
    if kind == "ols" and cov_type is None:
        cov_type = "HC1"
        notes.append("The run did not record its standard-error type; HC1 is assumed (only the estimate is checked).")
    ps_model = d.propensity_model or (ps.model if ps is not None else None) or "logistic"
    exact_fit = kind == "ols"
    return {
        "index": next(index for index, e in pair if e is target),
        "kind": kind,
        "method": target.method,
        "is_headline": target is headline,
        "adjustment_set": list(d.adjustment_set),
        "cov_type": cov_type if kind == "ols" else None,
        "trim": [d.trimmed.lower, d.trimmed.upper] if d.trimmed is not None else None,
        "sample_rows": Path(d.sample_rows).name if d.sample_rows else None,
        "complete_cases": sorted(f"{c}_missing" for c in (d.extras.get("complete_cases") or {})),
        "ps_model": ps_model,
        "clip": _two_floats(d.extras.get("clip")) or [1e-6, 1 - 1e-6],
        "estimand": target.estimand,
        "notes": notes,
        "description": {
            "ols": "least squares of the outcome on the treatment and the adjustment set",
            "ipw": f"inverse-probability weighting with a {ps_model} propensity model",
            "aipw": f"augmented IPW: linear outcome models per arm and a {ps_model} propensity model",
        }[str(kind)],
        "tolerance_expr": '1e-6 * max(1.0, abs(EST["estimate"]))' if exact_fit else '0.1 * EST["std_error"] + 1e-9',
        "tolerance_text": "a relative 1e-6 (the fit is deterministic)"
        if exact_fit
        else "a tenth of its standard error (a propensity model's solver may differ slightly)",
        "headline_note": f"{headline.method} depends on fitting details (cross-fitted or learned nuisance models) that a short notebook cell cannot reproduce exactly."
        if headline
        else "",
    }


def _propensity(
    confounders: ConfounderDiscovery | None,
    ps: PSDiagnostics | None,
    headline: TreatmentEffectResult | None,
    has_data: bool,
    binary: bool,
) -> dict[str, Any] | None:
    if not (has_data and binary):
        return None
    # Column names as they are in the data: ps_diagnostics lists encoded dummies (region_south),
    # which the notebook's design_matrix rebuilds from the original column.
    covs = (
        (headline.details.adjustment_set if headline is not None else None)
        or (confounders.adjustment_set if confounders is not None else None)
        or (ps.covariates if ps is not None else None)
    )
    if not covs:
        return None
    sugg = ps.trim_suggestion if ps is not None and ps.trimmed else None
    trim = [sugg.lower, sugg.upper] if sugg is not None else None
    return {"covariates": list(covs), "model": (ps.model if ps is not None else None) or "logistic", "trim": trim}


def _traces(traces: list[AgentTrace]) -> list[dict[str, Any]]:
    return [
        {
            "agent": t.agent_name,
            "action": t.action,
            "seconds": t.duration_ms / 1000,
            "summary": str(t.outputs.get("summary", ""))[:160],
        }
        for t in traces
    ]


def _versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return {"whyflow": version("whyflow")}
    except PackageNotFoundError:
        return {"whyflow": None}
