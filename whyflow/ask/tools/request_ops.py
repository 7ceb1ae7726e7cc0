"""The operations a parsed request runs, as plain pandas/scipy functions. This file's source is sent
into the sandbox with the requests, after :mod:`whyflow.ask.tools.request_ops_base` and
:mod:`whyflow.ask.tools.request_fits` (their imports of one another are removed there), so it imports
nothing else of whyflow.

:func:`answer_requests` runs the data steps (derived columns, row filters, outlier removal),
then each request on its own, each in its own ``try``: a request that fails, or whose
operation is not known, gets ``None`` (shown as "not computed") in its own slot and its reason
in ``_notes``; no value is ever shared between requests.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from whyflow.ask.tools.request_designs import design_effect
from whyflow.ask.tools.request_fits import causal_effect, fit_model
from whyflow.ask.tools.request_ops_base import NUMBER_OPS, col_numbers, numeric, outlier_mask, pair_numbers, statistic


def _correlation(df: pd.DataFrame, cols: list[str], opts: dict[str, Any], want_p: bool) -> float:
    from scipy import stats

    x, y = pair_numbers(df, cols)
    method = opts.get("method", "pearson")
    test = {"spearman": stats.spearmanr, "kendall": stats.kendalltau}.get(method, stats.pearsonr)
    r, p = test(x, y)
    return float(p if want_p else r)


def _regression(df: pd.DataFrame, cols: list[str], part: str) -> float:
    """Ordinary least squares of cols[0] on cols[1:]: a slope, the intercept or R²."""
    data = pd.concat([col_numbers(df, c) for c in cols], axis=1).dropna()
    y, x = data.iloc[:, 0].to_numpy(float), data.iloc[:, 1:].to_numpy(float)
    design = np.column_stack([np.ones(len(x)), x])
    beta, *_ = np.linalg.lstsq(design, y, rcond=None)
    if part == "intercept":
        return float(beta[0])
    if part == "r2":
        resid = y - design @ beta
        return float(1 - resid @ resid / ((y - y.mean()) @ (y - y.mean())))
    return float(beta[1])


def _test_p(df: pd.DataFrame, cols: list[str], test: str) -> float:
    from scipy import stats

    x = col_numbers(df, cols[0]).dropna()
    if test == "shapiro":
        return float(stats.shapiro(x).pvalue)
    if test == "ks":
        return float(stats.kstest((x - x.mean()) / x.std(), "norm").pvalue)
    if test == "normaltest":
        return float(stats.normaltest(x).pvalue)
    raise ValueError(f"unknown test '{test}'")


def group_test_p(df: pd.DataFrame, cols: list[str], opts: dict[str, Any]) -> float:
    """The p-value of the named test of ``cols[0]`` between the levels of ``opts['group']``."""
    from scipy import stats

    x = col_numbers(df, cols[0])
    samples = [x[df[opts["group"]] == level].dropna() for level in opts["levels"]]
    test = opts.get("test", "ttest")
    if test == "mannwhitney":
        return float(stats.mannwhitneyu(samples[0], samples[1], alternative="two-sided").pvalue)
    if test == "anova":
        return float(stats.f_oneway(*samples).pvalue)
    if test == "kruskal":
        return float(stats.kruskal(*samples).pvalue)
    if test == "ks2":
        return float(stats.ks_2samp(samples[0], samples[1]).pvalue)
    return float(stats.ttest_ind(samples[0], samples[1], equal_var=test != "welch").pvalue)


def strongest_correlation(df: pd.DataFrame, target: str, opts: dict[str, Any]) -> str:
    """The numeric column whose correlation with ``target`` is largest in absolute value."""
    sizes = {}
    for name in df.columns:
        values = numeric(df[name]) if name != target else None
        if values is not None and values.notna().sum() >= max(3, 0.5 * df[name].notna().sum()) and values.nunique() > 1:
            sizes[name] = abs(_correlation(df.assign(_x=values), [target, "_x"], opts, False))
    sizes = {k: v for k, v in sizes.items() if v == v}  # not NaN
    if not sizes:
        raise ValueError(f"no numeric column to correlate with '{target}'")
    return str(max(sizes, key=lambda k: sizes[k]))


def _verdict(df: pd.DataFrame, cols: list[str], opts: dict[str, Any]) -> str:
    """The format's own word for a rule the question states on a computed p-value (and r)."""
    base, alpha = opts["base"], float(opts.get("alpha", 0.05))
    if base == "normality":
        return str(opts["yes"] if _test_p(df, cols, opts.get("test", "shapiro")) >= alpha else opts["no"])
    if base == "group_test":
        return str(opts["yes"] if group_test_p(df, cols, opts) < alpha else opts["no"])
    if base in ("skew_normal", "skew_class"):
        skew, bound = statistic(col_numbers(df, cols[0]), "skew", opts), float(opts["bound"])
        if base == "skew_normal":
            return str(opts["yes"] if abs(skew) < bound else opts["no"])
        return str(opts["middle"] if abs(skew) <= bound else opts["right"] if skew > 0 else opts["left"])
    if base == "skew_sign":
        return str(opts["positive"] if statistic(col_numbers(df, cols[0]), "skew", opts) > 0 else opts["negative"])
    if opts.get("against_strongest"):
        cols = [cols[0], strongest_correlation(df, cols[0], opts)]
    r, p = _correlation(df, cols, opts, False), _correlation(df, cols, opts, True)
    if base == "direction":
        return str(opts["positive"] if r > 0 else opts["negative"])
    if base == "strength":
        size = abs(r)
        return str(
            opts["strong"]
            if size >= float(opts["strong_min"])
            else opts["moderate"]
            if size >= float(opts["moderate_min"])
            else opts["weak"]
        )
    if base == "significance":
        return str(opts["yes"] if p < alpha else opts["no"])
    if base == "r_threshold":
        return str(opts["yes"] if abs(r) >= float(opts["r_min"]) else opts["no"])
    if p >= alpha and opts.get("none"):  # without a "none" option the rule is on |r| alone
        return str(opts["none"])
    return str(opts["linear"] if abs(r) >= float(opts.get("r_min", 0.5)) else opts["nonlinear"])


def _plain(value: Any) -> str:
    """A listed value as text, as the data holds it (numpy scalars as Python's)."""
    return str(value.item() if isinstance(value, np.generic) else value)


def compute(df: pd.DataFrame, request: dict[str, Any]) -> Any:
    """The value one request asks for, computed on ``df``."""
    op, cols, opts = request["op"], list(request.get("columns") or []), dict(request.get("options") or {})
    where = opts.get("where")
    for cond in [where] if isinstance(where, dict) else where or []:
        # this request's own group: "mean_fare_class1" is the mean over Pclass == 1
        df = (
            df[df[cond["column"]].isna() == cond["isna"]] if "isna" in cond else df[df[cond["column"]] == cond["value"]]
        )
        if df.empty:
            raise ValueError(f"no rows with {cond['column']} = {cond['value']}")
    if op in NUMBER_OPS:
        if not cols:
            raise ValueError("no column named for this part")
        return statistic(col_numbers(df, cols[0]), op, opts)
    if op == "rows":
        return len(df)
    if op == "missing":
        return int(df[cols].isna().sum().sum()) if cols else int(df.isna().sum().sum())
    if op == "has_missing":
        return str(opts.get("yes", "True") if df[cols].isna().any().any() else opts.get("no", "False"))
    if op == "missing_percent":
        return float(100 * (df[cols].isna().sum().sum() / (len(df) * len(cols)) if cols else df.isna().mean().mean()))
    if op == "most_missing":
        counts = df.isna().sum()
        return ", ".join(str(c) for c in counts[counts == counts.max()].index) if counts.max() > 0 else "none"
    if op == "unique":
        counts = df[cols[0]].value_counts()
        return int((counts >= int(opts.get("min_count", 1))).sum())
    if op == "strongest_corr":
        return strongest_correlation(df, cols[0], opts)
    if op == "normality_stat":
        from scipy import stats

        return float(stats.shapiro(col_numbers(df, cols[0]).dropna()).statistic)
    if op in ("corr", "corr_p"):
        return _correlation(df, cols, opts, op == "corr_p")
    if op in ("slope", "intercept", "r2"):
        return _regression(df, cols, op)
    if op == "predictor_significance":  # "yes,no": each predictor's OLS p-value against alpha, in order
        import statsmodels.api as sm

        data = pd.concat([col_numbers(df, c) for c in cols], axis=1).dropna()
        fit = sm.OLS(data.iloc[:, 0], sm.add_constant(data.iloc[:, 1:])).fit()
        return ",".join("yes" if p < float(opts.get("alpha", 0.05)) else "no" for p in fit.pvalues.iloc[1:])
    if op == "normality_p":
        return _test_p(df, cols, opts.get("test", "shapiro"))
    if op == "outlier_list":
        x = col_numbers(df, cols[0])
        mask = outlier_mask(x, opts.get("method", "iqr"), float(opts.get("threshold", 1.5))).fillna(False)
        items = df.loc[mask, opts["label"]] if opts.get("label") else x[mask]
        listed = sorted(items.tolist()) if opts.get("sort") else items.tolist()
        if request.get("decimals") is not None and not opts.get("label"):  # "each rounded to two decimals"
            listed = [round(float(v), int(request["decimals"])) for v in listed]
        return str(opts.get("separator", ", ")).join(_plain(v) for v in listed)
    if op == "group_test_p":
        return group_test_p(df, cols, opts)
    if op == "extreme":
        label, value = cols[0], cols[1]
        data = pd.DataFrame({"label": df[label], "value": col_numbers(df, value)}).dropna()
        if opts.get("per_group"):
            data = data.groupby("label", as_index=False)["value"].mean()
        best = data["value"].max() if opts.get("largest", True) else data["value"].min()
        return ", ".join(str(v) for v in data.loc[data["value"] == best, "label"])
    if op == "verdict":
        return _verdict(df, cols, opts)
    if op == "effect":
        return causal_effect(df, opts)
    if op == "design":
        return design_effect(df, opts)
    if op == "model":
        return fit_model(df, opts)
    if op == "count_within_sd":
        x = col_numbers(df, cols[0]).dropna()
        k = float(opts.get("k", 1.0))
        return int(((x - x.mean()).abs() <= k * x.std(ddof=int(opts.get("ddof", 1)))).sum())
    if op in ("outlier_min", "outlier_max"):
        x = col_numbers(df, cols[0]).dropna()
        outliers = x[outlier_mask(x, opts.get("method", "iqr"), float(opts.get("threshold", 1.5)))]
        if outliers.empty:
            raise ValueError("no outliers")
        return float(outliers.min() if op == "outlier_min" else outliers.max())
    if op == "outlier_count":
        x = col_numbers(df, cols[0]).dropna()
        return int(outlier_mask(x, opts.get("method", "iqr"), float(opts.get("threshold", 1.5))).sum())
    raise ValueError(f"this part asks for an operation without a deterministic routine ('{op}')")


def apply_step(df: pd.DataFrame, step: dict[str, Any]) -> pd.DataFrame:
    """One data step: a derived column, a row filter, or removing a column's outliers."""
    kind = step["kind"]
    if kind == "derive":
        parts = [col_numbers(df, c) for c in step["columns"]]
        a, b = parts[0], (parts[1] + float(step.get("epsilon", 0.0)) if len(parts) > 1 else None)
        fn = step["fn"]
        values = {
            "sum": lambda: sum(parts[1:], parts[0]) + float(step.get("constant", 0.0)),
            "difference": lambda: a - b,
            "ratio": lambda: a / b,
            "product": lambda: math.prod(parts[1:], start=parts[0]),
            "mean": lambda: pd.concat(parts, axis=1).mean(axis=1),
            "log10": lambda: np.log10(a),
            "log": lambda: np.log(a),
        }[fn]()
        if step.get("zero_for_infinite"):  # "a ratio over a zero denominator is defined as zero"
            values = values.replace([np.inf, -np.inf], 0.0)
        return df.assign(**{step["name"]: values})
    if kind == "filter":
        col, op, value = step["column"], step["op"], step["value"]
        if step.get("stat"):  # "a fare greater than the average fare": the statistic of the column as it stands
            value = statistic(col_numbers(df, col), step["stat"], {})
        series = df[col]
        if isinstance(value, int | float) and not isinstance(value, bool):
            series = numeric(series)
        keep = {
            "==": series == value,
            "!=": series != value,
            ">": series > value,
            ">=": series >= value,
            "<": series < value,
            "<=": series <= value,
        }[op]
        return df[keep]
    if kind == "extreme_row":  # the first row with the column's largest (or smallest) value
        x = col_numbers(df, step["column"])
        return df.loc[[x.idxmax() if step.get("largest", True) else x.idxmin()]]
    if kind == "drop_outliers":
        x = col_numbers(df, step["column"])
        mask = outlier_mask(x, step.get("method", "iqr"), float(step.get("threshold", 1.5)), int(step.get("ddof", 0)))
        return df[~mask.fillna(False)]
    if kind == "fillna":
        col = step["column"]
        if col not in df.columns:
            return df
        values = col_numbers(df, col) if step["how"] in ("mean", "median") else df[col]
        fill = {
            "mean": lambda: values.mean(),
            "median": lambda: values.median(),
            "mode": lambda: values.mode().iloc[0],
        }[step["how"]]()
        return df.assign(**{col: values.fillna(fill)})
    if kind == "dropna":
        return df.dropna(subset=step["columns"])
    raise ValueError(f"unknown data step '{kind}'")


def shown(value: Any, decimals: int | None) -> Any:
    """A value as the answer shows it: rounded to the requested decimals (text for numbers)."""
    if isinstance(value, dict) and "estimate" in value:
        return {**value, "shown": shown(value["estimate"], decimals)}
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        if not math.isfinite(float(value)):
            return None
        if decimals is None:
            return repr(round(float(value), 10))
        return f"{float(value):.{decimals}f}"
    return value


def answer_requests(df: pd.DataFrame, spec: dict[str, Any]) -> dict[str, Any]:
    """Every request's value under its own slot name (None when it could not be computed)."""
    out: dict[str, Any] = {}
    notes: dict[str, str] = {}
    frames = {"before": df, "original": df}
    steps = spec.get("steps") or []
    # 'original' is the data before the question's cleaning: with its outliers, or else before imputation
    cleaning = ("drop_outliers",) if any(s["kind"] == "drop_outliers" for s in steps) else ("fillna",)
    try:
        after = df
        for step in steps:
            after = apply_step(after, step)
            if step["kind"] != "drop_outliers":  # 'before' is the data with its outliers
                frames["before"] = apply_step(frames["before"], step)
            if step["kind"] not in cleaning:
                frames["original"] = apply_step(frames["original"], step)
        frames["after"] = after
    except Exception as exc:  # noqa: BLE001 - each part reports the failure in its own slot
        notes["_steps"] = f"{type(exc).__name__}: {exc}"
        frames["after"] = None  # type: ignore[assignment]
    for request in spec["requests"]:
        slot = request["slot"]
        frame = frames.get(request.get("stage", "after"))
        if request["op"] == "unknown" or frame is None:
            out[slot] = None
            notes[slot] = request.get("reason") or notes.get("_steps", "not computed")
            continue
        try:
            out[slot] = shown(compute(frame, request), request.get("decimals"))
        except Exception as exc:  # noqa: BLE001 - one part's failure stays in its slot
            out[slot] = None
            notes[slot] = f"{type(exc).__name__}: {exc}"
    out["_notes"] = notes
    return out
