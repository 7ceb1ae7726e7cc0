"""On large data the regression adjustment is fitted a block of rows at a time, and the notebook refits it so.

The threshold (:data:`whyflow.causal.estimation.ols.BLOCKED_FROM_CELLS`, 4M cells) and the block size are lowered
so that 1,500 rows take the large-data path: the estimator records its block size, the notebook's
helpers gain ``least_squares`` (the same computation in plain NumPy), and the headline check and the
refuters' re-check use it, reproducing the run's numbers and statsmodels'.
"""

from __future__ import annotations

import re
from typing import Any

import nbformat
import pandas as pd
import pytest
import statsmodels.api as sm

from benchmarks.synthetic import job_training
from tests.helpers import cell_stream, make_state, tagged_cell
from whyflow.causal.estimation import ols
from whyflow.flows.running.dispatch import run_single_agent

SECTIONS = """{% include "sections/00_setup.j2" %}
{% include "sections/60_estimates.j2" %}
{% include "sections/70_sensitivity.j2" %}
"""
CONFOUNDERS = ["age", "education_years", "prior_earnings", "married", "region"]


@pytest.fixture(scope="module")
def blocked_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    patch = pytest.MonkeyPatch()
    patch.setattr(ols, "BLOCKED_FROM_CELLS", 1000)
    patch.setattr(ols, "BLOCK_ROWS", 256)
    try:
        job = tmp_path_factory.mktemp("job")
        frame, _ = job_training(n=1500, seed=4)
        state = make_state(frame, job, "training", "earnings")
        state.confounder_discovery = {"treatment": "training", "outcome": "earnings", "adjustment_set": CONFOUNDERS}
        run_single_agent("effect_estimator", state, job, {"methods": ["ols"]}, seed=4)
        run_single_agent("sensitivity_analyst", state, job, {"simulations": 20}, seed=4)
        (job / "state.json").write_text(state.to_json())
        top = job / "short.ipynb.j2"
        top.write_text(SECTIONS)
        result = run_single_agent(
            "notebook_generator", state, job, {"template": str(top), "timeout": 120, "html": False}
        )
        nb = nbformat.read(state.notebook_path, as_version=4)
    finally:
        patch.undo()
    return {"state": state, "nb": nb, "result": result, "frame": frame}


def test_the_estimator_fits_in_blocks_and_says_so(blocked_run: dict[str, Any]) -> None:
    (est,) = [e for e in blocked_run["state"].treatment_effects if e.details.method_key == "ols"]
    assert est.details.extras["block_rows"] == 256
    assert "a block of rows at a time" in est.details.extras["library"]
    frame = blocked_run["frame"]
    X = sm.add_constant(pd.get_dummies(frame[["training", *CONFOUNDERS]], drop_first=True, dtype=float))
    fit = sm.OLS(frame["earnings"], X).fit(cov_type="HC1")
    assert est.estimate == pytest.approx(float(fit.params["training"]), rel=1e-10)
    assert est.std_error == pytest.approx(float(fit.bse["training"]), rel=1e-10)


def test_the_notebook_refits_it_in_blocks_and_reproduces_it(blocked_run: dict[str, Any]) -> None:
    nb = blocked_run["nb"]
    assert blocked_run["result"].outputs["execution_errors"] == []
    helpers = tagged_cell(nb, "helpers")
    assert "def least_squares(y, X, column, block_rows=256):" in helpers.source
    check = tagged_cell(nb, "headline-check")
    assert "least_squares(y, X," in check.source and "sm.OLS" not in check.source
    match = re.search(r"difference (\S+) \(tolerance (\S+)\)", cell_stream(check))
    assert match and float(match.group(1)) <= 1e-9 * float(match.group(2)), cell_stream(check)
    assert "Reproduced: the estimate matches the run." in cell_stream(check)
    recheck = tagged_cell(nb, "refuter-recheck")
    assert "least_squares(y, X, 0)" in recheck.source and "lstsq" not in recheck.source
    found = re.search(r"Linear regression on ([\d,]+) rows: (\S+) \(the run's: (\S+) on", cell_stream(recheck))
    assert found and float(found.group(2)) == pytest.approx(float(found.group(3)), rel=1e-5), cell_stream(recheck)


def test_small_data_keeps_statsmodels_in_the_notebook(tmp_path: Any) -> None:
    """Below the threshold nothing changes: no helper, statsmodels' fit in the headline check."""
    frame, _ = job_training(n=400, seed=2)
    state = make_state(frame, tmp_path, "training", "earnings")
    state.confounder_discovery = {"treatment": "training", "outcome": "earnings", "adjustment_set": CONFOUNDERS}
    run_single_agent("effect_estimator", state, tmp_path, {"methods": ["ols"]}, seed=2)
    (est,) = state.treatment_effects
    assert "block_rows" not in est.details.extras
    (tmp_path / "state.json").write_text(state.to_json())
    top = tmp_path / "short.ipynb.j2"
    top.write_text(SECTIONS)
    run_single_agent("notebook_generator", state, tmp_path, {"template": str(top), "execute": False, "html": False})
    nb = nbformat.read(state.notebook_path, as_version=4)
    assert "least_squares" not in tagged_cell(nb, "helpers").source
    assert "sm.OLS(y, exog)" in tagged_cell(nb, "headline-check").source
