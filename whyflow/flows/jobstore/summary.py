"""Plain-text summaries of a job for the terminal: estimates, critique, where things are."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from whyflow.causal.queries import effects_for_pair, pair_estimates
from whyflow.causal.state import AnalysisState, TreatmentEffectResult
from whyflow.core.numbers import fmt_number

__all__ = ["fmt", "estimate_lines", "job_summary", "not_trustworthy", "model_usage", "model_usage_line"]


def fmt(x: float | None) -> str:
    """A number with as many digits as a reader needs (:func:`whyflow.core.numbers.fmt_number`)."""
    return fmt_number(x)


def _p(p: float | None) -> str:
    if p is None:
        return ""
    return "p<0.001" if p < 0.001 else f"p={p:.3f}"


def _line(effect: TreatmentEffectResult, headline: bool, width: int) -> str:
    mark = "★" if headline else " "
    naive = " (naive, for contrast)" if effect.details.is_naive else ""
    return (
        f"  {mark} {effect.method:<{width}} {effect.estimand:<4} {fmt(effect.estimate):>10}  "
        f"95% CI [{fmt(effect.ci_lower)}, {fmt(effect.ci_upper)}]  {_p(effect.p_value)}{naive}"
    )


def not_trustworthy(state: AnalysisState) -> str:
    """Why the primary answer must not be used ("" when the critique approved it or never ran)."""
    if not state.critique_history:
        return ""
    last = state.critique_history[-1]
    if last.decision.value == "APPROVE":
        return ""
    why = (last.verdict or last.reasoning.split(" Headline:")[0]).strip()
    if last.decision.value == "ITERATE":
        if state.should_iterate() and not state.status.is_terminal:
            return ""  # another round is on its way
        return f"the critique did not approve the analysis after {len(state.critique_history)} round(s). {why}"
    return f"the critique rejected the analysis. {why}"


def _skipped(skipped: dict[str, str]) -> str:
    """Skipped methods grouped by their reason."""
    by_reason: dict[str, list[str]] = {}
    for method, reason in skipped.items():
        by_reason.setdefault(reason, []).append(method)
    return "; ".join(f"{', '.join(methods)} ({reason})" for reason, methods in by_reason.items())


def estimate_lines(state: AnalysisState) -> list[str]:
    """The estimates of every pair, headline first, with the reason it leads."""
    lines: list[str] = []
    pairs: list[tuple[str | None, str | None]] = list(state.get_all_pairs())
    if not pairs and all(state.get_primary_pair()):
        pairs = [state.get_primary_pair()]
    for treatment, outcome in pairs:
        effects = effects_for_pair(state.treatment_effects, str(treatment), str(outcome))
        if not effects:
            continue
        head, _ = pair_estimates(effects, str(treatment), str(outcome))
        heads = [head] if head is not None and head.details.headline else []
        ordered = heads + [e for e in effects if e not in heads]
        lines.append(f"Effect of {treatment} on {outcome}:")
        width = max(len(e.method) for e in ordered)
        lines.extend(_line(e, e in heads, width) for e in ordered)
        if heads:
            h = heads[0]
            reason = h.details.headline_reason or "chosen by the estimator's rule"
            doubt = not_trustworthy(state) if (treatment, outcome) == state.get_primary_pair() else ""
            if doubt:
                lines.append(
                    f"  NO TRUSTWORTHY ANSWER: {doubt} The estimates above are shown for diagnosis only; "
                    f"do not report {fmt(h.estimate)} as the effect."
                )
            else:
                lines.append(
                    f"  Headline: {h.method}, {fmt(h.estimate)} (95% CI {fmt(h.ci_lower)} to {fmt(h.ci_upper)}). "
                    f"Why: {reason}"
                )
            if h.details.population:
                lines.append(f"  Population: {h.details.population}; not the whole sample.")
            if h.details.skipped_methods:
                lines.append("  Skipped: " + _skipped(h.details.skipped_methods))
            if h.details.unverified_assumption:
                lines.append(f"  Caution: {h.details.unverified_assumption}")
    return lines


def model_usage(state: AnalysisState, job_dir: Path) -> dict[str, dict[str, int]]:
    """Token usage of the language model per agent, from every trace of the job (empty: never asked).

    Read from ``traces.jsonl`` (the state's copy compresses old traces and loses their usage);
    the state's traces when the job folder has none.
    """
    records: list[tuple[str, dict[str, Any]]] = []
    path = job_dir / "traces.jsonl"
    try:
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                if '"token_usage":{}' in line:
                    continue  # the common case, skipped without parsing
                try:
                    t = json.loads(line)
                except ValueError:
                    continue
                records.append((str(t.get("agent_name")), t.get("token_usage") or {}))
    except OSError:
        records = [(t.agent_name, t.token_usage) for t in state.agent_traces]
    usage: dict[str, dict[str, int]] = {}
    for agent, used in records:
        if not used.get("calls"):
            continue
        mine = usage.setdefault(agent, {})
        for key in ("calls", "cached_calls", "total_tokens", "prompt_tokens", "completion_tokens"):
            mine[key] = mine.get(key, 0) + int(used.get(key, 0) or 0)
    return usage


def model_usage_line(usage: dict[str, dict[str, int]]) -> str:
    """One line: total tokens over the job, per agent; "" when the model was never asked."""
    if not usage:
        return ""
    total = sum(u.get("total_tokens", 0) for u in usage.values())
    calls = sum(u.get("calls", 0) for u in usage.values())
    cached = sum(u.get("cached_calls", 0) for u in usage.values())
    per = ", ".join(f"{agent} {u.get('total_tokens', 0):,}" for agent, u in usage.items())
    extra = f"; {cached} answered from the cache" if cached else ""
    return f"Language model: {total:,} tokens in {calls} call(s){extra} ({per})"


def specification_lines(state: AnalysisState) -> list[str]:
    """The analyst's stated specification as the run kept it, or the one that states the recipe's choice."""
    lines = []
    if state.data_profile is not None and state.data_profile.subgroup:
        lines.append(f"Subgroup: {state.data_profile.subgroup}")
    head = next((e for e in state.treatment_effects if e.details.headline), None)
    if head is not None and not head.details.is_naive:
        used = ",".join(head.details.adjustment_set) or "none"
        own = head.details.recipe_adjustment_set
        if own is not None:
            lines.append(f"Controls: as stated ({used}); the recipe's own choice: {','.join(own) or 'none'}")
        elif not head.details.is_design or head.details.adjustment_set:
            lines.append(f"Controls: the recipe's choice; to state it: --controls {used}")
    complete = head.details.extras.get("complete_cases") if head is not None else None
    if isinstance(complete, dict) and complete:
        lines.append(
            "Rows: the complete cases of imputed confounders, "
            + "; ".join(
                f"{v.get('n_complete', 0):,} rows where {c} was measured ({v.get('share_imputed', 0):.0%} imputed)"
                for c, v in complete.items()
            )
        )
    if state.design.cluster and head is not None:
        by = head.details.extras.get("clustered_by")
        lines.append(
            f"Cluster: errors clustered by {by}" if by else f"Cluster: {head.details.extras.get('cluster_not_applied')}"
        )
    return lines


def job_summary(state: AnalysisState, job_dir: Path) -> list[str]:
    """What a user wants at the end of a run or from `whyflow status`."""
    lines = [f"Job {state.job_id}: {state.status.value} ({state.progress_percentage:.0f}%)"]
    if state.error_message:
        who = f" in {state.error_agent}" if state.error_agent else ""
        lines.append(f"  Reason{who}: {state.error_message}")
    lines.extend(estimate_lines(state))
    if state.data_profile is not None and state.data_profile.duplicates_note:
        lines.append(f"Data: {state.data_profile.duplicates_note}")
    lines.extend(specification_lines(state))
    if state.critique_history:
        last = state.critique_history[-1]
        lines.append(f"Critique: {last.decision.value} after {len(state.critique_history)} round(s)")
        for issue in last.issues[:3]:
            lines.append(f"  - {issue}")
    if state.recommendations:
        lines.append("Next steps:")
        lines.extend(f"  - {r}" for r in state.recommendations[:5])
    used = model_usage_line(model_usage(state, job_dir))
    if used:
        lines.append(used)
    lines.append(f"Job folder: {job_dir}")
    lines.append(f"State:      {job_dir / 'state.json'}")
    if state.notebook_path:
        html = Path(state.notebook_path).with_suffix(".html")
        extra = f" (HTML: {html})" if html.exists() else ""
        lines.append(f"Notebook:   {state.notebook_path}{extra}")
    return lines
