"""Synthetic datasets with a known causal truth, for tests, benchmarks and the shipped example.

Each generator returns ``(frame, truth)``: the data and a dict holding at least ``effect`` (the
true average effect of ``treatment`` on ``outcome``), the column roles and the true graph where
one exists. Everything is seeded, so a test can assert against the truth exactly.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["linear_confounding", "job_training", "TRUE_GRAPH_LINEAR"]


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return np.asarray(1.0 / (1.0 + np.exp(-x)))


TRUE_GRAPH_LINEAR: list[tuple[str, str]] = [
    ("x1", "treated"),
    ("x2", "treated"),
    ("x1", "outcome"),
    ("x2", "outcome"),
    ("x3", "outcome"),
    ("treated", "mediator"),
    ("mediator", "outcome"),
    ("treated", "collider"),
    ("outcome", "collider"),
]
"""Edges of :func:`linear_confounding`'s graph (mediator and collider included)."""


def linear_confounding(
    n: int = 2000,
    effect: float = 2.0,
    seed: int = 0,
    *,
    strength: float = 1.0,
    with_mediator: bool = False,
    with_collider: bool = False,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Binary treatment confounded by x1 and x2; x3 affects only the outcome.

    The naive difference in means is biased upward by about ``strength * 1.6``. With
    ``with_mediator`` part of the effect flows through ``mediator`` (the total effect stays
    ``effect``); ``with_collider`` adds a common effect of treatment and outcome.
    """
    rng = np.random.default_rng(seed)
    x1 = rng.normal(size=n)
    x2 = rng.normal(size=n)
    x3 = rng.normal(size=n)
    p = _sigmoid(strength * (0.8 * x1 + 0.6 * x2))
    t = rng.binomial(1, p)
    frame = pd.DataFrame({"x1": x1, "x2": x2, "x3": x3, "treated": t})
    direct = effect
    if with_mediator:
        mediator = 0.5 * t + rng.normal(scale=0.5, size=n)
        frame["mediator"] = mediator
        direct = effect - 0.5 * 2.0
        y = direct * t + 2.0 * mediator + strength * (1.5 * x1 + 1.0 * x2) + 0.5 * x3 + rng.normal(size=n)
    else:
        y = effect * t + strength * (1.5 * x1 + 1.0 * x2) + 0.5 * x3 + rng.normal(size=n)
    frame["outcome"] = y
    if with_collider:
        frame["collider"] = 0.8 * t + 0.8 * y + rng.normal(size=n)
    truth = {
        "effect": effect,
        "treatment": "treated",
        "outcome": "outcome",
        "confounders": ["x1", "x2"],
        "outcome_only": ["x3"],
        "mediators": ["mediator"] if with_mediator else [],
        "colliders": ["collider"] if with_collider else [],
    }
    return frame, truth


def job_training(n: int = 2000, seed: int = 7) -> tuple[pd.DataFrame, dict[str, Any]]:
    """A job-training programme: who enrols depends on age, schooling and past earnings.

    The true average effect of ``training`` on ``earnings`` is 1,500 (dollars a year): 1,000
    directly and 500 through ``skills_score``, which is measured after training (a mediator):
    adjusting for it would wrongly shrink the estimate towards 1,000.
    """
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 60, size=n)
    education = np.clip(rng.normal(12, 2.5, size=n).round(), 6, 20).astype(int)
    prior = np.maximum(0, rng.normal(18000 + 900 * (education - 12) + 120 * (age - 35), 6000, size=n)).round(-1)
    married = rng.binomial(1, _sigmoid((age - 35) / 10))
    region = rng.choice(["north", "south", "east", "west"], size=n, p=[0.3, 0.3, 0.2, 0.2])
    logit = -0.4 - 0.04 * (age - 35) - 0.00008 * (prior - 18000) + 0.1 * (education - 12) + 0.3 * (region == "south")
    training = rng.binomial(1, _sigmoid(logit))
    skills = 50 + 10 * training + 2 * (education - 12) + rng.normal(0, 5, size=n)
    earnings = (
        20000
        + 1000 * training
        + 50 * (skills - 50)
        + 0.6 * (prior - 18000)
        + 400 * (education - 12)
        + 60 * (age - 35)
        + 800 * married
        + 1000 * (region == "west")
        + rng.normal(0, 3000, size=n)
    ).round(2)
    frame = pd.DataFrame(
        {
            "age": age,
            "education_years": education,
            "prior_earnings": prior,
            "married": married,
            "region": region,
            "training": training,
            "skills_score": skills.round(1),
            "earnings": earnings,
        }
    )
    truth = {
        "effect": 1500.0,
        "treatment": "training",
        "outcome": "earnings",
        "confounders": ["age", "education_years", "prior_earnings", "region"],
        "mediators": ["skills_score"],
    }
    return frame, truth
