"""The report notebook: rendered from templates, executed, reproducing the run's headline.

Two notebook executions in all: a real analysis of the job-training data (OLS fitted here with
statsmodels, marked headline, then the sensitivity analyst's refuters) with a user section
override, and a minimal state with a planted failing cell, run in a worker thread as a threaded
Prefect runner would.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import nbformat
import pandas as pd
import pytest

from benchmarks.synthetic import job_training
from tests.factories import make_estimate
from tests.helpers import basic_profile, make_state
from whyflow.causal.estimates import Trimming
from whyflow.causal.report.context import build_context
from whyflow.causal.report.notebook import fmt_num, split_cells
from whyflow.causal.report.notebook_generator import NotebookGeneratorAgent
from whyflow.causal.state import AnalysisState, CausalDAG, CausalEdge, DatasetInfo, TreatmentEffectResult
from whyflow.core.errors import AgentError
from whyflow.core.view import StateView
from whyflow.flows.running.dispatch import run_single_agent

CONFOUNDERS = ["age", "education_years", "prior_earnings", "married", "region"]

USER_SECTION = """{% extends "builtin/sections/80_critique.j2" %}
{% from "macros.j2" import markdown %}
{% block critique %}
{{ super() }}
{% call markdown() %}
## Notes from our team
USER-SECTION-MARKER
{% endcall %}
{% endblock %}
"""

FAILING_SECTION = """{% from "macros.j2" import markdown, code %}
{% call code() %}
raise ValueError("planted failure")
{% endcall %}
"""


def _ols(frame: pd.DataFrame, adjust: list[str]) -> Any:
    import statsmodels.api as sm

    X = sm.add_constant(pd.get_dummies(frame[["training", *adjust]], drop_first=True, dtype=float))
    return sm.OLS(frame["earnings"], X).fit(cov_type="HC1")


def _effect(fit: Any, method: str, adjust: list[str], n: int, **details: Any) -> TreatmentEffectResult:
    """An OLS fit as the estimator reports it (through the one test factory)."""
    lo, hi = fit.conf_int().loc["training"]
    key = "naive" if "naive" in method else "ols"
    return make_estimate(
        key,
        float(fit.params["training"]),
        float(fit.bse["training"]),
        label=method,
        ci=(float(lo), float(hi)),
        treatment="training",
        outcome="earnings",
        adjustment_set=adjust,
        n_used=n,
        se_method="HC1 robust (statsmodels)" if key == "ols" else "Welch",
        **details,
    )


def _stream(cell: Any) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


def _tagged(nb: Any, tag: str) -> list[Any]:
    return [c for c in nb.cells if tag in c.metadata.get("tags", [])]


@pytest.fixture(scope="module")
def analysis(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A real small analysis, reported with a user template folder overriding one section."""
    job = tmp_path_factory.mktemp("job")
    frame, truth = job_training(n=1000, seed=3)
    state = make_state(frame, job, "training", "earnings")
    adjusted = _ols(frame, CONFOUNDERS)
    state.treatment_effects = [
        _effect(_ols(frame, []), "naive_difference", [], len(frame)),
        _effect(
            adjusted, "ols", CONFOUNDERS, len(frame), headline=True, headline_reason="regression on the back-door set"
        ),
    ]
    edges = [(c, "training") for c in CONFOUNDERS[:3]] + [(c, "earnings") for c in CONFOUNDERS]
    edges += [("training", "skills_score"), ("skills_score", "earnings"), ("training", "earnings")]
    state.proposed_dag = CausalDAG(
        nodes=list(frame.columns),
        discovery_method="test graph",
        edges=[CausalEdge(source=s, target=t, confidence=0.8) for s, t in edges]
        + [CausalEdge(source="married", target="age", edge_type="undirected", confidence=0.3)],
    )
    state.confounder_discovery = {
        "treatment": "training",
        "outcome": "earnings",
        "adjustment_set": CONFOUNDERS,
        "mediators": ["skills_score"],
        "excluded": {"skills_score": "mediator"},
    }
    run_single_agent("sensitivity_analyst", state, job, {"simulations": 20}, seed=3)  # the refuters the notebook shows
    (job / "state.json").write_text(state.to_json())  # what the runner persists before this step
    user = job / "my_templates" / "sections"
    user.mkdir(parents=True)
    (user / "80_critique.j2").write_text(USER_SECTION)
    result = run_single_agent(
        "notebook_generator", state, job, {"template_dir": str(job / "my_templates"), "timeout": 120}
    )
    nb = nbformat.read(state.notebook_path, as_version=4)
    return {"job": job, "state": state, "result": result, "nb": nb, "truth": truth, "fit": adjusted}


def test_notebook_executes_without_error_cells(analysis: dict[str, Any]) -> None:
    nb, result = analysis["nb"], analysis["result"]
    assert analysis["state"].notebook_path == str(analysis["job"] / "report.ipynb")
    assert result.outputs["execution_errors"] == []
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert errors == []
    assert all(c.get("execution_count") for c in nb.cells if c.cell_type == "code")
    assert result.outputs["state_file"] == "state.json"


def test_recomputed_headline_matches_state_json(analysis: dict[str, Any]) -> None:
    (cell,) = _tagged(analysis["nb"], "headline-check")
    text = _stream(cell)
    match = re.search(r"Recomputed estimate: (\S+) \| state: (\S+)", text)
    assert match, text
    recomputed, stored = float(match.group(1)), float(match.group(2))
    headline = analysis["state"].treatment_effects[1]
    assert stored == pytest.approx(headline.estimate, rel=1e-8)
    assert recomputed == pytest.approx(headline.estimate, rel=1e-6)
    assert "Reproduced:" in text and analysis["result"].outputs["reproduced"] is True
    # The report's headline is a correct answer: the true 1,500 lies in its interval, the naive one is biased.
    assert headline.ci_lower <= analysis["truth"]["effect"] <= headline.ci_upper
    naive = analysis["state"].treatment_effects[0]
    assert not naive.ci_lower <= analysis["truth"]["effect"] <= naive.ci_upper


def _run_cells(nb: Any, *tags: str) -> dict[str, Any]:
    """The code cells tagged with any of ``tags``, run here in one namespace (IPython magics dropped); the namespace."""
    scope: dict[str, Any] = {"display": lambda *objects: None}
    for cell in nb.cells:
        if cell.cell_type == "code" and set(tags) & set(cell.metadata.get("tags", [])):
            exec("\n".join(line for line in cell.source.splitlines() if not line.startswith("%")), scope)  # noqa: S102
    return scope


def test_the_headline_check_reproduces_the_run_exactly_and_lets_its_copies_go(analysis: dict[str, Any]) -> None:
    """The OLS is refitted as the run fitted it (a difference of exactly 0); the design array and statsmodels'
    results, which hold several copies of the rows (most of a million-row report's memory), are not kept."""
    (cell,) = _tagged(analysis["nb"], "headline-check")
    assert "| difference 0 (tolerance" in _stream(cell)
    scope = _run_cells(analysis["nb"], "setup", "helpers", "headline-check")
    headline = analysis["state"].treatment_effects[1]
    assert (scope["estimate"], scope["se"]) == (headline.estimate, headline.std_error)
    assert not {"X", "exog", "fit"} & scope.keys()


def test_a_collinear_adjustment_set_is_checked_at_a_hundredth_of_a_standard_error(
    analysis: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """With a column that is an exact combination of others the least-squares solution is not unique."""
    scope = _run_cells(analysis["nb"], "setup", "helpers")
    scope["df"]["age_twice"] = 2 * scope["df"]["age"]
    (cell,) = _tagged(analysis["nb"], "headline-check")
    source = cell.source.replace("ADJUSTMENT = [", "ADJUSTMENT = ['age_twice', ", 1)
    assert "age_twice" in source
    exec("\n".join(line for line in source.splitlines() if not line.startswith("%")), scope)  # noqa: S102
    out = capsys.readouterr().out
    assert scope["deficient"] and "not unique" in out and "Reproduced:" in out
    headline = analysis["state"].treatment_effects[1]
    assert abs(scope["estimate"] - headline.estimate) <= 0.01 * headline.std_error


def test_every_applicable_figure_is_drawn(analysis: dict[str, Any]) -> None:
    nb = analysis["nb"]
    for tag in (
        "figure-distributions",
        "figure-correlation",
        "figure-dag",
        "figure-overlap",
        "figure-love",
        "figure-forest",
        "refuters",
    ):
        cells = _tagged(nb, tag)
        assert cells, f"no cell tagged {tag}"
        pngs = [o for c in cells for o in c.outputs if "image/png" in o.get("data", {})]
        assert pngs, f"cell {tag} drew no figure"
    (refuters,) = _tagged(nb, "refuters")
    html = next(o.data["text/html"] for o in refuters.outputs if "text/html" in o.get("data", {}))
    assert "placebo treatment" in html


def test_refuter_table_shows_the_runs_numbers_without_refitting(analysis: dict[str, Any]) -> None:
    """The refuters cell embeds the state's results; one labelled cell re-checks with one OLS pair."""
    state, nb = analysis["state"], analysis["nb"]
    (refuters,) = _tagged(nb, "refuters")
    assert "refute_estimate" not in refuters.source and "dowhy" not in refuters.source.lower()
    flat = {r.method: {**r.details.extras, "passed": r.details.passed} for r in state.sensitivity_results}
    for method in ("placebo_treatment", "random_common_cause", "data_subset"):
        assert repr(flat[method]["new_effect"]) in refuters.source, method  # the run's number, as a literal
        assert repr(flat[method]["p_value"]) in refuters.source, method
    assert repr(flat["unobserved_common_cause"]["new_effects"][-1][-1]) in refuters.source
    grid_table = [o.data["text/html"] for o in refuters.outputs if "text/html" in o.get("data", {})][-1]
    assert "share of training flipped" in grid_table
    (recheck,) = _tagged(nb, "refuter-recheck")
    match = re.search(
        r"Linear regression on ([\d,]+) rows: (\S+) \(the run's: (\S+) on ([\d,]+) rows\)", _stream(recheck)
    )
    assert match, _stream(recheck)
    assert float(match.group(2)) == pytest.approx(float(match.group(3)), rel=1e-5)  # same rows: the same regression
    assert "permuted once" in _stream(recheck)
    cells = [c for c in nb.cells if c.cell_type == "code"]
    assert not any("refute_estimate" in c.source for c in cells)  # no cell reruns DoWhy's refuters


def test_html_contains_the_headline(analysis: dict[str, Any]) -> None:
    html_path = analysis["job"] / "report.html"
    assert html_path.exists()
    html = html_path.read_text()
    headline = analysis["state"].treatment_effects[1]
    assert f"raised <code>earnings</code> by about {fmt_num(headline.estimate)}" in html
    assert f"95% CI {fmt_num(headline.ci_lower)} to {fmt_num(headline.ci_upper)}" in html
    assert "data:image/png;base64" in html


def test_warmed_html_exporter_writes_the_same_page(analysis: dict[str, Any], tmp_path: Path) -> None:
    """The agent warms its exporter on a thread while the kernel runs: the page is a fresh exporter's."""
    from whyflow.causal.report.notebook import export_html, html_exporter

    nb = nbformat.read(analysis["job"] / "report.ipynb", as_version=4)
    fresh = export_html(nb, tmp_path / "fresh.html").read_text()
    warmed = export_html(nb, tmp_path / "warm.html", html_exporter(warm=True)).read_text()
    assert warmed == fresh == (analysis["job"] / "report.html").read_text()


def test_user_section_override_is_used(analysis: dict[str, Any]) -> None:
    sources = [c.source for c in analysis["nb"].cells]
    assert any("USER-SECTION-MARKER" in s for s in sources)
    assert any(s.startswith("## Provenance") for s in sources)  # the other sections are still built in


def _minimal_state(tmp_path: Path) -> AnalysisState:
    frame, _ = job_training(n=300, seed=1)
    return AnalysisState(
        job_id="minimal",
        dataset_info=DatasetInfo(url="memory://jobs.csv", name="jobs"),
        data_profile=basic_profile(frame),
    )


def test_execution_error_keeps_notebook_and_is_reported(tmp_path: Path) -> None:
    state = _minimal_state(tmp_path)
    user = tmp_path / "tpl" / "sections"
    user.mkdir(parents=True)
    (user / "90_recommendations.j2").write_text(FAILING_SECTION)
    params = {"template_dir": str(tmp_path / "tpl"), "timeout": 60}
    with ThreadPoolExecutor(1) as pool:  # as Prefect's thread runner would call it
        result = pool.submit(run_single_agent, "notebook_generator", state, tmp_path / "job", params).result()
    nb = nbformat.read(state.notebook_path, as_version=4)
    (error,) = result.outputs["execution_errors"]
    assert error["ename"] == "ValueError" and "planted failure" in error["evalue"]
    assert nb.cells[error["cell"]].source.startswith("raise ValueError")
    assert "failed" in result.summary and "ValueError" in result.reasoning
    assert nb.cells[-1].metadata.get("tags") == ["provenance"]  # every cell kept, later ones executed
    assert nb.cells[-1].outputs and (tmp_path / "job" / "report.html").exists()


PROBE = """{% from "macros.j2" import code %}
{% call code() %}
import os
import sys
print("probe", os.getpid(), "pandas" in sys.modules, "pd" in dir(), "_whyflow_module" in dir())
{% endcall %}
"""


def test_a_kernel_warmed_when_the_run_starts_is_the_one_the_notebook_runs_in(tmp_path: Path) -> None:
    """The kernel started by warm_up (in the flow's thread) runs the notebook (in a task's thread),
    with the report's libraries already imported and no name left defined by the warm-up."""
    from whyflow.causal.report.notebook_generator import NotebookGeneratorAgent
    from whyflow.runtime.children import kernel_processes

    top = tmp_path / "probe.ipynb.j2"
    top.write_text(PROBE)
    params = NotebookGeneratorAgent.Params(template=str(top), html=False, timeout=60)
    release = NotebookGeneratorAgent.warm_up(params, tmp_path / "job")
    assert release is not None
    (warm_pid,) = kernel_processes()
    state = _minimal_state(tmp_path)
    with ThreadPoolExecutor(1) as pool:  # as Prefect's thread runner would call it
        result = pool.submit(run_single_agent, "notebook_generator", state, tmp_path / "job", params).result()
    release()  # already taken: nothing left to do
    nb = nbformat.read(state.notebook_path, as_version=4)
    assert result.outputs["warm_kernel"] is True and result.outputs["execution_errors"] == []
    assert _stream(nb.cells[0]).split() == ["probe", str(warm_pid), "True", "False", "False"]
    assert kernel_processes() == []


def test_a_warm_kernel_the_run_never_uses_is_shut_down(tmp_path: Path) -> None:
    from whyflow.causal.report.notebook_generator import NotebookGeneratorAgent
    from whyflow.runtime.children import kernel_processes

    assert NotebookGeneratorAgent.warm_up(NotebookGeneratorAgent.Params(execute=False), tmp_path) is None
    release = NotebookGeneratorAgent.warm_up(NotebookGeneratorAgent.Params(), tmp_path)
    assert release is not None and len(kernel_processes()) == 1
    release()
    assert kernel_processes() == []


def test_minimal_state_renders_without_execution(tmp_path: Path) -> None:
    state = _minimal_state(tmp_path)
    result = run_single_agent("notebook_generator", state, tmp_path, {"execute": False, "html": False})
    nb = nbformat.read(state.notebook_path, as_version=4)
    text = "\n".join(c.source for c in nb.cells)
    assert nb.cells[0].source.startswith("# Data report: jobs")
    assert "## 6. The estimated effect" not in text and "headline-check" not in str(nb)
    assert "300 rows" in text and "not executed" in result.summary


def test_recipe_can_replace_the_top_level_template(tmp_path: Path) -> None:
    top = tmp_path / "short.ipynb.j2"
    top.write_text('{% include "sections/00_setup.j2" %}\n{% include "sections/99_provenance.j2" %}\n')
    state = _minimal_state(tmp_path)
    run_single_agent(
        "notebook_generator", state, tmp_path / "job", {"template": str(top), "execute": False, "html": False}
    )
    nb = nbformat.read(state.notebook_path, as_version=4)
    heads = [c.source.splitlines()[0] for c in nb.cells if c.cell_type == "markdown"]
    assert heads == ["# Data report: jobs", "## Setup", "## Provenance"]


def test_text_outside_a_cell_is_a_template_error() -> None:
    with pytest.raises(AgentError, match="outside a cell at rendered line 4"):
        split_cells("<<<whyflow:markdown>>>\nhi\n<<<whyflow:end>>>\nstray\n")
    cells = split_cells("\n<<<whyflow:code tags=a,b>>>\nx = 1\n<<<whyflow:end>>>\n")
    assert cells == [{"kind": "code", "tags": ["a", "b"], "source": "x = 1"}]


def _context(state: AnalysisState, job: Path) -> dict[str, Any]:
    """The template context from the notebook agent's view of ``state``."""
    return build_context(StateView(state, "notebook_generator", NotebookGeneratorAgent.reads()), job, 0, None)


def test_a_weighting_headline_is_checked_by_refitting_the_regression_estimate(tmp_path: Path) -> None:
    frame, _ = job_training(n=300, seed=1)
    state = make_state(frame, tmp_path, "training", "earnings")
    pair = {"treatment": "training", "outcome": "earnings"}
    ipw = make_estimate(
        "ipw",
        2.5,
        0.5,
        **pair,
        headline=True,
        headline_reason="overlap is good",
        adjustment_set=["age", "married"],
        trimmed=Trimming(lower=0.05, upper=0.95, n_dropped=3, n_kept=297),
        propensity_model="gbm",
        clip=[0.01, 0.99],
    )
    state.treatment_effects = [
        make_estimate("naive", 4.0, 0.5, **pair),
        make_estimate("ols", 2.0, 0.5, **pair, adjustment_set=["age"], se_method="HC3 robust (statsmodels)"),
        make_estimate("ols", 9.0, 1.0, treatment="training", outcome="age"),
        ipw,
    ]
    context = _context(state, tmp_path)
    assert [e["index"] for e in context["effects"]] == [0, 1, 3] and context["other_pairs"] == [
        {"treatment": "training", "outcome": "age", "n": 1}
    ]
    head = context["headline"]
    assert head["method"] == ipw.method and head["reason"] == "overlap is good"
    assert head["sentence"] == (
        f"Receiving `training` raised `earnings` by about {fmt_num(2.5)} (95% CI {fmt_num(ipw.ci_lower)} to "
        f"{fmt_num(ipw.ci_upper)}), estimated by {ipw.method} (ATE)."
    )
    assert "2 adjusted estimates (1 unadjusted baseline left out)" in context["agreement"]["text"]
    check = context["recompute"]
    assert (check["index"], check["kind"], check["is_headline"], check["cov_type"]) == (1, "ols", False, "HC3")
    assert check["adjustment_set"] == ["age"] and check["trim"] is None and check["notes"] == []
    assert context["propensity"]["covariates"] == ["age", "married"]  # the headline's own set
    assert context["paths"]["state_file"] == "report_state.json"  # no state.json saved yet
    # Without a regression estimate the weighting headline itself is refitted, with the settings it recorded.
    state.treatment_effects = [ipw]
    check = _context(state, tmp_path)["recompute"]
    assert (check["index"], check["kind"], check["is_headline"], check["cov_type"]) == (0, "ipw", True, None)
    assert check["trim"] == [0.05, 0.95] and check["clip"] == [0.01, 0.99] and check["ps_model"] == "gbm"


def test_the_notebook_reads_state_json_only_when_it_holds_this_views_estimates(tmp_path: Path) -> None:
    frame, _ = job_training(n=300, seed=1)
    state = make_state(frame, tmp_path, "training", "earnings")
    state.treatment_effects = [make_estimate("ols", 2.0, treatment="training", outcome="earnings", headline=True)]
    (tmp_path / "state.json").write_text(state.to_json())
    assert _context(state, tmp_path)["paths"]["state_file"] == "state.json"
    state.treatment_effects = [
        *state.treatment_effects,
        make_estimate("ipw", 2.1, treatment="training", outcome="earnings"),
    ]
    context = _context(state, tmp_path)  # state.json was saved before this estimate
    assert context["paths"]["state_file"] == "report_state.json"
    assert any("state.json is absent or older" in d for d in context["decisions"])
