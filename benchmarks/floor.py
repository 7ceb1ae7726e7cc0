"""The floor: the core computations of a causal analysis done directly, with no whyflow agent.

What a competent analyst's plain script would run on the same data (issue 11): read the file,
profile it, correlations, OLS with robust errors, a logistic propensity score, IPW, covariate
balance, 2-fold cross-fitted gradient-boosting AIPW, PC (causal-learn) on a 5,000-row sample and
20 placebo refits. Its time is the yardstick ``bench_cost.py`` divides whyflow's time by.

    python benchmarks/floor.py DATA.csv --treatment T --outcome Y     # one JSON line a step

Each step is printed as soon as it ends (``{"step": ..., "seconds": ...}``), so a run stopped by a
time limit still tells how far it got; the last line holds the estimates. From Python:
``floor(frame_or_path, treatment, outcome)`` returns the seconds per step.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

PC_ROWS = 5000
PLACEBO_REFITS = 20
CLIP = 0.01


def _design(frame: pd.DataFrame, treatment: str, outcome: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Complete cases; covariates are every other column, text columns one-hot encoded."""
    frame = frame.dropna()
    covs = frame.drop(columns=[treatment, outcome])
    covs = pd.get_dummies(covs, drop_first=True, dtype=float)
    covs = covs.loc[:, covs.std() > 0]
    t = frame[treatment].to_numpy(dtype=float)
    y = frame[outcome].to_numpy(dtype=float)
    return covs.to_numpy(dtype=float), t, y, list(covs.columns)


def _smd(x: np.ndarray, t: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
    """Standardised mean differences of each column, weighted when ``w`` is given."""
    w = np.ones_like(t) if w is None else w
    m1 = np.average(x[t == 1], axis=0, weights=w[t == 1])
    m0 = np.average(x[t == 0], axis=0, weights=w[t == 0])
    pooled = np.sqrt((x[t == 1].var(axis=0) + x[t == 0].var(axis=0)) / 2)
    return np.asarray((m1 - m0) / np.where(pooled > 0, pooled, 1.0))


def floor(
    frame: pd.DataFrame | str | Path,
    treatment: str,
    outcome: str,
    *,
    seed: int = 0,
    report: Callable[[str, float], None] | None = None,
    results: dict[str, Any] | None = None,
) -> dict[str, float]:
    """Run the core computations; return the seconds each step took.

    ``frame`` may be a path (then reading it is the first step). ``report(step, seconds)`` is
    called as each step ends; ``results``, when given, receives the estimates.
    """
    import statsmodels.api as sm
    from causallearn.search.ConstraintBased.PC import pc
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import KFold
    from sklearn.preprocessing import StandardScaler

    seconds: dict[str, float] = {}
    out: dict[str, Any] = {} if results is None else results
    rng = np.random.default_rng(seed)
    clock = time.perf_counter()

    def done(step: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        seconds[step] = now - clock
        if report:
            report(step, seconds[step])
        clock = time.perf_counter()

    if isinstance(frame, (str, Path)):
        frame = pd.read_csv(frame)
        done("read")

    frame.isna().sum()
    frame.nunique()
    frame.describe(include="all")
    done("profile")

    x, t, y, names = _design(frame, treatment, outcome)
    full = np.column_stack([t, y, x])
    np.corrcoef(full, rowvar=False)
    done("correlations")

    design = sm.add_constant(np.column_stack([t, x]), has_constant="add")
    ols = sm.OLS(y, design).fit(cov_type="HC1")
    out["ols"] = [float(ols.params[1]), float(ols.bse[1])]
    done("ols")

    xs = StandardScaler().fit_transform(x)
    ps = LogisticRegression(max_iter=1000).fit(xs, t).predict_proba(xs)[:, 1]
    ps = np.clip(ps, CLIP, 1 - CLIP)
    done("propensity")

    w = np.where(t == 1, 1 / ps, 1 / (1 - ps))
    ipw = np.average(y[t == 1], weights=w[t == 1]) - np.average(y[t == 0], weights=w[t == 0])
    out["ipw"] = float(ipw)
    done("ipw")

    before, after = _smd(x, t), _smd(x, t, w)
    out["max_abs_smd"] = [float(np.abs(before).max(initial=0)), float(np.abs(after).max(initial=0))]
    done("balance")

    e_hat, mu1, mu0 = np.empty_like(y), np.empty_like(y), np.empty_like(y)
    for train, test in KFold(2, shuffle=True, random_state=seed).split(x):
        xt, tt, yt = x[train], t[train], y[train]
        e_hat[test] = HistGradientBoostingClassifier(random_state=seed).fit(xt, tt).predict_proba(x[test])[:, 1]
        mu1[test] = HistGradientBoostingRegressor(random_state=seed).fit(xt[tt == 1], yt[tt == 1]).predict(x[test])
        mu0[test] = HistGradientBoostingRegressor(random_state=seed).fit(xt[tt == 0], yt[tt == 0]).predict(x[test])
    e_hat = np.clip(e_hat, CLIP, 1 - CLIP)
    psi = mu1 - mu0 + t * (y - mu1) / e_hat - (1 - t) * (y - mu0) / (1 - e_hat)
    out["aipw"] = [float(psi.mean()), float(psi.std(ddof=1) / np.sqrt(len(psi)))]
    done("aipw")

    rows = rng.choice(len(full), size=min(PC_ROWS, len(full)), replace=False)
    graph = pc(
        full[rows], alpha=0.05, indep_test="fisherz", show_progress=False, node_names=[treatment, outcome, *names]
    )
    out["pc_edges"] = int(np.count_nonzero(np.triu(graph.G.graph != 0)))
    done("pc")

    placebo = []
    for _ in range(PLACEBO_REFITS):
        design[:, 1] = rng.permutation(t)
        placebo.append(float(np.linalg.lstsq(design, y, rcond=None)[0][1]))
    out["placebo_mean"] = float(np.mean(placebo))
    done("placebo")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data")
    parser.add_argument("--treatment", "-t", required=True)
    parser.add_argument("--outcome", "-y", required=True)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    def report(step: str, seconds: float) -> None:
        print(json.dumps({"step": step, "seconds": round(seconds, 4)}), flush=True)

    results: dict[str, Any] = {}
    seconds = floor(args.data, args.treatment, args.outcome, seed=args.seed, report=report, results=results)
    print(json.dumps({"total": round(sum(seconds.values()), 4), "results": results}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
