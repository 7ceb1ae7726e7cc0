"""Effect estimation as a reason-act loop over a small tool interface.

Tools: ``check_overlap``, ``check_balance``, ``refit_propensity``, ``estimate(method)``,
``compare_estimates``, ``finish``. Each step chooses the next tool from what the loop has seen.
Without an LLM (``ctx.llm is None``) a deterministic policy chooses; with one, the model is asked
for JSON ``{"thought", "tool", "method"}``, validated against the allowed tools, and the policy
is used whenever the answer is junk. The estimates come from the same functions as
``effect_estimator`` (``whyflow.causal.estimation.pair_analysis``), so the numbers agree.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import Field

from whyflow.causal.discovery.adjustment import critique_codes
from whyflow.causal.estimation.common import (
    ESTIMATOR_OPTIONAL,
    ESTIMATOR_REQUIRED,
    ESTIMATOR_WRITES,
    EffectEstimatorParams,
    finish_pair,
    resolve_pairs,
    setup_for_pair,
)
from whyflow.causal.estimation.propensity import SMD_OK
from whyflow.causal.prompts import annotated, choose_step
from whyflow.causal.state import AnalysisState, TreatmentEffectResult
from whyflow.causal.view import AnalysisView
from whyflow.core.agent import Agent, AgentContext, AgentResult
from whyflow.core.errors import AgentError
from whyflow.core.status import JobStatus
from whyflow.core.view import required
from whyflow.runtime.data import read_table

__all__ = ["EffectEstimatorReActAgent", "EffectEstimatorReActParams", "TOOLS", "policy", "llm_choose", "valid_tools"]

TOOLS = ("check_overlap", "check_balance", "refit_propensity", "estimate", "compare_estimates", "finish")


class EffectEstimatorReActParams(EffectEstimatorParams):
    """As effect_estimator, plus ``max_steps`` per pair."""

    max_steps: int = Field(16, ge=1, description="tool steps per pair at most")


class EffectEstimatorReActAgent(Agent[EffectEstimatorReActParams]):
    """The effect estimator as a reason-act loop (LLM-chosen steps, deterministic fallback)."""

    STATE_MODEL = AnalysisState
    NAME = "effect_estimator_react"
    DESCRIPTION = "Treatment effects chosen step by step (overlap, balance, estimate, compare)"
    REQUIRED_STATE_FIELDS = ESTIMATOR_REQUIRED
    OPTIONAL_STATE_FIELDS = ESTIMATOR_OPTIONAL
    WRITES_STATE_FIELDS = ESTIMATOR_WRITES
    JOB_STATUS = JobStatus.ESTIMATING_EFFECTS
    PROGRESS_WEIGHT = 3

    Params = EffectEstimatorReActParams

    def run(self, view: AnalysisView, params: EffectEstimatorReActParams, ctx: AgentContext) -> AgentResult:
        """Run the loop for every pair and return the same fields as effect_estimator."""
        pairs, why = resolve_pairs(view)
        frame = read_table(required(view.dataframe_path, "dataframe_path"))
        codes = critique_codes(view.critique_history)
        round_no = view.iteration_count + 1
        results: list[TreatmentEffectResult] = []
        steps_out: dict[str, list[dict[str, Any]]] = {}
        for pair in pairs:
            t, y = pair["treatment"], pair["outcome"]
            setup = setup_for_pair(view, frame, t, y, codes, params.propensity_model, ctx.seed, params.bootstrap)
            loop = _Loop(setup, codes, params.methods)
            for _ in range(params.max_steps):
                choice = llm_choose(ctx.llm, loop) if ctx.llm is not None else None
                thought, tool, method = choice if choice else policy(loop)
                if loop.act(thought, tool, method) == "finish":
                    break
            if not loop.estimates:
                raise AgentError(f"the loop produced no estimate for {t} -> {y}")
            rows, text, head = finish_pair(view, setup, loop.estimates, round_no)
            for r in rows:
                r.details.extras["react_steps"] = len(loop.steps)
            results.extend(rows)
            steps_out[f"{t}->{y}"] = loop.steps
            trace = " ".join(
                f"[{i + 1}] {s['thought']} -> {s['action']}: {s['observation']}" for i, s in enumerate(loop.steps)
            )
            why.append(f"[{t} -> {y}] Steps: {trace} {text}")
        head_row = next(r for r in results if r.details.headline)
        return annotated(
            ctx.llm,
            AgentResult(
                updates={"treatment_effects": results, "analyzed_pairs": pairs},
                summary=(
                    f"{sum(len(s) for s in steps_out.values())} steps, {len(results)} estimates; headline {head_row.method} "
                    f"{head_row.estimate:.4g} [{head_row.ci_lower:.4g}, {head_row.ci_upper:.4g}]"
                ),
                reasoning=" ".join(why),
                outputs={"steps": steps_out, "round": round_no, "llm": ctx.llm is not None},
                tools_called=sorted({s["action"].split("(")[0] for v in steps_out.values() for s in v}),
            ),
        )


class _Loop:
    """The loop's memory: what each tool observed, and the estimates so far."""

    def __init__(self, setup: Any, codes: list[str], pinned: list[str] | None) -> None:
        from whyflow.causal.estimation.menu import default_methods

        self.setup = setup
        self.codes = codes
        self.plan, _ = default_methods(setup, codes)
        if pinned:
            self.plan = list(pinned)
        self.estimates: dict[str, Any] = {}
        self.steps: list[dict[str, Any]] = []
        self.seen: dict[str, Any] = {}

    def allowed_methods(self) -> list[str]:
        return [m for m in self.plan if m not in self.estimates and m not in self.seen.get("failed", [])]

    def act(self, thought: str, tool: str, method: str | None) -> str:
        """Run one tool, record (thought, action, observation); returns the tool name."""
        from whyflow.causal.estimation.pair_analysis import check_balance, refit_propensity, run_method

        s = self.setup
        action, obs = tool, ""
        if tool == "check_overlap":
            o = s.overlap or {}
            self.seen["overlap"] = o
            obs = (
                f"overlap_ok={o.get('overlap_ok')}, outside support {o.get('outside_support', {}).get('overall', 0):.1%}"
                if s.binary
                else "non-binary treatment: no propensity"
            )
        elif tool == "check_balance":
            b = check_balance(s)
            self.seen.setdefault("balance", []).append((s.ps_model, b.get("max_smd_after")))
            obs = (
                f"{s.ps_model}: max |SMD| after weighting {b.get('max_smd_after')}, balance_ok={b.get('balance_ok')}"
                if b
                else "no propensity"
            )
        elif tool == "refit_propensity":
            new = "gbm" if s.ps_model == "logistic" else "logistic"
            o = refit_propensity(s, new)
            s.changes.append(f"refit_propensity: switched to {new} after checking balance")
            self.seen["refit"] = True
            obs = f"refitted with {new}: overlap_ok={o.get('overlap_ok')}"
        elif tool == "estimate" and method:
            action = f"estimate({method})"
            try:
                e = run_method(s, method)
                self.estimates[method] = e
                obs = f"{e.method}: {e.estimate:.4g} [{e.ci[0]:.4g}, {e.ci[1]:.4g}]"
            except AgentError as exc:
                self.seen.setdefault("failed", []).append(method)
                obs = f"failed: {exc}"
        elif tool == "compare_estimates":
            vals = {k: round(v.estimate, 4) for k, v in self.estimates.items() if k != "naive"}
            self.seen["compared"] = len(self.estimates)
            spread = (max(vals.values()) - min(vals.values())) if vals else 0.0
            obs = f"adjusted estimates {vals}; spread {spread:.4g}"
        elif tool == "finish":
            obs = f"{len(self.estimates)} estimates; headline chosen by the fixed rule"
        else:
            action, obs = f"invalid({tool})", "ignored: not an allowed tool"
        self.steps.append({"thought": thought, "action": action, "observation": obs})
        return tool


def policy(loop: _Loop) -> tuple[str, str, str | None]:
    """Deterministic next step: overlap, balance (refit once if poor), estimate the plan, compare, finish."""
    s, seen = loop.setup, loop.seen
    if s.binary and "overlap" not in seen:
        return "First see whether treated and controls overlap on the propensity score.", "check_overlap", None
    if s.binary and "balance" not in seen:
        return "Check whether weighting balances the covariates.", "check_balance", None
    bal = seen.get("balance", [])
    if s.binary and bal and not seen.get("refit") and (bal[-1][1] or 0) > SMD_OK:
        return (
            "Weighted balance is poor: the propensity model may be misspecified; try the other model.",
            "refit_propensity",
            None,
        )
    if seen.get("refit") and len(bal) < 2:
        return "Re-check balance with the new propensity model.", "check_balance", None
    remaining = loop.allowed_methods()
    if not (seen.get("overlap") or {}).get("overlap_ok", True):
        remaining.sort(key=lambda m: m in ("ipw", "matching"))  # unstable without overlap: last
    if remaining:
        m = remaining[0]
        return f"Estimate with {m} (planned from the data and design).", "estimate", m
    if "compared" not in seen:
        return "Compare the estimates for agreement before choosing a headline.", "compare_estimates", None
    return "Every planned estimate is in and compared.", "finish", None


def _prompt(loop: _Loop) -> str:
    history = [{"action": s["action"], "observation": s["observation"]} for s in loop.steps[-8:]]
    return (
        "You are estimating a causal effect. Choose the next tool. Tools: "
        + ", ".join(TOOLS)
        + f". For 'estimate' pick method from {loop.allowed_methods()}. History: {json.dumps(history)}. "
        'Answer JSON only: {"thought": str, "tool": str, "method": str or null}.'
    )


def valid_tools(loop: _Loop) -> list[str]:
    """The tools a model may choose now: those that can change nothing the rules would not.

    Balance is checked once (again after a refit), the propensity is refit only when balance is
    poor, and ``finish`` only once every planned method is estimated and compared, so a model
    can reorder the work but never cut it short or choose a different headline.
    """
    s, seen = loop.setup, loop.seen
    bal = seen.get("balance", [])
    out = []
    if s.binary and "overlap" not in seen:
        out.append("check_overlap")
    if s.binary and (not bal or (seen.get("refit") and len(bal) < 2)):
        out.append("check_balance")
    if s.binary and bal and not seen.get("refit") and (bal[-1][1] or 0) > SMD_OK:
        out.append("refit_propensity")
    if loop.allowed_methods():
        out.append("estimate")
    if loop.estimates and "compared" not in seen:
        out.append("compare_estimates")
    if not loop.allowed_methods() and "compared" in seen:
        out.append("finish")
    return out


def llm_choose(llm: Any, loop: _Loop) -> tuple[str, str, str | None] | None:
    """Ask the model for the next step among the valid ones; None (use the policy) on any junk."""
    if hasattr(llm, "tool_call"):  # whyflow's client (ctx.llm): validated tool calls
        valid = valid_tools(loop)
        if len(valid) < 2:
            return None  # nothing to choose
        history = [{"action": s["action"], "observation": s["observation"]} for s in loop.steps[-8:]]
        return choose_step(llm, TOOLS, valid, loop.allowed_methods(), history)
    try:
        resp = llm.chat.completions.create(
            model=getattr(llm, "whyflow_model", None) or "default",
            messages=[{"role": "user", "content": _prompt(loop)}],
            temperature=0,
            max_tokens=120,
            response_format={"type": "json_object"},
        )
        data = json.loads(resp.choices[0].message.content or "")
    except Exception:  # noqa: BLE001 - any client or parsing failure falls back to the policy
        return None
    if not isinstance(data, dict) or data.get("tool") not in TOOLS:
        return None
    method = data.get("method")
    if data["tool"] == "estimate" and method not in loop.allowed_methods():
        return None
    if data["tool"] == "finish" and not loop.estimates:
        return None
    return str(data.get("thought") or "LLM choice"), str(data["tool"]), method if data["tool"] == "estimate" else None
