"""The report's template context: everything the notebook's Jinja templates show, from the state only.

:func:`build_context` turns the state snapshot the notebook generator saved into the values the
sections print (every number comes from the state; nothing is invented here), and
:func:`recompute_kind` names the cheap estimator a notebook cell uses to reproduce a headline.
The refutation table comes from :mod:`whyflow.causal.report.refuter_section`; the assumptions, the critique
rounds and what the language model wrote from :mod:`whyflow.causal.report.review_section`. The agent in
:mod:`whyflow.causal.report.notebook_generator` renders, writes and executes the notebook.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter

from whyflow.causal.diagnostics import (
    ConfounderDiscovery,
    DataRepairEntry,
    ExpectationFailure,
    PSDiagnostics,
    RepairAction,
)
from whyflow.causal.estimation.ols import block_rows_for
from whyflow.causal.prompts import MODEL_MARK
from whyflow.causal.report.refuter_section import flat_details, refuter_context
from whyflow.causal.report.review_section import (
    assumption_rows,
    critique_rounds,
    domain_llm_context,
    model_text,
    recommendations,
)
from whyflow.causal.view import AnalysisView

if TYPE_CHECKING:
    pass

__all__ = ["build_context", "recompute_kind", "model_text"]

_REPAIRS: TypeAdapter[DataRepairEntry] = TypeAdapter(DataRepairEntry)
"""Reads one ``data_repairs`` entry of the snapshot back into its record."""

_NOT_CHEAP = {
    "dml",
    "learner",
    "xlearner",
    "slearner",
    "tlearner",
    "forest",
    "matching",
    "match",
    "stratification",
    "iv",
    "instrument",
    "instrumental",
    "rdd",
    "discontinuity",
    "did",
    "difference",
    "synthetic",
}


def recompute_kind(method: str) -> str | None:
    """Which cheap estimator reproduces ``method``: "dowhy", "ols", "ipw", "aipw", or None (not cheap)."""
    text = method.lower()
    tokens = set(re.split(r"[^a-z0-9]+", text))
    if text.startswith("backdoor.") and not tokens & {"econml", "causalml"}:
        return "dowhy"  # a DoWhy method name: refit with DoWhy itself, same method and parameters
    if tokens & _NOT_CHEAP or "learner" in text:
        return None
    if tokens & {"aipw", "dr", "doubly", "augmented"}:
        return "aipw"
    if tokens & {"ipw", "iptw", "weighting", "weighted"}:
        return "ipw"
    if tokens & {"ols", "regression", "linear"}:
        return "ols"
    return None


def build_context(
    view: AnalysisView, snap: dict[str, Any], job_dir: Path, seed: int, title: str | None
) -> dict[str, Any]:
    """Everything the templates use, from the state only (numbers are never invented here)."""
    decisions: list[str] = []
    profile = snap["data_profile"]
    found = view.maybe_pair()
    treatment, outcome = (found.treatment, found.outcome) if found else (None, None)
    pair_note = f"{found.note[0].upper()}{found.note[1:]}." if found and found.note else ""
    if pair_note:
        decisions.append(pair_note)
    binary = profile.get("feature_types", {}).get(treatment) == "binary"
    run_info = _read_json(job_dir / "run.json")
    has_data = bool(snap.get("dataframe_path")) and Path(snap["dataframe_path"]).exists()
    effects = _effects(snap, treatment, outcome)
    headline = next((e for e in effects if e["headline"]), None)  # as whyflow.causal.queries.headline_of
    if headline:
        headline["sentence"] = _sentence(headline, treatment, outcome, binary)
        headline["reason"] = headline["details"].get("headline_reason", "")
    found, diagnosed = snap.get("confounder_discovery"), snap.get("ps_diagnostics")
    confounders = ConfounderDiscovery.model_validate(found) if found else None
    ps = PSDiagnostics.model_validate(diagnosed) if diagnosed else None
    repairs = [_REPAIRS.validate_python(r) for r in snap.get("data_repairs", [])]
    recompute = _recompute(effects, headline, confounders, ps, has_data, binary, decisions)
    agreement = _agreement(effects, headline)
    return {
        "title": title
        or (
            f"Causal analysis: the effect of {treatment} on {outcome}"
            if treatment and outcome
            else f"Data report: {snap['dataset_info'].get('name') or 'dataset'}"
        ),
        "job_id": snap["job_id"],
        "created_at": _when(snap.get("created_at")),
        "seed": seed,
        "treatment": treatment,
        "outcome": outcome,
        "pair_note": pair_note,
        "treatment_binary": binary,
        "dataset": _dataset(snap, run_info),
        "profile": profile,
        "has_data": has_data,
        "block_rows": block_rows_for(int(profile.get("n_samples") or 0), int(profile.get("n_features") or 0) + 1),
        "paths": _paths(snap, job_dir, decisions),
        "missing": [(c, n) for c, n in profile.get("missing_values", {}).items() if n],
        "repairs": {
            "expectations": [r for r in repairs if isinstance(r, ExpectationFailure)],
            "actions": [r for r in repairs if isinstance(r, RepairAction)],
        },
        "eda": snap.get("eda_result"),
        "domain": snap.get("domain_knowledge"),
        "dag": snap.get("proposed_dag"),
        **_dag(snap.get("proposed_dag"), treatment, outcome),
        "confounders": confounders,
        "ps": ps,
        "effects": effects,
        "headline": headline,
        "other_pairs": _other_pairs(snap, treatment, outcome),
        "recompute": recompute,
        "agreement": agreement,
        "propensity": _propensity(confounders, ps, headline, has_data, binary),
        "refute": refuter_context(snap, recompute, confounders, has_data),
        "assumptions": assumption_rows(snap, headline, agreement),
        "sensitivity": snap.get("sensitivity_results", []),
        "critique": critique_rounds(snap),
        "recommendations": recommendations(snap),
        "domain_llm": domain_llm_context(snap),
        "model_mark": MODEL_MARK,
        "traces": _traces(snap),
        "versions": _versions(),
        "run_info": run_info,
        "has_run_json": run_info is not None,
        "has_recipe": (job_dir / "recipe.yaml").exists(),
        "decisions": decisions,
    }


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _when(value: Any) -> str:
    text = str(value or "")
    return text[:16].replace("T", " ") + " UTC" if len(text) >= 16 else text


def _dataset(snap: dict[str, Any], run_info: dict[str, Any] | None) -> dict[str, Any]:
    info, profile = snap["dataset_info"], snap["data_profile"]
    meta = snap.get("raw_metadata") or {}
    domain = snap.get("domain_knowledge") or {}
    return {
        "name": info.get("name"),
        "source": info.get("local_path") or info.get("url"),
        "rows": profile["n_samples"],
        "cols": profile["n_features"],
        "sha256": (run_info or {}).get("data_sha256"),
        "description": domain.get("description") or meta.get("description"),
        "duplicates": profile.get("duplicates_note") or "",
    }


def _paths(snap: dict[str, Any], job_dir: Path, decisions: list[str]) -> dict[str, Any]:
    data = snap.get("dataframe_path")
    data_file = None
    if data:
        p = Path(data).resolve()
        data_file = str(p.relative_to(job_dir)) if p.is_relative_to(job_dir) else str(p)
    state_file = "report_state.json"
    on_disk = _read_json(job_dir / "state.json")
    if on_disk is not None and _same_estimates(on_disk, snap):
        state_file = "state.json"
    else:
        decisions.append("state.json is absent or older than this step's view, so the notebook reads report_state.json")
    return {"job_dir": str(job_dir), "data_file": data_file, "state_file": state_file}


def _same_estimates(a: dict[str, Any], b: dict[str, Any]) -> bool:
    key = [(e.get("method"), e.get("estimate")) for e in a.get("treatment_effects", [])]
    return a.get("job_id") == b["job_id"] and key == [(e["method"], e["estimate"]) for e in b["treatment_effects"]]


def _dag(dag: dict[str, Any] | None, treatment: str | None, outcome: str | None) -> dict[str, Any]:
    if not dag:
        return {"dag_counts": {}, "dag_focus": []}
    counts: dict[str, int] = {}
    for e in dag["edges"]:
        counts[e["edge_type"]] = counts.get(e["edge_type"], 0) + 1
    focus = [e for e in dag["edges"] if {e["source"], e["target"]} & {treatment, outcome}]
    return {"dag_counts": counts, "dag_focus": focus[:25]}


def _kind(e: dict[str, Any]) -> str | None:
    """How the notebook reproduces ``e``: the registry entry's ``recompute`` (labels only for old states)."""
    from whyflow.causal.estimation.methods import REGISTRY

    spec = REGISTRY.get(str(e["details"].get("method_key")))
    return spec.recompute if spec is not None else recompute_kind(str(e["method"]))


def _effects(snap: dict[str, Any], treatment: str | None, outcome: str | None) -> list[dict[str, Any]]:
    """The pair's estimates (with their index in the state's list), flattened for tables."""
    out = []
    for index, e in enumerate(snap.get("treatment_effects", [])):
        tv, ov = e.get("treatment_variable"), e.get("outcome_variable")
        if (tv or treatment) != treatment or (ov or outcome) != outcome:
            continue
        d = flat_details(e.get("details"))
        out.append(
            {
                **e,
                "index": index,
                "details": d,
                "headline": bool(d.get("headline")),
                "round": d.get("round"),
                "n_used": d.get("n_used"),
            }
        )
    return out


def _other_pairs(snap: dict[str, Any], treatment: str | None, outcome: str | None) -> list[dict[str, Any]]:
    counts: dict[tuple[str, str], int] = {}
    for e in snap.get("treatment_effects", []):
        pair = (e.get("treatment_variable"), e.get("outcome_variable"))
        if None not in pair and pair != (treatment, outcome):
            counts[pair] = counts.get(pair, 0) + 1  # type: ignore[index]
    return [{"treatment": t, "outcome": y, "n": n} for (t, y), n in counts.items()]


def _sentence(e: dict[str, Any], treatment: str | None, outcome: str | None, binary: bool) -> str:
    """The headline in plain words, e.g. "Receiving training raised earnings by about 1,480 (95% CI ...)"."""
    from whyflow.causal.report.notebook import fmt_num

    est = float(e["estimate"])
    verb = "raised" if est > 0 else "lowered" if est < 0 else "did not change"
    subject = f"Receiving `{treatment}`" if binary else f"A one-unit increase in `{treatment}`"
    if binary and str(e.get("estimand", "")).upper() == "ATT":
        subject = f"Among those who received it, receiving `{treatment}`"
    size = f" by about {fmt_num(abs(est))}" if est else ""
    text = (
        f"{subject} {verb} `{outcome}`{size} (95% CI {fmt_num(e['ci_lower'])} to {fmt_num(e['ci_upper'])}), "
        f"estimated by {e['method']} ({e.get('estimand', 'ATE')})."
    )
    if e["ci_lower"] <= 0 <= e["ci_upper"]:
        text += " The interval includes zero, so the data are also consistent with no effect."
    return text


def _is_baseline(e: dict[str, Any]) -> bool:
    """An unadjusted comparison reported for contrast, not as an estimate of the effect (family ``naive``)."""
    if "family" in e["details"]:
        return bool(e["details"]["family"] == "naive")
    method = str(e["method"]).lower()  # a state written before estimates carried their family
    return "naive" in method or "unadjusted" in method


def _agreement(effects: list[dict[str, Any]], headline: dict[str, Any] | None) -> dict[str, Any] | None:
    """How far the adjusted estimates agree with the headline (baselines left out)."""
    from whyflow.causal.report.notebook import fmt_num

    adjusted = [e for e in effects if not _is_baseline(e)]
    left_out = len(effects) - len(adjusted)
    note = f" ({left_out} unadjusted baseline{'s' if left_out > 1 else ''} left out)" if left_out else ""
    if len(adjusted) < 2:
        if not adjusted:
            return None
        return {
            "text": f"Only one adjusted estimate was computed{note}, so agreement between estimators cannot be judged."
        }
    ref = headline or adjusted[-1]
    values = [float(e["estimate"]) for e in adjusted]
    same_sign = sum(1 for v in values if (v > 0) == (ref["estimate"] > 0))
    covering = sum(1 for e in adjusted if e["ci_lower"] <= ref["estimate"] <= e["ci_upper"])
    spread = (max(values) - min(values)) / ref["std_error"] if ref["std_error"] else float("nan")
    n = len(adjusted)
    text = (
        f"{n} adjusted estimates{note} range from {fmt_num(min(values))} to {fmt_num(max(values))} "
        f"(a spread of {spread:.1f} {'headline ' if headline else ''}standard errors); {same_sign} of {n} "
        f"share the sign of the {'headline' if headline else 'last estimate'}, and {covering} of {n} intervals contain it."
    )
    return {"text": text, "spread_se": spread, "same_sign": same_sign, "covering": covering, "n": n}


def _bounds(value: Any) -> list[float] | None:
    if isinstance(value, dict) and value.get("lower") is not None:
        return [float(value["lower"]), float(value["upper"])]
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return [float(value[0]), float(value[1])]
    return None


def _recompute(
    effects: list[dict[str, Any]],
    headline: dict[str, Any] | None,
    confounders: ConfounderDiscovery | None,
    ps: PSDiagnostics | None,
    has_data: bool,
    binary: bool,
    decisions: list[str],
) -> dict[str, Any] | None:
    """Which estimate the notebook refits, how, and with which recorded settings."""
    if not has_data or not effects:
        return None

    def ok(e: dict[str, Any]) -> str | None:
        kind = _kind(e)
        return kind if kind in ("ols", "dowhy") or (kind and binary) else None

    exact = [e for e in reversed(effects) if ok(e) in ("ols", "dowhy") and not _is_baseline(e)]
    target = headline if headline and ok(headline) else next((e for e in reversed(effects) if ok(e)), None)
    if target is not None and ok(target) in ("ipw", "aipw") and exact:
        # Weighting estimators hinge on how the propensity was fitted (cross-fitting folds, regularisation,
        # clipping); a deterministic regression estimate gives the meaningful pass/fail check.
        target = exact[0]
    if target is None:
        decisions.append("no estimate uses a method the notebook can refit cheaply; all are shown from the state")
        return None
    kind, d, notes = ok(target), target["details"], []
    adjustment = d.get("adjustment_set")
    if adjustment is None:
        adjustment = list(confounders.adjustment_set if confounders is not None else [])
        notes.append("The estimate did not record its adjustment set; the confounder analysis's set is used.")
    cov_type = d.get("cov_type")  # hand-made states; estimators name it in se_method
    if cov_type is None and re.search(r"\bHC[0-3]\b", str(d.get("se_method", ""))):
        cov_type = re.search(r"\bHC[0-3]\b", str(d["se_method"])).group(0)  # type: ignore[union-attr]
    if kind == "ols" and not isinstance(cov_type, str):
        cov_type = "HC1"
        notes.append("The run did not record its standard-error type; HC1 is assumed (only the estimate is checked).")
    trim = _bounds(d.get("trimmed"))
    if trim is None and d.get("trimmed") and ps is not None and ps.trim_suggestion is not None:
        trim = _bounds(ps.trim_suggestion.model_dump())
    exact_fit = kind == "ols" or (kind == "dowhy" and "linear_regression" in str(target["method"]))
    ps_model = d.get("propensity_model") or (ps.model if ps is not None else None) or "logistic"
    return {
        "index": target["index"],
        "kind": kind,
        "method": target["method"],
        "is_headline": target is headline,
        "adjustment_set": list(adjustment),
        "cov_type": cov_type if kind == "ols" else None,
        "trim": trim,
        "ps_model": ps_model,
        "clip": _bounds(d.get("clip")) or [1e-6, 1 - 1e-6],
        "estimand": target.get("estimand", "ATE"),
        "target_units": d.get("target_units") or str(target.get("estimand", "ATE")).lower(),
        "method_params": d.get("method_params") or {},
        "binary": binary,
        "notes": notes,
        "description": {
            "ols": "least squares of the outcome on the treatment and the adjustment set",
            "ipw": f"inverse-probability weighting with a {ps_model} propensity model",
            "aipw": f"augmented IPW: linear outcome models per arm and a {ps_model} propensity model",
            "dowhy": f"DoWhy's {target['method']} with the run's method parameters",
        }[str(kind)],
        "tolerance_expr": '1e-6 * max(1.0, abs(EST["estimate"]))' if exact_fit else '0.1 * EST["std_error"] + 1e-9',
        "tolerance_text": "a relative 1e-6 (the fit is deterministic)"
        if exact_fit
        else "a tenth of its standard error (a propensity model's solver may differ slightly)",
        "headline_note": f"{headline['method']} depends on fitting details (cross-fitted or learned nuisance models) that a short notebook cell cannot reproduce exactly."
        if headline
        else "",
    }


def _propensity(
    confounders: ConfounderDiscovery | None,
    ps: PSDiagnostics | None,
    headline: dict[str, Any] | None,
    has_data: bool,
    binary: bool,
) -> dict[str, Any] | None:
    if not (has_data and binary):
        return None
    # Column names as they are in the data: ps_diagnostics lists encoded dummies (region_south),
    # which the notebook's design_matrix rebuilds from the original column.
    covs = (
        (headline or {}).get("details", {}).get("adjustment_set")
        or (confounders.adjustment_set if confounders is not None else None)
        or (ps.covariates if ps is not None else None)
    )
    if not covs:
        return None
    sugg = ps.trim_suggestion if ps is not None and ps.trimmed else None
    trim = _bounds(sugg.model_dump()) if sugg is not None else None
    return {"covariates": list(covs), "model": (ps.model if ps is not None else None) or "logistic", "trim": trim}


def _traces(snap: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "agent": t["agent_name"],
            "action": t.get("action", ""),
            "seconds": t.get("duration_ms", 0) / 1000,
            "summary": str((t.get("outputs") or {}).get("summary", ""))[:160],
        }
        for t in snap.get("agent_traces", [])
    ]


def _versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return {"whyflow": version("whyflow")}
    except PackageNotFoundError:
        return {"whyflow": None}
