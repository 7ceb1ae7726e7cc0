"""Runs of a recipe on a data source over time: history, drift flags and reuse of unchanged data.

A job folder already records what it ran on (``run.json``: recipe, data source, fingerprint) and
what it found (``state.json``). This module reads those back, newest last, so that

* ``whyflow history RECIPE --data PATH`` shows how the answer moved across refreshes,
* a finished run is compared with the previous completed run of the same recipe on the same
  source and flags drift beyond the recipe's ``settings.drift`` thresholds, and
* a deployment run on data whose content (sha256) and question are unchanged can point at the
  previous completed job instead of recomputing it.

No Prefect here: the job store's reading of the typed state, shared by the CLI, the flows and the artifacts.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from whyflow.ask.state import AskState
from whyflow.causal.queries import headline_estimate
from whyflow.causal.state import AnalysisState
from whyflow.core.errors import WhyflowError
from whyflow.flows.jobstore.store import JobFolder, JobStore
from whyflow.flows.recipes.recipe import DriftThresholds
from whyflow.states import JobState

__all__ = [
    "RunRecord",
    "read_record",
    "records_for",
    "find_reusable",
    "previous_completed",
    "compute_drift",
    "history_lines",
    "history_markdown",
    "recipe_name_of",
]


@dataclass(frozen=True)
class RunRecord:
    """One job as history sees it: what it ran on and what it concluded."""

    job_id: str
    path: Path
    recipe_name: str
    recipe_sha256: str
    data: str
    sha256: str
    rows: int | None
    columns: int | None
    schema: dict[str, str]
    treatment: str | None
    outcome: str | None
    question: str
    status: str
    created_at: str
    headline: dict[str, Any] | None = None
    quality: float | None = None
    decision: str | None = None
    drift: dict[str, Any] = field(default_factory=dict)

    @property
    def completed(self) -> bool:
        """Whether the job finished successfully."""
        return self.status == "completed"


def _file_sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else ""


def _question_key(run: dict[str, Any]) -> str:
    """Everything besides the data that decides the answer: pair, options and design."""
    design = dict(run.get("design") or {})
    design.pop("metadata_path", None)  # compared by content below, not by where it lives
    for name in ("controls", "cluster", "where"):  # unstated: the key of a run recorded before they existed
        if design.get(name) is None:
            design.pop(name, None)
    meta = run.get("metadata")
    meta_sha = _file_sha(Path(meta)) if meta else ""
    key = {
        "treatment": run.get("treatment"),
        "outcome": run.get("outcome"),
        "overrides": run.get("overrides") or {},
        "design": design,
        "metadata": meta_sha,
        "seed": run.get("seed"),
    }
    if run.get("question"):  # an ask job (whyflow ask): the question itself
        key["question"] = run["question"]
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()


def _answer_headline(state: AskState) -> dict[str, Any] | None:
    """An ask job's answer as a headline (a numeric answer also serves drift as its estimate)."""
    final = state.final_output
    if final is None:
        return None
    result = final.result
    number = result if isinstance(result, (int, float)) and not isinstance(result, bool) else None
    return {"answer": final.answer, "estimate": number, "output_type": final.output_type}


def _headline(state: JobState) -> dict[str, Any] | None:
    if isinstance(state, AskState):
        return _answer_headline(state)
    head = headline_estimate(state)
    if head is None:
        return None
    return {
        "method": head.method,
        "estimand": head.estimand,
        "estimate": head.estimate,
        "ci_lower": head.ci_lower,
        "ci_upper": head.ci_upper,
        "treatment": head.treatment_variable,
        "outcome": head.outcome_variable,
        "reason": head.details.headline_reason,
    }


def read_record(folder: JobFolder) -> RunRecord | None:
    """The record of one job folder, or ``None`` if it is not a whyflow job (or cannot be read)."""
    try:
        state = folder.load_any()
        run = folder.read_run()
    except (WhyflowError, OSError, ValueError):
        return None
    if not run:
        return None
    prints = run.get("fingerprint") or {}
    quality = critiques = None
    if isinstance(state, AnalysisState):
        quality = state.eda_result.data_quality_score if state.eda_result is not None else None
        critiques = state.critique_history
    return RunRecord(
        job_id=str(state.job_id or run.get("job_id")),
        path=folder.path,
        recipe_name=str(run.get("recipe_name") or ""),
        recipe_sha256=_file_sha(folder.recipe_path),
        data=str(run.get("data") or ""),
        sha256=str(prints.get("sha256") or run.get("data_sha256") or ""),
        rows=prints.get("rows"),
        columns=prints.get("columns"),
        schema=dict(prints.get("schema") or {}),
        treatment=run.get("treatment"),
        outcome=run.get("outcome"),
        question=_question_key(run),
        status=state.status.value,
        created_at=str(run.get("created_at") or state.created_at.isoformat()),
        headline=_headline(state),
        quality=float(quality) if quality is not None else None,
        decision=critiques[-1].decision.value if critiques else None,
        drift=dict(run.get("drift") or {}),
    )


def recipe_name_of(recipe: str) -> str:
    """A recipe's name: read from the YAML file if ``recipe`` is a path, else ``recipe`` itself."""
    path = Path(recipe)
    if path.suffix in (".yaml", ".yml") or path.exists():
        import yaml

        try:
            doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError):
            doc = None
        if isinstance(doc, dict) and isinstance(doc.get("name"), str):
            return str(doc["name"])
        return path.stem
    return recipe


def _roots(roots: list[Path | str | None]) -> list[Path]:
    out: list[Path] = []
    for root in roots:
        path = Path(root).resolve() if root is not None else JobStore().root.resolve()
        if path not in out:
            out.append(path)
    return out


def records_for(recipe_name: str, data: str, roots: list[Path | str | None] | None = None) -> list[RunRecord]:
    """Every job of ``recipe_name`` on the data source ``data`` under ``roots``, newest last."""
    found: dict[Path, RunRecord] = {}
    for root in _roots(roots or [None]):
        if not root.exists():
            continue
        for state_file in root.glob("*/state.json"):
            folder = JobFolder(state_file.parent)
            try:  # run.json is small; a job's state can be megabytes: read it only for a match
                run = folder.read_run()
            except (OSError, ValueError):
                continue
            if str(run.get("recipe_name") or "") != recipe_name or str(run.get("data") or "") != data:
                continue
            record = read_record(folder)
            if record and record.recipe_name == recipe_name and record.data == data:
                found[state_file.parent.resolve()] = record
    return sorted(found.values(), key=lambda r: (r.created_at, r.job_id))


def previous_completed(current: RunRecord, roots: list[Path | str | None]) -> RunRecord | None:
    """The latest completed run of the same recipe, source and question, before ``current``."""
    earlier = [
        r
        for r in records_for(current.recipe_name, current.data, roots)
        if r.completed
        and r.job_id != current.job_id
        and r.created_at <= current.created_at
        and r.question == current.question
    ]
    return earlier[-1] if earlier else None


def find_reusable(current: RunRecord, roots: list[Path | str | None]) -> RunRecord | None:
    """A completed job with the same recipe text, data content (sha256) and question, if any."""
    matches = [
        r
        for r in records_for(current.recipe_name, current.data, roots)
        if r.completed
        and r.job_id != current.job_id
        and r.sha256 == current.sha256
        and r.recipe_sha256 == current.recipe_sha256
        and r.question == current.question
    ]
    return matches[-1] if matches else None


def _finite(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and math.isfinite(float(x)) else None


def compute_drift(current: RunRecord, previous: RunRecord | None, thresholds: DriftThresholds) -> dict[str, Any]:
    """What moved beyond the thresholds since ``previous``: estimate, schema, data quality."""
    if previous is None:
        return {"previous_job": None, "flags": [], "notes": ["first completed run of this recipe on this data"]}
    flags: list[str] = []
    notes: list[str] = []
    out: dict[str, Any] = {"previous_job": previous.job_id, "previous_path": str(previous.path)}
    new, old = current.headline, previous.headline
    if new and old and (new.get("treatment"), new.get("outcome")) != (old.get("treatment"), old.get("outcome")):
        notes.append("the headline pair changed, so the estimates are not compared")
    elif new and old and _finite(new.get("estimate")) is not None and _finite(old.get("estimate")) is not None:
        a, b = float(old["estimate"]), float(new["estimate"])
        change = abs(b - a) / abs(a) if a != 0 else (math.inf if b != 0 else 0.0)
        out["estimate_change"] = None if math.isinf(change) else round(change, 4)
        if change > thresholds.estimate_change:
            pct = "∞" if math.isinf(change) else f"{change:.0%}"
            flags.append(
                f"estimate moved {pct} ({a:.4g} → {b:.4g}), more than the {thresholds.estimate_change:.0%} threshold"
            )
    added = sorted(set(current.schema) - set(previous.schema))
    removed = sorted(set(previous.schema) - set(current.schema))
    retyped = sorted(c for c in set(current.schema) & set(previous.schema) if current.schema[c] != previous.schema[c])
    if added or removed or retyped:
        parts = [f"{label}: {', '.join(cols)}" for label, cols in (("added", added), ("removed", removed)) if cols]
        parts += [f"retyped: {c} {previous.schema[c]} → {current.schema[c]}" for c in retyped]
        flags.append("data schema changed (" + "; ".join(parts) + ")")
    if current.quality is not None and previous.quality is not None:
        drop = previous.quality - current.quality
        out["quality_drop"] = round(drop, 2)
        if drop > thresholds.quality_drop:
            flags.append(
                f"data quality dropped {drop:.1f} points ({previous.quality:.1f} → {current.quality:.1f}), "
                f"more than the {thresholds.quality_drop:g}-point threshold"
            )
    out["flags"] = flags
    out["notes"] = notes
    return out


def _estimate_text(head: dict[str, Any] | None) -> str:
    from whyflow.flows.jobstore.summary import fmt

    if not head:
        return "n/a"
    if "answer" in head:
        text = " ".join(str(head.get("answer") or "").split())
        return text if len(text) <= 60 else text[:57] + "..."
    return f"{fmt(head.get('estimate'))} [{fmt(head.get('ci_lower'))}, {fmt(head.get('ci_upper'))}]"


def _row(r: RunRecord) -> list[str]:
    quality = f"{r.quality:.0f}" if r.quality is not None else "n/a"
    drift = "; ".join(r.drift.get("flags") or []) or ("reused" if r.drift.get("reused_from") else "-")
    return [
        r.job_id,
        r.created_at[:19].replace("T", " "),
        r.status,
        _estimate_text(r.headline),
        f"{r.rows}×{r.columns} {r.sha256[:10]}",
        quality,
        r.decision or "n/a",
        drift,
    ]


_HEADER = ["job", "started (UTC)", "status", "headline [95% CI]", "data (rows×cols sha256)", "quality", "critique"]


def history_lines(records: list[RunRecord]) -> list[str]:
    """A plain-text table of ``records`` (newest last) for the terminal."""
    header = [*_HEADER, "drift"]
    rows = [header, *(_row(r) for r in records)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[-1] for row in rows]


def history_markdown(records: list[RunRecord], title: str) -> str:
    """The same table as Markdown, for a Prefect artifact."""
    header = [*_HEADER, "drift"]
    lines = [f"# {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in _row(r)) + " |" for r in records]
    return "\n".join(lines) + "\n"
