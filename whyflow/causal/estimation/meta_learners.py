"""Meta-learners (causalml S, T, X, DR) for the average effect and a CATE summary by subgroup.

The DR-learner is our own (Kennedy 2023): it regresses the AIPW pseudo-outcome on the covariates,
reusing the cross-fitted nuisance models the AIPW estimate used (fitted once per fold), so its
average agrees with AIPW by construction and it adds the effect's heterogeneity.
LightGBM base learners run single-threaded (``n_jobs=1``: LightGBM oversubscribes inside
thread pools). Our own cross-fitted propensity scores are passed as ``p=``: causalml's default
calibrated propensity gave wildly unstable ATEs. Above ``max_rows`` the learners are fitted on
a random sample (they are the expensive part of the estimator) and say so in ``details``.
"""

from __future__ import annotations

import warnings
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from whyflow.causal.estimation.backdoor import Estimate, normal_ci
from whyflow.causal.estimation.propensity import CLIP
from whyflow.runtime.parallel import map_parts

__all__ = ["LEARNERS", "meta_learner", "dr_learner", "cate_summary"]

LEARNERS = {"S": "S-learner", "T": "T-learner", "X": "X-learner", "DR": "DR-learner"}


def _lgbm(seed: int) -> Any:
    from lightgbm import LGBMRegressor

    return LGBMRegressor(
        n_estimators=200,
        learning_rate=0.05,
        num_leaves=15,
        min_child_samples=20,
        random_state=seed,
        n_jobs=1,
        verbose=-1,
    )


def _learner(kind: str, seed: int) -> Any:
    with warnings.catch_warnings():  # causalml imports shap, which warns about matplotlib colormaps
        warnings.simplefilter("ignore", category=PendingDeprecationWarning)
        from causalml.inference.meta import BaseDRRegressor, BaseSRegressor, BaseTRegressor, BaseXRegressor

    cls = {"S": BaseSRegressor, "T": BaseTRegressor, "X": BaseXRegressor, "DR": BaseDRRegressor}[kind]
    return cls(learner=_lgbm(seed))


def _keep_effects(model: Any) -> list[np.ndarray]:
    """The unit-level effects ``estimate_ate`` computes (its ``fit_predict``), kept for the CATE summary.

    ``estimate_ate`` fits the learner on the rows and predicts their effects, then returns only
    the average: predicting the same rows again for the summary cost a second pass of every
    tree over them (0.45 s of LightGBM at 20,000 rows for S, T and X). The kept array is that
    prediction, the one ``predict`` gives on the same rows.
    """
    kept: list[np.ndarray] = []
    fit_predict = model.fit_predict

    def keeping(*args: Any, **kwargs: Any) -> Any:
        out = fit_predict(*args, **kwargs)
        kept.append(np.asarray(out[0] if isinstance(out, tuple) else out))
        return out

    model.fit_predict = keeping
    return kept


def cate_summary(cate: np.ndarray, X: pd.DataFrame) -> tuple[str | None, dict[str, dict[str, Any]]]:
    """Mean CATE by subgroup of the covariate most associated with the predicted CATE.

    Continuous modifiers are cut at their quartiles; binary ones split by value.
    """
    if X.shape[1] == 0 or np.std(cate) == 0:
        return None, {}
    corr = {c: abs(np.corrcoef(X[c].to_numpy(dtype=float), cate)[0, 1]) for c in X.columns if X[c].std() > 0}
    corr = {c: v for c, v in corr.items() if np.isfinite(v)}
    if not corr:
        return None, {}
    mod = max(corr, key=lambda c: corr[c])
    x = X[mod].to_numpy(dtype=float)
    out: dict[str, dict[str, Any]] = {}
    if len(np.unique(x)) <= 2:
        for v in np.unique(x):
            mask = x == v
            out[f"{mod} = {v:g}"] = {"estimate": round(float(cate[mask].mean()), 4), "n": int(mask.sum())}
        return mod, out
    edges = np.quantile(x, [0, 0.25, 0.5, 0.75, 1.0])
    q = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, 3)
    for k in range(4):
        mask = q == k
        label = f"{mod} Q{k + 1} [{edges[k]:.3g}, {edges[k + 1]:.3g}]"
        out[label] = {"estimate": round(float(cate[mask].mean()), 4), "n": int(mask.sum()), "quartile": k + 1}
    return mod, out


def meta_learner(
    kind: str, X: pd.DataFrame, y: np.ndarray, t: np.ndarray, ps: np.ndarray, seed: int = 0, max_rows: int = 20000
) -> Estimate:
    """ATE and CATE summary from one causalml meta-learner (S, T, X or DR)."""
    rng = np.random.default_rng(seed)
    n = len(y)
    idx = np.sort(rng.choice(n, size=max_rows, replace=False)) if n > max_rows else np.arange(n)
    Xs, ys, ts = X.iloc[idx].to_numpy(dtype=float), y[idx], t[idx].astype(int)  # no float copy of every row
    ps_s = np.clip(ps[idx], CLIP, 1 - CLIP)
    model = _learner(kind, seed)
    fitted = _keep_effects(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=FutureWarning)
        warnings.simplefilter("ignore", category=UserWarning)
        if kind == "S":
            ate, lb, ub = model.estimate_ate(Xs, ts, ys, return_ci=True)
        elif kind == "DR":
            ate, lb, ub = model.estimate_ate(Xs, ts, ys, p=ps_s, seed=seed)
        elif kind == "X":
            ate, lb, ub = model.estimate_ate(Xs, ts, ys, p=ps_s)
        else:
            ate, lb, ub = model.estimate_ate(Xs, ts, ys)
    cate = fitted[-1] if fitted else model.predict(Xs, p=ps_s) if kind == "X" else model.predict(Xs)
    est = float(np.ravel(ate)[0])
    se = float((np.ravel(ub)[0] - np.ravel(lb)[0]) / (2 * 1.959963984540054))
    ci, p = normal_ci(est, se)
    modifier, summary = cate_summary(np.ravel(cate), X.iloc[idx].reset_index(drop=True))
    details: dict[str, Any] = {
        "learner": "lightgbm (n_jobs=1)",
        "library": f"causalml Base{kind}Regressor",
        "se_method": "causalml analytic approximation (in-sample residuals; may be optimistic)",
        "cate_summary": summary,
        "cate_modifier": modifier,
        "cate_sd": round(float(np.std(cate)), 4),
        "propensity": "our cross-fitted scores passed as p" if kind in ("X", "DR") else "not used",
    }
    if n > max_rows:
        details["sampled_rows"] = int(max_rows)
        details["sampling_note"] = f"fitted on a random sample of {max_rows} of {n} rows to bound run time"
    return Estimate(
        f"{LEARNERS[kind]} (causalml)",
        "ATE",
        est,
        se,
        ci,
        p,
        ["no unmeasured confounding given the adjustment set", "positivity / overlap of propensity scores"],
        details,
    )


DR_FIT_ROWS = 50_000
"""Most training rows for each fold's CATE model; above it a seeded sample of the fold's rows is used.

The CATE model only summarises heterogeneity (the estimate's SE is the pseudo-outcome's, from
every row), and 100 boosted trees (leaves of at least 50 rows) on 50,000 rows describe it as well
as on 800,000: at 1M rows the full fits took 24 of the estimator's 48 seconds, at 100k rows 3.3 of 5.6.
"""


def _dr_train_rows(train: np.ndarray, seed: int, k: int) -> np.ndarray:
    """The fold's training rows, or a seeded sorted sample of :data:`DR_FIT_ROWS` of them."""
    if len(train) <= DR_FIT_ROWS:
        return train
    rng = np.random.default_rng([seed, k])
    return np.sort(rng.choice(train, size=DR_FIT_ROWS, replace=False))


def _dr_part(Xv: np.ndarray, phi: np.ndarray, splits: list[Any], seed: int, k: int) -> np.ndarray:
    """The CATE model of one fold: LightGBM on the pseudo-outcome of the other folds (seeded by ``seed``)."""
    train, test = splits[k]
    train = _dr_train_rows(train, seed, k)
    model = _lgbm(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        model.set_params(min_child_samples=50, n_estimators=100)
        model.fit(Xv[train], phi[train])
        return np.asarray(model.predict(Xv[test]), dtype=float)


def dr_learner(X: pd.DataFrame, y: np.ndarray, t: np.ndarray, ps: np.ndarray, nuisance: Any, seed: int = 0) -> Estimate:
    """DR-learner: cross-fitted regression of the AIPW pseudo-outcome on X, sharing AIPW's nuisances.

    The average effect is the mean of the cross-fitted CATEs; its standard error is that of the
    pseudo-outcome's mean (the AIPW influence function).
    """
    from sklearn.model_selection import KFold

    from whyflow.causal.estimation.nuisance import aipw_scores

    phi = aipw_scores(nuisance, y, t, ps)
    Xv = X.to_numpy(dtype=float)
    splits = list(KFold(nuisance.folds, shuffle=True, random_state=seed).split(Xv))
    cate = np.empty(len(y))
    parts = map_parts(partial(_dr_part, Xv, phi, splits, seed), range(len(splits)), name="dr-learner-fold")
    for (_, test), pred in zip(splits, parts, strict=True):
        cate[test] = pred
    est = float(cate.mean())
    se = float(phi.std(ddof=1) / np.sqrt(len(y)))
    ci, p = normal_ci(est, se)
    modifier, summary = cate_summary(cate, X)  # reads columns as arrays: no copy of the frame
    fit_rows = max(len(_dr_train_rows(train, seed, k)) for k, (train, _) in enumerate(splits))
    sampled = (
        {
            "sampled_rows": fit_rows,
            "sampling_note": f"each fold's CATE model fitted on a random {fit_rows:,} of its training rows "
            "(predicted for every row; the SE uses every row)",
        }
        if any(len(train) > DR_FIT_ROWS for train, _ in splits)
        else {}
    )
    return Estimate(
        "DR-learner (cross-fitted)",
        "ATE",
        est,
        se,
        ci,
        p,
        ["no unmeasured confounding given the adjustment set", "positivity / overlap of propensity scores"],
        {
            "learner": "lightgbm on the AIPW pseudo-outcome, cross-fitted",
            "se_method": "influence function of the pseudo-outcome (as AIPW)",
            "shares_nuisance_with": "aipw",
            "nuisance_models": dict(nuisance.choice),
            "crossfit_folds": nuisance.folds,
            "cate_summary": summary,
            "cate_modifier": modifier,
            "cate_sd": round(float(np.std(cate)), 4),
            "propensity": "the shared cross-fitted propensity",
            **sampled,
        },
    )
