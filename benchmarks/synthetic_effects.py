"""Synthetic datasets with a known effect for the estimation agents' tests and benchmark.

Each generator returns ``(frame, truth)`` like :mod:`benchmarks.synthetic`: ``truth`` holds
``effect`` (the true average effect the scenario's estimand targets), the column roles and
anything a test needs to check (true subgroup effects, the design facts to declare).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from benchmarks.synthetic import linear_confounding

__all__ = [
    "linear_confounding",
    "nonlinear_heterogeneous",
    "poor_overlap",
    "instrument_confounded",
    "panel_did",
    "sharp_rdd",
    "null_effect",
    "derived_treatment",
    "SCENARIOS",
]


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return np.asarray(1.0 / (1.0 + np.exp(-x)))


def nonlinear_heterogeneous(n: int = 3000, seed: int = 1) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Nonlinear confounding and an effect that grows with ``x1``: tau(x) = 1 + x1.

    The propensity is logistic in the covariates; the outcome surface is nonlinear (sine and
    square terms), so a linear outcome model is misspecified. True ATE = E[1 + x1] = 1; the true
    effect in x1's quartiles increases from about -0.27 to 2.27.
    """
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4))
    x1, x2, x3, x4 = x.T
    p = _sigmoid(0.6 * x1 - 0.6 * x2 + 0.4 * x3)
    t = rng.binomial(1, p)
    tau = 1.0 + x1
    mu0 = 1.5 * np.sin(2 * x2) + 0.7 * x3**2 + x1 + 0.5 * x4
    y = mu0 + tau * t + rng.normal(size=n)
    frame = pd.DataFrame({"x1": x1, "x2": x2, "x3": x3, "x4": x4, "treated": t, "outcome": y})
    quartile = pd.qcut(x1, 4, labels=False)
    truth = {
        "effect": 1.0,
        "treatment": "treated",
        "outcome": "outcome",
        "confounders": ["x1", "x2", "x3"],
        "effect_modifier": "x1",
        "cate_by_quartile": [float(tau[quartile == q].mean()) for q in range(4)],
    }
    return frame, truth


def poor_overlap(n: int = 3000, seed: int = 2, effect: float = 2.0) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Treatment determined by ``x1`` outside [-0.8, 0.8]: about 42% of units lack overlap."""
    rng = np.random.default_rng(seed)
    x1 = rng.normal(size=n)
    x2 = rng.normal(size=n)
    p = np.where(x1 > 0.8, 1.0, np.where(x1 < -0.8, 0.0, _sigmoid(2.0 * x1 + 0.3 * x2)))
    t = rng.binomial(1, p)
    y = effect * t + 1.5 * x1 + x2 + rng.normal(size=n)
    frame = pd.DataFrame({"x1": x1, "x2": x2, "treated": t, "outcome": y})
    truth = {"effect": effect, "treatment": "treated", "outcome": "outcome", "confounders": ["x1", "x2"]}
    return frame, truth


def instrument_confounded(n: int = 3000, seed: int = 3, effect: float = 2.0) -> tuple[pd.DataFrame, dict[str, Any]]:
    """A randomised encouragement ``z`` and an unobserved confounder ``u`` (not in the frame).

    The effect is constant, so the LATE equals ``effect``; OLS adjusting for ``x`` is biased
    upward because ``u`` raises both treatment take-up and the outcome.
    """
    rng = np.random.default_rng(seed)
    z = rng.binomial(1, 0.5, size=n)
    u = rng.normal(size=n)
    x = rng.normal(size=n)
    t = (-0.6 + 1.4 * z + 1.0 * u + 0.4 * x + rng.normal(scale=0.5, size=n) > 0).astype(int)
    y = effect * t + 2.0 * u + 1.0 * x + rng.normal(size=n)
    frame = pd.DataFrame({"z": z, "x": x, "treated": t, "outcome": y})
    truth = {
        "effect": effect,
        "treatment": "treated",
        "outcome": "outcome",
        "instrument": "z",
        "confounders": ["x"],
        "unobserved": ["u"],
    }
    return frame, truth


def panel_did(
    n_units: int = 300, n_periods: int = 8, seed: int = 4, effect: float = 1.5
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Units in two groups; the treated group (higher baseline) is treated from mid-panel on.

    Unit and period effects confound a cross-sectional comparison; parallel trends hold, so
    two-way fixed effects recover ``effect``.
    """
    rng = np.random.default_rng(seed)
    group = rng.binomial(1, 0.5, size=n_units)
    alpha = rng.normal(size=n_units) + 2.0 * group
    gamma = np.linspace(0, 2, n_periods) + rng.normal(scale=0.2, size=n_periods)
    unit = np.repeat(np.arange(n_units), n_periods)
    period = np.tile(np.arange(n_periods), n_units)
    post = (period >= n_periods // 2).astype(int)
    d = group[unit] * post
    y = alpha[unit] + gamma[period] + effect * d + rng.normal(size=unit.size)
    frame = pd.DataFrame({"unit": unit, "period": period, "treated": d, "outcome": y})
    truth = {
        "effect": effect,
        "treatment": "treated",
        "outcome": "outcome",
        "unit_column": "unit",
        "time_column": "period",
    }
    return frame, truth


def sharp_rdd(
    n: int = 3000, seed: int = 5, effect: float = 1.5, cutoff: float = 0.0
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Treatment is 1 exactly when ``score`` >= ``cutoff``; the outcome is smooth in the score."""
    rng = np.random.default_rng(seed)
    score = rng.uniform(-1, 1, size=n) + cutoff
    s = score - cutoff
    t = (s >= 0).astype(int)
    w = rng.normal(size=n)
    y = 1.0 + 0.8 * s + 0.6 * s**2 + effect * t + 0.5 * w + rng.normal(scale=0.5, size=n)
    frame = pd.DataFrame({"score": score, "w": w, "treated": t, "outcome": y})
    truth = {
        "effect": effect,
        "treatment": "treated",
        "outcome": "outcome",
        "running_variable": "score",
        "cutoff": cutoff,
    }
    return frame, truth


def null_effect(n: int = 3000, seed: int = 6) -> tuple[pd.DataFrame, dict[str, Any]]:
    """No effect at all, strongly confounded (the naive difference is far from zero)."""
    return linear_confounding(n=n, effect=0.0, seed=seed, strength=2.0)


def derived_treatment(n: int = 3000, seed: int = 8) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Linear confounding plus ``treated_label``, a deterministic relabelling of the treatment.

    Adjusting for it would make the arms perfectly separable; it must be excluded. Also holds a
    mediator (``mediator``), which must never be adjusted for.
    """
    frame, truth = linear_confounding(n=n, seed=seed, with_mediator=True)
    frame["treated_label"] = np.where(frame["treated"] == 1, "programme", "none")
    truth["derived_from_treatment"] = ["treated_label"]
    return frame, truth


SCENARIOS: dict[str, Any] = {
    "linear_confounding": lambda n, seed: linear_confounding(n=n, seed=seed),
    "nonlinear_heterogeneous": lambda n, seed: nonlinear_heterogeneous(n=n, seed=seed),
    "poor_overlap": lambda n, seed: poor_overlap(n=n, seed=seed),
    "instrument": lambda n, seed: instrument_confounded(n=n, seed=seed),
    "panel_did": lambda n, seed: panel_did(n_units=max(n // 8, 20), seed=seed),
    "sharp_rdd": lambda n, seed: sharp_rdd(n=n, seed=seed),
    "null_effect": lambda n, seed: null_effect(n=n, seed=seed),
}
"""Scenario name -> ``(n, seed) -> (frame, truth)`` for the benchmark."""
