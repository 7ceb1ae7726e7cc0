"""Exploratory data analysis: distributions, correlations, outliers, collinearity, balance, quality.

Works on the analysis data (``dataframe_path``) and, for the quality assessment, also looks at
the input file as received (``dataset_info.local_path``), so problems that a repair step
already fixed are still named (marked as resolved) rather than silently forgotten.
Expensive parts (VIF, plots) run on a seeded sample of large tables, and say so.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import Field

from whyflow.causal.dataprep import eda_figures
from whyflow.causal.dataprep.frame_checks import at_most_distinct, load_findings, quality_findings
from whyflow.causal.dataprep.profiling import is_missing_indicator
from whyflow.causal.state import AnalysisState, DataProfile, EDAResult
from whyflow.causal.view import AnalysisView
from whyflow.core.agent import Agent, AgentContext, AgentParams, AgentResult
from whyflow.core.errors import AgentError, DataError
from whyflow.core.status import JobStatus
from whyflow.core.view import required
from whyflow.runtime import figures
from whyflow.runtime.data import read_table

__all__ = ["EDAAgent", "EDAParams"]

_SHAPIRO_MAX = 5000
_VIF_CAP = 1e6


def _numeric_columns(frame: pd.DataFrame, profile: DataProfile) -> list[str]:
    """Numeric columns worth analysing: numbers, not ids, not constant."""
    return [
        c
        for c in frame.columns
        if pd.api.types.is_numeric_dtype(frame[c])
        and profile.feature_types.get(c) not in ("id", "constant")
        and not at_most_distinct(frame[c], 1)
    ]


def _pearson(frame: pd.DataFrame, cols: list[str], chunk: int = 65_536) -> pd.DataFrame:
    """Pearson correlations: centred cross-products summed over row chunks (no copy of the table)
    when no value is missing or infinite, pandas' pairwise rule otherwise."""
    arrays = [frame[c].to_numpy(dtype="float64", na_value=np.nan) for c in cols]
    if not all(np.isfinite(a).all() for a in arrays):
        return frame[cols].corr()
    means = [a.mean() for a in arrays]
    cross = np.zeros((len(cols), len(cols)))
    for start in range(0, len(frame), chunk):
        block = np.column_stack([a[start : start + chunk] - m for a, m in zip(arrays, means, strict=True)])
        cross += block.T @ block
    sd = np.sqrt(np.diag(cross))
    with np.errstate(divide="ignore", invalid="ignore"):
        corr = np.clip(cross / np.outer(sd, sd), -1.0, 1.0)
    return pd.DataFrame(corr, index=cols, columns=cols)


def _correlations(frame: pd.DataFrame, cols: list[str], threshold: float) -> tuple[dict, list[dict[str, Any]]]:
    corr = _pearson(frame, cols) if len(cols) > 1 else pd.DataFrame()
    matrix = {a: {b: round(float(corr.loc[a, b]), 6) for b in cols} for a in cols} if len(cols) > 1 else {}
    pairs = [
        {"var1": a, "var2": b, "correlation": round(float(corr.loc[a, b]), 4)}
        for i, a in enumerate(cols)
        for b in cols[i + 1 :]
        if abs(float(corr.loc[a, b])) > threshold
    ]
    return matrix, sorted(pairs, key=lambda p: -abs(p["correlation"]))


def _distribution(values: pd.Series) -> dict[str, Any]:
    """Moments plus a normality test: Shapiro-Wilk up to 5,000 values, D'Agostino K^2 above."""
    from scipy import stats

    v = values.dropna().to_numpy(dtype=float)
    out: dict[str, Any] = {
        "n": int(len(v)),
        "mean": float(np.mean(v)),
        "std": float(np.std(v, ddof=1)) if len(v) > 1 else 0.0,
        "skewness": float(stats.skew(v)),
        "kurtosis": float(stats.kurtosis(v)),
    }
    if len(v) < 8 or np.ptp(v) == 0:
        out.update(normality_test=None, statistic=None, p_value=None, is_normal=None)
        return out
    test = "shapiro" if len(v) <= _SHAPIRO_MAX else "dagostino_k2"
    res = stats.shapiro(v) if test == "shapiro" else stats.normaltest(v)
    out.update(normality_test=test, statistic=float(res.statistic), p_value=float(res.pvalue))
    out["is_normal"] = bool(res.pvalue > 0.05)
    return out


def _outliers(values: pd.Series) -> dict[str, Any]:
    """Tukey's IQR rule (1.5 IQR), with the count of extreme values beyond 3 IQR."""
    v = values.dropna()
    q1, q3 = (float(x) for x in v.quantile([0.25, 0.75]))
    iqr = q3 - q1
    lo, hi = q1 - 1.5 * iqr, q3 + 1.5 * iqr
    mask = (values < lo) | (values > hi)
    extreme = (values < q1 - 3 * iqr) | (values > q3 + 3 * iqr)
    return {
        "method": "IQR (1.5 x IQR beyond the quartiles)",
        "count": int(mask.sum()),
        "share": float(mask.sum() / max(len(v), 1)),
        "lower_bound": lo,
        "upper_bound": hi,
        "n_extreme": int(extreme.sum()),
        "indices": [int(i) for i in np.flatnonzero(mask.to_numpy())[:20]],
    }


def _vif(frame: pd.DataFrame, cols: list[str]) -> dict[str, float]:
    """Variance inflation factors (statsmodels) of ``cols``, with an intercept."""
    import statsmodels.api as sm
    from statsmodels.stats.outliers_influence import variance_inflation_factor

    data = frame[cols].dropna().astype(float)
    if len(cols) < 2 or len(data) <= len(cols) + 1:
        return {}
    exog = sm.add_constant(data.to_numpy(), has_constant="add")
    out: dict[str, float] = {}
    from statsmodels.tools.sm_exceptions import SingularMatrixWarning

    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        # Exact collinearity is reported as a capped VIF and a warning line, not a console flood.
        warnings.filterwarnings("ignore", category=SingularMatrixWarning)
        warnings.filterwarnings("ignore", message="The design matrix is poorly conditioned", category=UserWarning)
        for i, col in enumerate(cols, start=1):
            value = float(variance_inflation_factor(exog, i))
            out[col] = _VIF_CAP if not np.isfinite(value) or value > _VIF_CAP else round(value, 4)
    return out


def _treatment_indicator(series: pd.Series) -> tuple[pd.Series | None, str]:
    """The treatment as 0/1 by the estimators' own rule, or None when it is not binary."""
    from whyflow.causal.discovery.adjustment import encode_treatment

    known = series.dropna()
    if known.nunique() != 2:
        return None, f"treatment has {known.nunique()} levels, not 2: balance is for binary treatments"
    values, treated, _ = encode_treatment(known)
    indicator = pd.Series(np.nan, index=series.index)
    indicator[known.index] = values
    return indicator, "" if treated == "1" else f"treated = '{treated}'"


def _smd(a: np.ndarray, b: np.ndarray) -> float:
    pooled = np.sqrt((np.var(a, ddof=1) + np.var(b, ddof=1)) / 2) if len(a) > 1 and len(b) > 1 else 0.0
    return float((np.mean(a) - np.mean(b)) / pooled) if pooled > 0 else 0.0


def _balance(frame: pd.DataFrame, t: pd.Series, covs: list[str], profile: DataProfile) -> dict[str, dict[str, float]]:
    """SMD and a test per covariate: Welch t-test for numbers, chi-square for categories."""
    from scipy import stats

    treated = t == 1
    out: dict[str, dict[str, float]] = {}
    for col in covs:
        s = frame[col]
        kind = profile.feature_types.get(col)
        if pd.api.types.is_numeric_dtype(s) and kind in ("numeric", "ordinal"):
            a, b = s[treated].dropna().to_numpy(float), s[~treated].dropna().to_numpy(float)
            if len(a) < 2 or len(b) < 2:
                continue
            p = float(stats.ttest_ind(a, b, equal_var=False).pvalue)
            out[col] = {
                "smd": _smd(a, b),
                "p_value": p,
                "mean_treated": float(a.mean()),
                "mean_control": float(b.mean()),
            }
            continue
        table = pd.crosstab(s, treated)
        if table.shape[0] < 2 or table.shape[1] < 2:
            continue
        p = float(stats.chi2_contingency(table.to_numpy())[1])
        shares = table / table.sum(axis=0)
        p1, p0 = shares[True].to_numpy(), shares[False].to_numpy()
        denom = np.sqrt((p1 * (1 - p1) + p0 * (1 - p0)) / 2)
        smds = np.where(denom > 0, (p1 - p0) / np.where(denom > 0, denom, 1), 0.0)
        worst = int(np.argmax(np.abs(smds)))
        out[col] = {"smd": float(smds[worst]), "p_value": p, "n_levels": float(table.shape[0])}
    return out


class EDAParams(AgentParams):
    """Options of the EDA step."""

    sample_size: int = Field(50_000, ge=1, description="rows used for VIF and plots on large tables (a seeded sample)")
    vif_rows: int = Field(10_000, ge=1, description="rows used for VIF (a seeded sample)")
    """VIF is a property of the covariates' joint spread, so a sample estimates it well."""
    correlation_threshold: float = Field(0.7, ge=0, le=1, description="|correlation| above which a pair is flagged")
    vif_threshold: float = Field(10.0, ge=1, description="VIF above which a covariate is flagged as collinear")
    smd_threshold: float = Field(
        0.1, ge=0, description="|standardised mean difference| above which a covariate is imbalanced"
    )
    plots: bool = Field(True, description="draw the figures")


class EDAAgent(Agent[EDAParams]):
    """Describes the analysis data and scores its quality before any causal modelling."""

    STATE_MODEL = AnalysisState
    NAME = "eda_agent"
    DESCRIPTION = "Distributions, correlations, outliers, VIF, covariate balance, data quality and plots."
    REQUIRED_STATE_FIELDS = ("data_profile", "dataframe_path")
    OPTIONAL_STATE_FIELDS = ("domain_knowledge",)
    WRITES_STATE_FIELDS = ("eda_result",)
    JOB_STATUS = JobStatus.EXPLORATORY_ANALYSIS
    PRELOAD_MODULES = ("statsmodels.stats.outliers_influence",)
    PROGRESS_WEIGHT = 1.5

    @classmethod
    def warm_up(cls, params: EDAParams, job_dir: Path) -> Callable[[], None] | None:
        """Start the figure worker (:mod:`whyflow.runtime.figures`): the plots are drawn there."""
        return figures.start_worker(("whyflow.causal.dataprep.eda_figures",)) if params.plots else None

    Params = EDAParams

    def run(self, view: AnalysisView, params: EDAParams, ctx: AgentContext) -> AgentResult:
        """Compute every part of the EDA result."""
        profile = required(view.data_profile, "data_profile")
        received = self._input_findings(view, ctx)  # first: the input table is gone before the analysis data is read
        frame = read_table(required(view.dataframe_path, "dataframe_path"))
        notes: list[str] = []
        sample = frame
        if len(frame) > params.sample_size:
            sample = frame.sample(params.sample_size, random_state=ctx.seed)
            notes.append(f"plots use a seeded sample of {params.sample_size:,} of {len(frame):,} rows")
        if len(frame) > params.vif_rows:
            notes.append(f"VIF uses a seeded sample of {min(params.vif_rows, len(sample)):,} rows")
        treatment, outcome = self._pair(view, frame, notes)
        dk = view.domain_knowledge
        num = _numeric_columns(frame, profile)
        continuous = [c for c in num if not at_most_distinct(frame[c], 2)]
        ctx.progress(f"describing {len(num)} numeric columns of {len(frame):,} rows")
        matrix, high = _correlations(frame, num, params.correlation_threshold)
        dist = {c: _distribution(frame[c]) for c in continuous}
        outliers = {c: _outliers(frame[c]) for c in continuous}
        excluded = {outcome, *(dk.post_treatment if dk else [])}
        covs = [c for c in profile.potential_confounders if c in frame.columns and c not in excluded | {treatment}]
        vif_cols = [c for c in [treatment, *covs] if c in num]
        vif_rows = sample if len(sample) <= params.vif_rows else sample.sample(params.vif_rows, random_state=ctx.seed)
        vif = _vif(vif_rows, vif_cols)
        vif_warn = [
            f"{c}: VIF {v:.1f} > {params.vif_threshold:g} (collinear with other covariates)"
            for c, v in vif.items()
            if v > params.vif_threshold
        ]
        balance, balance_summary = self._balance(frame, treatment, covs, profile, params.smd_threshold)
        score, issues = self._quality(received, frame, outliers, high, vif_warn, balance, params.smd_threshold)
        plots: dict[str, str] = {}
        if params.plots:
            shown = sample[continuous[: eda_figures.SHOWN_COLUMNS]]  # what the histograms read, not the table
            try:
                figures.draw(
                    eda_figures.draw_all,
                    ctx.plots_dir,
                    shown,
                    continuous,
                    matrix,
                    balance,
                    params.smd_threshold,
                    len(sample),
                )
                plots = eda_figures.planned(ctx.plots_dir, continuous, matrix, balance)
            except Exception as exc:  # noqa: BLE001 - a figure that fails is a recorded skip, not a failed run
                import matplotlib.pyplot as plt

                plt.close("all")
                notes.append(f"Skipped the EDA plots: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}")
        result = EDAResult(
            correlation_matrix=matrix,
            high_correlations=high,
            distribution_stats=dist,
            outliers=outliers,
            vif_scores=vif,
            multicollinearity_warnings=vif_warn,
            covariate_balance=balance,
            balance_summary=balance_summary,
            data_quality_score=score,
            data_quality_issues=issues,
            plot_paths=plots,
            summary_table=self._summary_table(frame, profile),
        )
        summary = (
            f"data quality {score:.0f}/100 ({len(issues)} issues); {len(high)} high correlations, "
            f"{len(vif_warn)} VIF warnings; {balance_summary.split(':')[0]}"
            + ("; skipped the plots (reason in the trace)" if any(n.startswith("Skipped") for n in notes) else "")
        )
        return AgentResult(
            updates={"eda_result": result},
            summary=summary,
            reasoning="\n".join(notes + ["Quality issues:"] + [f"- {i}" for i in issues] + [balance_summary]),
            outputs={"data_quality_score": score, "n_issues": len(issues), "sampled": len(sample) < len(frame)},
            tools_called=["scipy.stats", "statsmodels.vif", "matplotlib"],
        )

    @staticmethod
    def _pair(view: AnalysisView, frame: pd.DataFrame, notes: list[str]) -> tuple[Any, Any]:
        found = view.maybe_pair()
        t, y = (found.treatment, found.outcome) if found else (None, None)
        if found is not None and found.note:
            notes.append(f"{found.note}: {t} -> {y}")
        for role, col in (("treatment", t), ("outcome", y)):
            if col and col not in frame.columns:
                raise AgentError(f"the {role} column '{col}' is not in the analysis data")
        return t, y

    @staticmethod
    def _balance(
        frame: pd.DataFrame, treatment: str | None, covs: list[str], profile: DataProfile, threshold: float
    ) -> tuple[dict[str, dict[str, float]], str]:
        if not treatment:
            return {}, "balance not assessed: no treatment column"
        t, why = _treatment_indicator(frame[treatment])
        if t is None:
            return {}, f"balance not assessed: {why}"
        rows = t.notna()
        known = rows.all()  # every treatment known: the table itself, not a copy of it
        balance = _balance(frame if known else frame.loc[rows], t if known else t[rows], covs, profile)
        bad = sorted(
            (c for c, b in balance.items() if abs(b["smd"]) > threshold), key=lambda c: -abs(balance[c]["smd"])
        )
        n_t, n_c = int((t == 1).sum()), int((t == 0).sum())
        head = f"{len(bad)} of {len(balance)} covariates imbalanced (|SMD| > {threshold:g})"
        detail = ", ".join(f"{c} ({balance[c]['smd']:+.2f})" for c in bad[:8])
        tail = f"; treated n={n_t:,}, control n={n_c:,}" + (f"; {why}" if why else "")
        advice = " - adjustment is needed: a naive difference in means would be confounded" if bad else ""
        return balance, f"{head}: {detail or 'none'}{tail}{advice}"

    def _quality(
        self,
        received: dict[str, Any] | None,
        frame: pd.DataFrame,
        outliers: dict[str, dict[str, Any]],
        high: list[dict[str, Any]],
        vif_warn: list[str],
        balance: dict[str, dict[str, float]],
        threshold: float,
    ) -> tuple[float, list[str]]:
        """Score 0-100 and the issues behind it; input problems already fixed weigh half."""
        now = quality_findings(frame)
        before = received or now
        issues: list[str] = []
        penalty = 0.0

        def add(text: str, points: float, resolved: bool) -> None:
            nonlocal penalty
            issues.append(text + (" [resolved in the analysis data]" if resolved else ""))
            penalty += points * (0.5 if resolved else 1.0)

        for col, n in before["missing"].items():
            share = n / max(before["n_rows"], 1)
            text = f"missing values: {col} has {n:,} of {before['n_rows']:,} missing ({share:.1%})"
            add(text, min(4.0, 1.0 + 20 * share), now["missing"].get(col, 0) == 0)
        if before["duplicates"]:
            add(f"duplicate rows: {before['duplicates']:,} exact duplicates", 3.0, now["duplicates"] == 0)
        for col in before["text_numeric"]:
            add(f"numbers stored as text: {col}", 2.0, col not in now["text_numeric"])
        for col in before["constant"]:
            add(f"constant column: {col} holds a single value", 1.0, col not in frame.columns)
        for col, n in before["label_variants"].items():
            add(f"inconsistent labels: {col} has {n} spelling variants", 1.0, col not in now["label_variants"])
        for col in [
            c for c in frame.columns if is_missing_indicator(c) and c[: -len("_missing")] not in before["missing"]
        ]:
            add(f"missing values: {col[: -len('_missing')]} was imputed (indicator {col})", 1.0, True)
        for col, o in outliers.items():
            if o["n_extreme"]:
                add(
                    f"outliers: {col} has {o['n_extreme']:,} extreme values beyond 3 IQR ({o['count']:,} beyond 1.5 IQR)",
                    3.0,
                    False,
                )
        for p in high:
            add(f"high correlation: {p['var1']} and {p['var2']} (r = {p['correlation']:+.2f})", 2.0, False)
        issues.extend(f"multicollinearity: {w}" for w in vif_warn)
        penalty += 2.0 * len(vif_warn)
        bad = [c for c, b in balance.items() if abs(b["smd"]) > threshold]
        if bad:
            add(
                f"covariate imbalance: {len(bad)} covariates with |SMD| > {threshold:g} ({', '.join(bad[:6])})",
                min(10.0, 2.0 * len(bad)),
                False,
            )
        return float(round(max(0.0, 100.0 - penalty), 1)), issues

    @staticmethod
    def _input_findings(view: AnalysisView, ctx: AgentContext) -> dict[str, Any] | None:
        """Findings on the input file as received (None: use the analysis data's own, it cannot be read).

        The data profiler records them when it reads the file (``load_findings`` checks they are
        of this very file); else the file is read again here.
        """
        path = view.dataset_info.local_path
        if not path or path == view.dataframe_path:
            return None
        try:
            return load_findings(path, ctx.data_dir) or quality_findings(read_table(path))
        except DataError:
            return None

    @staticmethod
    def _summary_table(frame: pd.DataFrame, profile: DataProfile) -> dict[str, dict[str, Any]]:
        table: dict[str, dict[str, Any]] = {}
        for col in frame.columns:
            s = frame[col]
            row: dict[str, Any] = {
                "type": profile.feature_types.get(col, "derived"),
                "missing": int(s.isna().sum()),
                "n_unique": int(s.nunique()),
            }
            if pd.api.types.is_numeric_dtype(s) and s.notna().any():
                row.update(mean=float(s.mean()), std=float(s.std()), min=float(s.min()), max=float(s.max()))
            elif s.notna().any():
                counts = s.value_counts()
                row.update(top=str(counts.index[0]), top_count=int(counts.iloc[0]))
            table[col] = row
        return table
