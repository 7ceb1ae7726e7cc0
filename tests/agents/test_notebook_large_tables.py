"""The report notebook on a table larger than ``sample_rows``: figures from a seeded sample, said so.

One execution of the setup, exploration and propensity sections (a short top-level template) on
1,200 rows with ``sample_rows=500``; the helpers (the seeded sample, the propensity fitted on
it, the balance table that replaces the per-column SMD loop) are checked against plain versions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import numpy as np
import pandas as pd
import pytest

from benchmarks.synthetic import job_training
from tests.helpers import cell_stream, make_state, tagged_cell
from whyflow.flows.running.dispatch import run_single_agent

SECTIONS = """{% include "sections/00_setup.j2" %}
{% include "sections/20_eda.j2" %}
{% include "sections/50_propensity.j2" %}
"""


@pytest.fixture(scope="module")
def sampled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    job = tmp_path_factory.mktemp("job")
    frame, _ = job_training(n=1200, seed=5)
    state = make_state(frame, job, "training", "earnings")
    state.confounder_discovery = {
        "treatment": "training",
        "outcome": "earnings",
        "adjustment_set": ["age", "education_years", "prior_earnings", "married", "region"],
    }
    top = job / "short.ipynb.j2"
    top.write_text(SECTIONS)
    result = run_single_agent(
        "notebook_generator", state, job, {"template": str(top), "sample_rows": 500, "timeout": 120, "html": False}
    )
    nb = nbformat.read(state.notebook_path, as_version=4)
    return {"nb": nb, "result": result, "frame": frame}


def test_figures_of_a_large_table_are_drawn_from_a_sample_and_say_so(sampled: dict[str, Any]) -> None:
    nb = sampled["nb"]
    assert sampled["result"].outputs["execution_errors"] == []
    setup_text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "drawn from a seeded random sample" in setup_text
    dist = tagged_cell(nb, "figure-distributions")
    assert "Drawn from a random sample of 500 of the 1,200 rows, seed" in cell_stream(dist)
    assert any("image/png" in o.get("data", {}) for o in dist.outputs)
    corr = tagged_cell(nb, "figure-correlation")
    assert "Correlations of a random sample of 500 of the 1,200 rows" in cell_stream(corr)
    assert "1,200 rows x" in cell_stream(tagged_cell(nb, "setup"))
    # The propensity diagnostics fit their model on the sample and say so; every row is scored and balanced.
    ps_text = cell_stream(tagged_cell(nb, "propensity"))
    assert "Model fitted on a random sample of 500 of the 1,200 rows" in ps_text and "AUC recomputed" in ps_text
    assert "every row scored" in "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    love = tagged_cell(nb, "figure-love")
    assert any("image/png" in o.get("data", {}) for o in love.outputs)


def test_a_small_table_is_drawn_whole(tmp_path: Path) -> None:
    frame, _ = job_training(n=300, seed=1)
    state = make_state(frame, tmp_path, "training", "earnings")
    top = tmp_path / "eda.ipynb.j2"
    top.write_text('{% include "sections/00_setup.j2" %}\n{% include "sections/20_eda.j2" %}\n')
    run_single_agent("notebook_generator", state, tmp_path, {"template": str(top), "timeout": 120, "html": False})
    nb = nbformat.read(state.notebook_path, as_version=4)
    assert "sample" not in cell_stream(tagged_cell(nb, "figure-distributions"))
    assert "seeded random sample" not in "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


def _helpers(sample_rows: int = 500) -> dict[str, Any]:
    """The setup template's helper cell, executed here (the functions the cells call)."""
    from whyflow.causal.report.notebook import make_environment, render_template, split_cells

    text = render_template(
        make_environment(),
        "sections/00_setup.j2",
        {
            "has_data": True,
            "seed": 0,
            "sample_rows": sample_rows,
            "paths": {"job_dir": ".", "state_file": "s.json", "data_file": "d.parquet"},
            "dataset": {"rows": 10},
            "treatment": "training",
            "outcome": "earnings",
        },
    )
    (helpers,) = [c for c in split_cells(text) if "helpers" in c["tags"]]
    scope: dict[str, Any] = {"np": np, "pd": pd, "SEED": 0}
    exec(helpers["source"], scope)  # noqa: S102 - the template's own code
    return scope


def test_the_setup_cell_reads_the_frame_pandas_reads(tmp_path: Path) -> None:
    """The setup cell reads Parquet through Arrow (each column keeps Arrow's buffer, Arrow's spare memory is given
    back): the frame is still the one pd.read_parquet makes, whatever the column types."""
    from whyflow.causal.report.notebook import make_environment, render_template, split_cells

    frame, _ = job_training(n=300, seed=6)
    frame["region"] = frame["region"].astype("category")
    frame["note"] = np.where(frame["married"] == 1, "married", None)
    frame["score"] = frame["age"].where(frame["age"] > 30).astype("Int64")
    frame["day"] = pd.date_range("2024-01-01", periods=len(frame), freq="D", tz="UTC")
    frame.to_parquet(tmp_path / "d.parquet", index=False)
    (tmp_path / "s.json").write_text('{"job_id": "j"}')
    text = render_template(
        make_environment(),
        "sections/00_setup.j2",
        {
            "has_data": True,
            "seed": 0,
            "paths": {"job_dir": str(tmp_path), "state_file": "s.json", "data_file": "d.parquet"},
            "dataset": {"rows": len(frame)},
            "treatment": "training",
            "outcome": "earnings",
        },
    )
    (setup,) = [c for c in split_cells(text) if "setup" in c["tags"]]
    scope: dict[str, Any] = {}
    exec("\n".join(line for line in setup["source"].splitlines() if not line.startswith("%")), scope)  # noqa: S102
    pd.testing.assert_frame_equal(scope["df"], pd.read_parquet(tmp_path / "d.parquet"))


def test_balance_table_equals_the_smd_of_each_column() -> None:
    h = _helpers()
    frame, _ = job_training(n=400, seed=2)
    X = h["design_matrix"](frame, ["age", "education_years", "married", "region"])
    t = frame["training"].to_numpy()
    w = np.random.default_rng(0).uniform(0.5, 3, len(frame))
    table = h["balance_table"](X, t, w)
    assert list(table.index) == list(X.columns)
    for c in X:
        assert table.loc[c, "before weighting"] == pytest.approx(h["smd"](X[c], t), rel=1e-12, abs=1e-15)
        assert table.loc[c, "after weighting"] == pytest.approx(h["smd"](X[c], t, w), rel=1e-12, abs=1e-15)


def test_plot_sample_is_seeded_and_only_above_the_threshold() -> None:
    h = _helpers(sample_rows=500)
    small, big = pd.DataFrame({"a": range(500)}), pd.DataFrame({"a": range(2000)})
    assert h["plot_sample"](small) is small and h["sample_note"](small) == ""
    first, again = h["plot_sample"](big), h["plot_sample"](big)
    assert len(first) == 500 and first.index.equals(again.index) and first.index.is_monotonic_increasing
    assert h["sample_note"](big) == "a random sample of 500 of the 2,000 rows, seed 0"


def test_a_propensity_fitted_on_a_sample_scores_every_row() -> None:
    h = _helpers(sample_rows=500)
    frame, _ = job_training(n=1200, seed=4)
    covs = ["age", "education_years", "prior_earnings", "married", "region"]
    full = h["fit_propensity"](frame, "training", covs, seed=0)
    sampled = h["fit_propensity"](frame, "training", covs, seed=0, fit_rows=500)
    assert len(sampled) == len(frame) and ((sampled > 0) & (sampled < 1)).all()
    assert not np.allclose(sampled, full)  # a different fit ...
    assert np.corrcoef(sampled, full)[0, 1] > 0.95  # ... of the same model
    assert np.array_equal(h["fit_propensity"](frame, "training", covs, seed=0, fit_rows=5000), full)  # small: every row
