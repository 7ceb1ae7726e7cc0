"""Run a recipe as a nested job of another job (a causal question asked through `whyflow ask`).

Agents may not import :mod:`flows`; the runner hands them :func:`run_nested_recipe` as
``ctx.run_recipe``. The nested job is prepared exactly like ``whyflow run`` (data checks,
fingerprint, its own folder inside the asking job's folder) and run by the same runner, in the
calling agent's thread (plain calls, so it works inside a Prefect task or a Dask worker alike).
Its summary comes back as plain data.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["run_nested_recipe"]


def run_nested_recipe(
    recipe: str, data: str, output: str, treatment: str | None = None, outcome: str | None = None
) -> dict[str, Any]:
    """Run ``recipe`` on ``data`` in the job folder ``output``; return its headline and caveats.

    Never raises for a failed nested run: the answer says what failed. Bad input (a column the
    data lacks) raises the usual :class:`~agents.base.errors.DataError`.
    """
    from flows.errors import RunCancelled, RunFailed
    from flows.jobs import RunRequest, prepare_job
    from flows.plan import load_plan
    from flows.progress import Reporter
    from flows.runner import LocalExecutor, Runner
    from flows.summary import job_summary

    plan = load_plan(recipe)
    folder = prepare_job(RunRequest(recipe=recipe, data=data, treatment=treatment, outcome=outcome, output=output), plan)
    state = folder.load()
    failure = None
    try:
        Runner(plan, folder, state, LocalExecutor(), Reporter()).run()
    except (RunFailed, RunCancelled) as exc:
        failure = str(exc)
    head = _headline(state)
    critique = state.critique_history[-1] if state.critique_history else None
    return {
        "job_dir": str(Path(folder.path).resolve()),
        "status": state.status.value,
        "error": failure,
        "treatment": state.get_primary_pair()[0],
        "outcome": state.get_primary_pair()[1],
        "headline": head,
        "critique": None if critique is None else critique.decision.value,
        "caveats": list(critique.issues if critique else [])[:6] + list(state.recommendations)[:4],
        "summary": job_summary(state, folder.path),
    }


def _headline(state: Any) -> dict[str, Any] | None:
    effects = [e for e in state.treatment_effects if e.details.headline] or list(state.treatment_effects)
    if not effects:
        return None
    e = effects[0]
    return {
        "method": e.method,
        "estimand": e.estimand,
        "estimate": e.estimate,
        "ci_lower": e.ci_lower,
        "ci_upper": e.ci_upper,
        "p_value": e.p_value,
    }
