"""The request operations that fit a model: a directed causal effect (regression adjustment, inverse
propensity weighting, difference in means, with a bootstrap standard error) and a stated
machine-learning model with its split and metric. Sent into the sandbox as source after
:mod:`whyflow.ask.tools.request_ops_base`, so it imports nothing else of whyflow.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from whyflow.ask.tools.request_ops_base import col_numbers, numeric

__all__ = ["causal_effect", "fit_model"]


def _arm_predictions(x: np.ndarray, t: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each unit's predicted outcome treated and untreated, from one linear model per arm."""
    design = np.column_stack([np.ones(len(x)), x])
    b1, *_ = np.linalg.lstsq(design[t == 1], y[t == 1], rcond=None)
    b0, *_ = np.linalg.lstsq(design[t == 0], y[t == 0], rcond=None)
    return design @ b1, design @ b0


def _propensity(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    import statsmodels.api as sm

    fit = sm.Logit(t, sm.add_constant(x, has_constant="add")).fit(disp=0, method="bfgs", maxiter=500)
    return np.clip(fit.predict(sm.add_constant(x, has_constant="add")), 1e-3, 1 - 1e-3)


def _effect_once(x: np.ndarray, t: np.ndarray, y: np.ndarray, estimand: str, method: str) -> float:
    group = {"att": t == 1, "atc": t == 0}.get(estimand, np.ones(len(t), dtype=bool))
    if method == "difference_in_means":
        return float(y[t == 1].mean() - y[t == 0].mean())
    if method == "ipw":
        e = _propensity(x, t)
        w_base = {"att": e, "atc": 1 - e}.get(estimand, np.ones(len(t)))
        w1, w0 = w_base * t / e, w_base * (1 - t) / (1 - e)
        return float((w1 * y).sum() / w1.sum() - (w0 * y).sum() / w0.sum())
    if method == "ols":
        design = np.column_stack([np.ones(len(x)), t, x])
        beta, *_ = np.linalg.lstsq(design, y, rcond=None)
        return float(beta[1])
    mu1, mu0 = _arm_predictions(x, t, y)
    return float((mu1 - mu0)[group].mean())


def causal_effect(df: pd.DataFrame, opts: dict[str, Any]) -> dict[str, Any]:
    """The named estimand by the named method, with a bootstrap standard error."""
    cols = [opts["treatment"], opts["outcome"], *opts.get("covariates", [])]
    data = pd.concat([col_numbers(df, c) for c in cols], axis=1).dropna()
    t = data.iloc[:, 0].to_numpy(float)
    if set(np.unique(t)) - {0.0, 1.0}:
        raise ValueError(f"the treatment '{opts['treatment']}' must be 0/1")
    y, x = data.iloc[:, 1].to_numpy(float), data.iloc[:, 2:].to_numpy(float)
    estimand, method = opts.get("estimand", "ate"), opts.get("method", "regression_adjustment")
    estimate = _effect_once(x, t, y, estimand, method)
    rng = np.random.default_rng(int(opts.get("seed", 0)))
    draws = []
    for _ in range(int(opts.get("bootstrap", 200))):
        i = rng.integers(0, len(t), len(t))
        if 0 < t[i].sum() < len(i):
            draws.append(_effect_once(x[i], t[i], y[i], estimand, method))
    se = float(np.std(draws, ddof=1)) if len(draws) > 1 else float("nan")
    return {"estimate": estimate, "se": se, "n": int(len(t)), "n_treated": int(t.sum())}


def _model(opts: dict[str, Any]) -> Any:
    """The named scikit-learn estimator with the question's stated parameters."""
    from sklearn import ensemble, linear_model, neighbors, tree

    params, seed, classifier = dict(opts.get("params") or {}), int(opts.get("seed", 42)), bool(opts.get("classifier"))
    kind = opts["model"]
    if kind == "linear":
        return linear_model.LinearRegression()
    if kind == "logistic":
        return linear_model.LogisticRegression(random_state=seed, max_iter=1000, **params)
    if kind == "knn":
        return (neighbors.KNeighborsClassifier if classifier else neighbors.KNeighborsRegressor)(**params)
    family = {
        "tree": (tree.DecisionTreeClassifier, tree.DecisionTreeRegressor),
        "forest": (ensemble.RandomForestClassifier, ensemble.RandomForestRegressor),
    }[kind]
    return family[0 if classifier else 1](random_state=seed, **params)


def fit_model(df: pd.DataFrame, opts: dict[str, Any]) -> float:
    """A model's metric on the test share of a seeded split: rows without a target are dropped,
    missing numeric features take the column's mean, text features are one-hot encoded."""
    from sklearn import metrics, preprocessing
    from sklearn.model_selection import train_test_split

    target, features = opts["target"], list(opts["features"])
    data = df[df[target].notna()]
    y = (
        data[target]
        if opts.get("classifier") and not pd.api.types.is_numeric_dtype(data[target])
        else col_numbers(data, target)
    )
    parts = []
    for name in features:
        values = numeric(data[name])
        if values.notna().sum() >= 0.9 * data[name].notna().sum() and data[name].notna().any():
            parts.append(values.fillna(values.mean()).rename(name))
        else:
            parts.append(pd.get_dummies(data[name], prefix=name, dtype=float))
    x = pd.concat(parts, axis=1)
    keep = y.notna()
    x, y = x[keep], y[keep]
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=float(opts["test_size"]), random_state=int(opts.get("seed", 42))
    )
    if opts.get("scale"):
        scaler = (preprocessing.StandardScaler if opts["scale"] == "standard" else preprocessing.MinMaxScaler)()
        x_train, x_test = scaler.fit_transform(x_train), scaler.transform(x_test)
    fitted = _model(opts).fit(x_train, y_train)
    predicted = fitted.predict(x_test)
    metric = opts["metric"]
    if metric == "accuracy":
        if opts["model"] == "linear":  # a regression read as a classifier: the nearest class
            predicted = (np.asarray(predicted) >= 0.5).astype(int)
        return float(metrics.accuracy_score(y_test, predicted))
    if metric == "prediction_corr":
        return float(np.corrcoef(np.asarray(predicted, float), np.asarray(y_test, float))[0, 1])
    scores = {"mse": metrics.mean_squared_error, "mae": metrics.mean_absolute_error, "r2": metrics.r2_score}
    if metric == "rmse":
        return float(math.sqrt(metrics.mean_squared_error(y_test, predicted)))
    return float(scores[metric](y_test, predicted))
