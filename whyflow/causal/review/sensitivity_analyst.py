"""Sensitivity analyst: how much unmeasured confounding would it take to overturn the estimate?

For the primary pair's estimates (headline first) it writes one :class:`SensitivityResult` per
analysis. ``robustness_value`` means, per ``method``:

* ``e_value``: the E-value of the point estimate (risk-ratio scale, >= 1; larger is more
  robust); ``details["evalue_ci"]`` is the E-value of the confidence limit closest to the null
  (1 when the interval already crosses the null).
* ``rosenbaum_bounds``: the critical Gamma of the Wilcoxon signed-rank test on re-matched 1:1
  propensity pairs (1 = not robust to any hidden bias); only when a matching estimate exists.
* ``placebo_treatment``, ``random_common_cause``, ``data_subset``: DoWhy's refutation p-value
  (>= 0.05 passes: the placebo distribution covers zero, or the original estimate sits inside
  the refuted estimates' distribution).
* ``unobserved_common_cause``: the share of the estimate that remains in the worst cell of a
  grid of simulated confounder strengths (1 = unchanged, <= 0 = explained away or reversed;
  0 when the headline's interval already includes zero).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import numpy as np
import pandas as pd
from pydantic import Field

from whyflow.causal.estimates import SensitivityDetails
from whyflow.causal.queries import (
    adjustment_set_of,
    effects_for_pair,
    evalue_of_limit,
    headline_evalue,
    latest_round,
    refuter_tally,
)
from whyflow.causal.review.refuters import failure_reason
from whyflow.causal.state import AnalysisState, SensitivityResult, TreatmentEffectResult
from whyflow.causal.view import AnalysisView
from whyflow.core.agent import Agent, AgentContext, AgentParams, AgentResult
from whyflow.core.errors import AgentError
from whyflow.core.numbers import fmt_number
from whyflow.core.status import JobStatus
from whyflow.core.view import required
from whyflow.runtime.data import read_table

__all__ = ["SensitivityAnalystAgent", "SensitivityAnalystParams", "adjusted_estimates", "fmt_number"]


def adjusted_estimates(effects: list[TreatmentEffectResult]) -> list[TreatmentEffectResult]:
    """The latest round's estimates, headline first, naive comparisons left out."""
    adjusted = [e for e in latest_round(effects) if not e.details.is_naive]
    return sorted(adjusted, key=lambda e: not e.details.headline)


_EVALUE_FIELDS = ("evalue_estimate", "evalue_ci", "ci_crosses_null")
"""What an E-value result records in its own fields (the rest of the calculation goes to ``extras``)."""


class SensitivityAnalystParams(AgentParams):
    """Options: refuter simulations, significance level, confounder-strength grid."""

    simulations: int = Field(50, ge=1, description="simulations of each refuter")
    alpha: float = Field(0.05, gt=0, lt=1, description="significance level of the Rosenbaum bounds")
    refuters: bool = Field(True, description="run DoWhy's refuters")
    subset_fraction: float = Field(0.8, gt=0, le=1, description="share of rows the data-subset refuter keeps")
    flip_probabilities: tuple[Annotated[float, Field(ge=0, le=1)], ...] = Field(
        (0.02, 0.05, 0.1),
        min_length=1,
        description="hidden confounder's strengths on the treatment: flip probabilities (binary), SDs (continuous)",
    )
    outcome_strengths_sd: tuple[Annotated[float, Field(ge=0)], ...] = Field(
        (0.05, 0.1, 0.25), min_length=1, description="hidden confounder's strengths on the outcome, in outcome SDs"
    )
    gamma_max: float = Field(20.0, gt=1, description="largest Rosenbaum Gamma searched")
    max_rows: int = Field(
        20_000,
        ge=1,
        description="rows (a seeded sample) the refuters and re-matching use on large data",
    )
    """Each refuter refits the estimate ``simulations`` times, and a sample answers the same question in seconds."""


class SensitivityAnalystAgent(Agent[SensitivityAnalystParams]):
    """E-values, Rosenbaum bounds and DoWhy refuters for the primary pair's estimates."""

    STATE_MODEL = AnalysisState
    NAME = "sensitivity_analyst"
    DESCRIPTION = "E-values, Rosenbaum bounds and DoWhy refuters for the primary estimate"
    REQUIRED_STATE_FIELDS = ("treatment_effects", "dataframe_path")
    OPTIONAL_STATE_FIELDS = ("confounder_discovery", "data_profile", "ps_diagnostics")
    WRITES_STATE_FIELDS = ("sensitivity_results",)
    JOB_STATUS = JobStatus.SENSITIVITY_ANALYSIS
    PRELOAD_MODULES = ("scipy.stats",)
    PROGRESS_WEIGHT = 1.5

    Params = SensitivityAnalystParams

    def run(self, view: AnalysisView, params: SensitivityAnalystParams, ctx: AgentContext) -> AgentResult:
        """Compute every applicable sensitivity analysis and explain each."""
        notes: list[str] = []
        pair = view.pair("analyse")
        treatment, outcome = pair.treatment, pair.outcome
        if pair.note:
            notes.append(pair.note[0].upper() + pair.note[1:] + ".")
        estimates = adjusted_estimates(effects_for_pair(view.treatment_effects, treatment, outcome))
        if not estimates:  # every adjusted estimator was skipped: say so, the critique decides
            why = f"no adjusted estimate of {treatment} -> {outcome} to analyse (only naive ones, or none)"
            return AgentResult(
                updates={"sensitivity_results": []},
                summary=f"skipped: {why}",
                reasoning=f"Skipped every sensitivity analysis: {why}.",
                outputs={"skipped": {"all": why}},
            )
        frame = read_table(required(view.dataframe_path, "dataframe_path"))
        missing = [c for c in (treatment, outcome) if c not in frame.columns]
        if missing:
            raise AgentError(f"column(s) {missing} of the estimates are not in the analysis data")
        adjustment = self._adjustment(estimates[0], frame, treatment, outcome, notes)
        frame = self._analysis_sample(frame, estimates[0], treatment, outcome, ctx.seed, notes)
        results = self._evalues(estimates, frame, treatment, outcome, notes)
        sample = frame
        if len(frame) > params.max_rows:
            sample = frame.sample(n=params.max_rows, random_state=ctx.seed)
            notes.append(
                f"Re-matching and refuters use a seeded sample of {params.max_rows:,} of {len(frame):,} rows "
                "(E-values use the full estimates)."
            )
        try:
            results += self._rosenbaum(estimates, sample, treatment, outcome, adjustment, params, ctx, notes)
        except Exception as exc:  # noqa: BLE001 - a failed analysis is a recorded skip, the run goes on
            notes.append(f"Skipped the Rosenbaum bounds: {failure_reason(exc)}.")
        if params.refuters:
            ctx.progress(f"refuters ({params.simulations} simulations each, {len(sample):,} rows)")
            results += self._refuters(estimates[0], sample, treatment, outcome, adjustment, params, ctx, notes)
        return AgentResult(
            updates={"sensitivity_results": results},
            summary=self._summary(results, notes),
            reasoning=" ".join(notes),
            outputs=self._outputs(results, len(frame)),
            tools_called=["whyflow.causal.review.refuters.run_refuters"] if params.refuters else [],
        )

    # ---- inputs --------------------------------------------------------------------------
    @staticmethod
    def _adjustment(
        headline: TreatmentEffectResult, frame: pd.DataFrame, treatment: str, outcome: str, notes: list[str]
    ) -> list[str]:
        """The headline's own adjustment set (the one rule of :func:`whyflow.causal.queries.adjustment_set_of`)."""
        adjustment = adjustment_set_of(headline)
        dropped = [c for c in adjustment if c not in frame.columns or c in (treatment, outcome)]
        adjustment = [c for c in adjustment if c not in dropped]
        notes.append(f"Adjustment set from the headline estimate: {adjustment or 'none'}.")
        if dropped:
            notes.append(f"Left out {dropped}: not usable columns of the analysis data.")
        return adjustment

    @staticmethod
    def _analysis_sample(
        frame: pd.DataFrame, headline: TreatmentEffectResult, treatment: str, outcome: str, seed: int, notes: list[str]
    ) -> pd.DataFrame:
        """The rows the headline describes: the estimator's recorded sample (``details.sample_rows``).

        An estimate from an older state has no record: its trim to common support is re-applied
        with the estimator's own preparation and propensity model (same covariates, model, seed).
        """
        from whyflow.causal.discovery.adjustment import prepare
        from whyflow.causal.estimation import propensity as P
        from whyflow.causal.review.sensitivity import is_binary

        recorded = headline.details.sample_rows
        if recorded and Path(recorded).exists():
            rows = np.load(recorded)
            if len(rows) < len(frame):
                trimmed = headline.details.trimmed
                why = "trimmed to common support and " if trimmed is not None else ""
                notes.append(
                    f"Every analysis below runs on the {len(rows):,} rows the headline was estimated on ({why}"
                    f"complete in its adjustment set), of {len(frame):,}."
                )
            return frame.loc[rows].reset_index(drop=True)
        trim = headline.details.trimmed
        if trim is None or not is_binary(frame[treatment]):
            return frame
        covariates = [c for c in headline.details.adjustment_set if c in frame.columns]
        model = headline.details.propensity_model or "logistic"
        prep = prepare(frame, treatment, outcome, covariates)
        ps = P.fit_propensity(prep.X, prep.t, model, seed)
        keep = (ps >= trim.lower) & (ps <= trim.upper)
        kept = frame.loc[prep.rows[keep] if prep.rows is not None else prep.X.index[keep]].reset_index(drop=True)
        notes.append(
            f"The headline was estimated on a sample trimmed to propensity [{trim.lower}, {trim.upper}] "
            f"({trim.n_kept} units); refitting its {model} propensity on its adjustment set keeps "
            f"{len(kept)} units, on which every analysis below runs."
        )
        return kept

    @staticmethod
    def _outputs(results: list[SensitivityResult], n: int) -> dict[str, Any]:
        """Small facts for the trace."""
        out: dict[str, Any] = {"n_results": len(results), "n_used": n}
        for r in results:
            key = {"e_value": "evalue", "rosenbaum_bounds": "gamma", "unobserved_common_cause": "share_left"}.get(
                r.method, f"p_{r.method}"
            )
            out.setdefault(key, round(r.robustness_value, 4))
        return out

    # ---- E-values ------------------------------------------------------------------------
    @staticmethod
    def _evalues(
        estimates: list[TreatmentEffectResult], frame: pd.DataFrame, treatment: str, outcome: str, notes: list[str]
    ) -> list[SensitivityResult]:
        """One E-value result per estimate (headline first)."""
        from whyflow.causal.review.sensitivity import evalue_for_effect, is_binary

        y = frame[outcome]
        binary_y = is_binary(y)
        scale: dict[str, float] = {}
        if binary_y and is_binary(frame[treatment]):
            scale["baseline_risk"] = float(y[frame[treatment].astype(int) == 0].mean())
            notes.append(
                f"Binary outcome: E-values use the risk ratio implied by each risk difference and the "
                f"control group's risk ({scale['baseline_risk']:.3f})."
            )
        else:
            scale["outcome_sd"] = float(y.std())
            notes.append(
                f"E-values convert each estimate to a standardized difference d = estimate / sd({outcome}) "
                f"(sd = {fmt_number(scale['outcome_sd'])}) and RR = exp(0.91 d) (VanderWeele & Ding)."
            )
        results: list[SensitivityResult] = []
        for est in estimates:
            try:
                ev = evalue_for_effect(est.estimate, est.ci_lower, est.ci_upper, **scale)
            except ValueError as exc:
                notes.append(f"No E-value for {est.method}: {exc}.")
                continue
            results.append(
                SensitivityResult(
                    method="e_value",
                    robustness_value=ev["evalue_estimate"],
                    interpretation=_evalue_text(est, ev, treatment, outcome),
                    details=SensitivityDetails(
                        kind="e_value",
                        estimate_method=est.method,
                        headline=est.details.headline,
                        evalue_estimate=ev["evalue_estimate"],
                        evalue_ci=ev["evalue_ci"],
                        ci_crosses_null=ev["ci_crosses_null"],
                        extras={
                            "estimate": est.estimate,
                            "ci": [est.ci_lower, est.ci_upper],
                            **{k: v for k, v in ev.items() if k not in _EVALUE_FIELDS},
                        },
                    ),
                )
            )
        return results

    # ---- Rosenbaum -----------------------------------------------------------------------
    @staticmethod
    def _rosenbaum(
        estimates: list[TreatmentEffectResult],
        frame: pd.DataFrame,
        treatment: str,
        outcome: str,
        adjustment: list[str],
        params: SensitivityAnalystParams,
        ctx: AgentContext,
        notes: list[str],
    ) -> list[SensitivityResult]:
        """Rosenbaum bounds when a matching estimate exists and the treatment is binary."""
        from whyflow.causal.review.sensitivity import is_binary, matched_pair_differences, rosenbaum_gamma

        matching = [e for e in estimates if e.details.family == "matching"]
        if not matching:
            notes.append("No matching estimate, so no Rosenbaum bounds.")
            return []
        if not is_binary(frame[treatment]):
            notes.append("Rosenbaum bounds need a binary treatment; skipped.")
            return []
        diffs = matched_pair_differences(frame, treatment, outcome, adjustment, seed=ctx.seed)
        if diffs.size < 10:
            notes.append(f"Only {diffs.size} matched pairs within the caliper: no Rosenbaum bounds.")
            return []
        positive = matching[0].estimate >= 0
        rb = rosenbaum_gamma(diffs, alpha=params.alpha, positive=positive, gamma_max=params.gamma_max)
        gamma = rb["gamma"]
        if gamma <= 1.0:
            text = (
                f"The re-matched pairs ({rb['n_pairs']}) do not show a significant effect of {treatment} on "
                f"{outcome} even without hidden bias (p = {rb['p_value_gamma_1']:.3g}): Gamma = 1."
            )
        else:
            bound = "at least " if rb["capped"] else ""
            text = (
                f"Over {rb['n_pairs']} matched pairs the effect stays significant unless a hidden confounder "
                f"makes one unit of a pair {bound}{gamma:.2f} times as likely to be treated as the other "
                f"(Gamma = {bound}{gamma:.2f}); "
                + ("that is robust." if gamma >= 2 else "a modest hidden bias could overturn it.")
            )
        notes.append(f"Rosenbaum bounds on {rb['n_pairs']} re-matched pairs (caliper 0.2 SD of the logit).")
        details = SensitivityDetails(
            kind="rosenbaum",
            estimate_method=matching[0].method,
            extras={"mean_pair_difference": float(diffs.mean()), **rb},
        )
        return [
            SensitivityResult(method="rosenbaum_bounds", robustness_value=gamma, interpretation=text, details=details)
        ]

    # ---- refuters ------------------------------------------------------------------------
    @staticmethod
    def _refuters(
        headline: TreatmentEffectResult,
        frame: pd.DataFrame,
        treatment: str,
        outcome: str,
        adjustment: list[str],
        params: SensitivityAnalystParams,
        ctx: AgentContext,
        notes: list[str],
    ) -> list[SensitivityResult]:
        """DoWhy's placebo, random common cause, data subset and unobserved confounder refuters."""
        from whyflow.causal.review.refuters import run_refuters

        try:
            raw = run_refuters(
                frame,
                treatment,
                outcome,
                adjustment,
                simulations=params.simulations,
                seed=ctx.seed,
                subset_fraction=params.subset_fraction,
                flip_probabilities=params.flip_probabilities,
                outcome_strengths_sd=params.outcome_strengths_sd,
            )
        except Exception as exc:  # noqa: BLE001 - the refuters are skipped with the reason; the run goes on
            notes.append(f"Skipped the DoWhy refuters: the re-estimate failed ({failure_reason(exc)}).")
            return []
        for name, why in (raw.get("skipped") or {}).items():
            notes.append(f"Skipped the {name.replace('_', ' ')}: {why}.")
        base = raw["estimate"]
        notes.append(
            f"Refuters (DoWhy's procedures, by least squares) re-estimate the effect by backdoor linear regression on the adjustment set "
            f"({fmt_number(base)}; headline {headline.method}: {fmt_number(headline.estimate)}), "
            f"{params.simulations} simulations each."
        )
        common = {
            "refuted_estimate": base,
            "n_used": raw["n_used"],
            "simulations": params.simulations,
            "subset_fraction": params.subset_fraction,
        }
        out = [
            _refuter_result(name, raw[key], base, params.alpha, treatment, common)
            for name, key in (
                ("placebo_treatment", "placebo_treatment_refuter"),
                ("random_common_cause", "random_common_cause"),
                ("data_subset", "data_subset_refuter"),
            )
            if key in raw
        ]
        significant = not headline.ci_lower <= 0 <= headline.ci_upper
        if "add_unobserved_common_cause" in raw:
            out.append(
                _unobserved_result(
                    raw["add_unobserved_common_cause"], base, significant, treatment, outcome, common, ctx, notes
                )
            )
        return out

    @staticmethod
    def _summary(results: list[SensitivityResult], notes: list[str] | None = None) -> str:
        """The one CLI line."""
        parts: list[str] = []
        ev = headline_evalue(results)
        if ev:
            parts.append(f"E-value {ev.robustness_value:.2f} (CI {evalue_of_limit(ev):.2f})")
        rb = next((r for r in results if r.method == "rosenbaum_bounds"), None)
        if rb:
            parts.append(f"Gamma {rb.robustness_value:.2f}")
        passed, total = refuter_tally(results)
        if total:
            parts.append(f"refuters {passed}/{total} passed")
        uc = next((r for r in results if r.method == "unobserved_common_cause"), None)
        if uc and uc.details.extras.get("meaningful", True):
            parts.append(f"{uc.robustness_value:.0%} of the estimate left under the strongest simulated confounder")
        skipped = [n.split(":", 1)[0].removeprefix("Skipped the ") for n in notes or [] if n.startswith("Skipped")]
        if skipped:
            parts.append("skipped " + ", ".join(skipped) + " (reasons in the trace)")
        return "; ".join(parts) or "no sensitivity analysis applicable"


def _evalue_text(est: TreatmentEffectResult, ev: dict[str, Any], treatment: str, outcome: str) -> str:
    """Plain words for one E-value."""
    text = (
        f"To explain away the {est.method} estimate ({fmt_number(est.estimate)}), an unmeasured confounder would need "
        f"a risk-ratio association of {ev['evalue_estimate']:.2f} with both {treatment} and {outcome}, "
        f"beyond the measured covariates"
    )
    if ev["ci_crosses_null"]:
        return text + "; the confidence interval already includes no effect (E-value of the limit = 1)."
    strength = "weak" if ev["evalue_ci"] < 1.5 else ("moderate" if ev["evalue_ci"] < 2.5 else "strong")
    return text + f"; {ev['evalue_ci']:.2f} would move the interval to include no effect ({strength} robustness)."


def _refuter_result(
    method: str, raw: dict[str, Any], base: float, alpha: float, treatment: str, common: dict[str, Any]
) -> SensitivityResult:
    """One p-value refuter as a SensitivityResult."""
    p = raw["p_value"]
    passed = p is None or p >= alpha
    new = raw["new_effect"]
    if method == "placebo_treatment":
        what = f"Replacing {treatment} by a random permutation gives an average effect of {fmt_number(new)} (vs {fmt_number(base)})"
        verdict = (
            "close to zero, as it should be" if passed else "not zero: the estimate may be an artefact of the model"
        )
    elif method == "random_common_cause":
        what = f"Adding a random common cause moves the estimate to {fmt_number(new)} (from {fmt_number(base)})"
        verdict = "essentially unchanged" if passed else "a shift a noise covariate should not cause"
    else:
        what = f"Re-estimating on random {common['subset_fraction']:.0%} subsets gives {fmt_number(new)} on average (vs {fmt_number(base)})"
        verdict = "stable" if passed else "unstable across subsets"
    p_text = "no p-value" if p is None else f"p = {p:.3g}"
    return SensitivityResult(
        method=method,
        robustness_value=1.0 if p is None else float(p),
        interpretation=f"{what}: {verdict} ({p_text}).",
        details=SensitivityDetails(kind="refuter", passed=passed, extras={**common, "new_effect": new, "p_value": p}),
    )


def _unobserved_result(
    raw: dict[str, Any],
    base: float,
    significant: bool,
    treatment: str,
    outcome: str,
    common: dict[str, Any],
    ctx: AgentContext,
    notes: list[str],
) -> SensitivityResult:
    """The added-unobserved-common-cause grid as a SensitivityResult (share of estimate left).

    When the headline's interval already includes zero there is no effect to keep: the share is
    not meaningful (a near-zero denominator) and the robustness value is 0.
    """
    sign = 1.0 if base >= 0 else -1.0
    shares = [[sign * v / abs(base) if base else 0.0 for v in row] for row in raw["new_effects"]]
    worst = min(min(row) for row in shares)
    t_kind = "flips of" if raw["effect_on_treatment"] == "binary_flip" else "SD shifts of"
    sim = (
        f"A simulated unobserved confounder ({t_kind} {treatment} up to {max(raw['strengths_treatment']):.0%} "
        f"and {outcome} shifts up to {max(raw['strengths_outcome_sd']):.2f} SD)"
    )
    span = f"({fmt_number(raw['min_effect'])} to {fmt_number(raw['max_effect'])})"
    if not significant:
        text = f"{sim} moves the estimate to {span}; the estimate is not distinguishable from zero, so no share of it is robust."
        value = 0.0
    else:
        text = f"{sim} leaves {worst:.0%} of the estimate in the worst case {span}"
        text += "; the sign survives." if worst > 0 else "; it can be explained away or reversed."
        value = float(worst)
    try:
        plot: str | None = _plot_grid(raw, shares, treatment, outcome, ctx)
    except Exception as exc:  # noqa: BLE001 - a figure that fails is a recorded skip, not a failed run
        plot = None
        notes.append(f"Skipped the unobserved-confounder figure: {failure_reason(exc)}.")
    return SensitivityResult(
        method="unobserved_common_cause",
        robustness_value=value,
        interpretation=text,
        details=SensitivityDetails(
            kind="unobserved",
            extras={
                **common,
                **raw,
                "share_remaining": shares,
                "worst_share": float(worst),
                "meaningful": significant,
                "plot": plot,
            },
        ),
    )


def _plot_grid(raw: dict[str, Any], shares: list[list[float]], treatment: str, outcome: str, ctx: AgentContext) -> str:
    """A heat map of the share of the estimate left at each confounder strength."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    image = ax.imshow(shares, cmap="RdYlGn", vmin=0, vmax=1, origin="lower")
    for i, row in enumerate(shares):
        for j, v in enumerate(row):
            ax.text(j, i, f"{v:.0%}", ha="center", va="center", fontsize=9)
    ax.set_xticks(range(len(raw["strengths_outcome_sd"])), [f"{s:g} SD" for s in raw["strengths_outcome_sd"]])
    ax.set_yticks(range(len(raw["strengths_treatment"])), [f"{s:g}" for s in raw["strengths_treatment"]])
    ax.set_xlabel(f"Confounder effect on {outcome}")
    ax.set_ylabel(f"Confounder effect on {treatment}")
    ax.set_title("Share of the estimate left under an unobserved confounder")
    fig.colorbar(image, ax=ax, label="share of estimate")
    fig.tight_layout()
    path = ctx.plots_dir / "sensitivity_unobserved_confounder.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return str(path)
