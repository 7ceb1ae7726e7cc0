"""Near-copies of an instrumented treatment are not IV controls (issue 26: iv04, iv05, iv10)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.truth_kinds import make
from tests.helpers import make_state
from whyflow.causal.discovery.iv_controls import first_stage_absorbed, iv_treatment_copies
from whyflow.causal.estimation.designs_iv import iv_2sls
from whyflow.causal.state import StudyDesign
from whyflow.flows.running.dispatch import run_single_agent


def _fit(frame: pd.DataFrame, controls: list[str]) -> tuple[float, float, float]:
    e = iv_2sls(frame["lwage"], frame["educ"], frame["near_college"], frame[controls], "near_college", "educ")
    return e.estimate, e.ci[0], e.ci[1]


def test_the_reported_treatment_is_a_near_copy_and_leaving_it_out_is_right() -> None:
    case = make("iv_treatment_copy", seed=0, n=2000)
    f = case.frame
    roles = iv_treatment_copies(f, "educ", "near_college", ["exper", "educ_reported"])
    assert [r.column for r in roles] == ["educ_reported"]
    assert roles[0].role == "treatment_copy" and "absorbs" in roles[0].reason
    # why: with it the 2SLS interval excludes the truth (negative), without it the interval covers it
    _, lo, hi = _fit(f, ["exper", "educ_reported"])
    assert hi < case.effect
    _, lo, hi = _fit(f, ["exper"])
    assert lo <= case.effect <= hi


def test_a_source_of_the_instrument_and_a_confounder_are_kept() -> None:
    """A column the instrument is made from absorbs the first stage too, but is closer to the instrument
    than to the treatment; a confounder far from the treatment is not a near-copy. Both stay (the review's
    absorbed-controls doubt judges the first: only the design can say whether it also confounds)."""
    rng = np.random.default_rng(1)
    n = 2000
    source = rng.normal(size=n)
    z = source + 0.3 * rng.normal(size=n)
    poor = rng.normal(size=n)
    t = z + 0.3 * poor + 0.3 * rng.normal(size=n)
    f = pd.DataFrame({"source": source, "z": z, "poor": poor, "t": t})
    assert first_stage_absorbed(t, z, source) > 0.5 and f["source"].corr(f["t"]) > 0.85
    assert iv_treatment_copies(f, "t", "z", ["source", "poor"]) == []


def test_discovery_leaves_the_copy_out_only_with_a_declared_instrument(tmp_path: Path) -> None:
    case = make("iv_treatment_copy", seed=1, n=1500)
    state = make_state(case.frame, tmp_path / "iv", "educ", "lwage")
    state.design = StudyDesign(instrument="near_college")
    run_single_agent("confounder_discovery", state, tmp_path / "iv")
    out = state.confounder_discovery
    assert out is not None
    assert "educ_reported" not in out.adjustment_set and "exper" in out.adjustment_set
    row = next(r for r in out.column_roles if r.column == "educ_reported")
    assert row.role == "treatment_copy" and "instrument's first stage" in row.reason
    state = make_state(case.frame, tmp_path / "plain", "educ", "lwage")  # no design: the 0.98 rule only
    run_single_agent("confounder_discovery", state, tmp_path / "plain")
    assert state.confounder_discovery is not None
    rows = state.confounder_discovery.column_roles
    assert not any(r.column == "educ_reported" and r.role == "treatment_copy" for r in rows)
