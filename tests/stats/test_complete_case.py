"""The complete-case check for an imputed confounder (issue 26, ob02): agree -> settled, disagree -> open."""

from __future__ import annotations

import numpy as np
import pandas as pd

from whyflow.causal.diagnostics import ConfounderDiscovery
from whyflow.causal.review.complete_case import complete_case_check
from whyflow.causal.review.doubts import complete_case_settled


def _imputed(n: int, seed: int, strength: float) -> pd.DataFrame:
    """Effect 2; income confounds with ``strength``. A random quarter of it is missing, filled with the
    median and flagged, as data repair does: on those rows nothing adjusts for it."""
    rng = np.random.default_rng(seed)
    income = rng.normal(size=n)
    age = rng.normal(size=n)
    t = strength * income + 0.3 * age + rng.normal(size=n)
    y = 2.0 * t + 2 * strength * income + 0.5 * age + rng.normal(size=n)
    gone = rng.random(n) < 0.25
    observed = np.where(gone, np.nan, income)
    filled = np.where(gone, np.nanmedian(observed), observed)
    return pd.DataFrame({"t": t, "y": y, "age": age, "income": filled, "income_missing": gone.astype("int8")})


ADJUST = ["age", "income", "income_missing"]


def test_a_weak_imputed_confounder_agrees_and_is_settled() -> None:
    check = complete_case_check(_imputed(3000, 0, strength=0.1), "t", "y", ADJUST)
    assert set(check) == {"income"}
    r = check["income"]
    assert 0.2 < r["share_imputed"] < 0.3 and r["n_complete"] > 2000
    assert abs(r["without"] - 2.0) < 3 * r["se_without"]  # the complete cases recover the effect
    assert complete_case_settled(ConfounderDiscovery(complete_case=check)) == {"income"}


def test_imputation_that_moves_the_answer_stays_open() -> None:
    check = complete_case_check(_imputed(3000, 0, strength=1.5), "t", "y", ADJUST)
    r = check["income"]
    assert abs(r["without"] - 2.0) < 3 * r["se_without"]
    assert abs(r["with"] - 2.0) > 5 * r["se_with"]  # the filled median leaves a quarter of the rows confounded
    assert complete_case_settled(ConfounderDiscovery(complete_case=check)) == set()


def test_no_indicator_no_check() -> None:
    frame = _imputed(500, 1, strength=0.5)
    assert complete_case_check(frame, "t", "y", ["age", "income"]) == {}
    assert complete_case_settled(ConfounderDiscovery()) == set()
