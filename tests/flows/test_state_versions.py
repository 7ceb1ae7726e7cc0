"""Versioned states: every state says its version and kind; an older one is upgraded on read.

The fixtures under ``tests/fixtures/jobs_v0`` were written by the release before versions
existed, in another folder (their README says how): copied elsewhere, they load, report,
resume and render, and every path in them follows the folder.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from whyflow.ask.state import AskState
from whyflow.causal.state import AnalysisState, DatasetInfo
from whyflow.cli.main import main
from whyflow.core.job import STATE_SCHEMA_VERSION
from whyflow.flows.jobstore.history import read_record
from whyflow.flows.jobstore.store import JobFolder
from whyflow.versions import StateVersionError, parse_state, read_state, upgrade

V0 = Path(__file__).resolve().parents[1] / "fixtures" / "jobs_v0"
WRITTEN_IN = "/tmp/whyflow-v0"
"""Where the v0 fixtures were written (every path in them starts here)."""


def _copy(name: str, tmp_path: Path) -> Path:
    folder = tmp_path / "moved" / name
    shutil.copytree(V0 / name, folder)
    return folder


# ---- the upgrade itself ------------------------------------------------------------------------
def _v0_analysis(**extra: Any) -> dict[str, Any]:
    return {
        "job_id": "j1",
        "dataset_info": {"url": "d.csv", "kaggle_description": None, "kaggle_tags": []},
        **extra,
    }


def test_a_state_without_a_version_is_version_0_and_becomes_the_current_one() -> None:
    doc = upgrade(_v0_analysis())
    assert doc["schema_version"] == STATE_SCHEMA_VERSION and doc["kind"] == "analysis"
    assert list(doc)[:3] == ["schema_version", "kind", "job_dir"]
    assert "kaggle_description" not in doc["dataset_info"]
    assert isinstance(read_state(json.dumps(_v0_analysis())), AnalysisState)


def test_the_upgrade_dispatches_on_the_parsed_kind_not_on_the_text() -> None:
    # The same key in another place (a compact dump, a nested "kind") decides nothing.
    compact = json.dumps({"job_id": "a", "question": "q?", "kind": "ask"}, separators=(",", ":"))
    assert isinstance(read_state(compact), AskState)
    nested = json.dumps(_v0_analysis(recommendations=['"kind": "ask"']), indent=2)
    assert isinstance(read_state(nested), AnalysisState)


def test_version_0_estimates_and_sensitivity_results_get_their_typed_fields() -> None:
    effect = {
        "method": "Inverse probability weighting",
        "estimand": "ATE",
        "estimate": 1.0,
        "std_error": 0.25,
        "ci_lower": 0.5,
        "ci_upper": 1.5,
        "details": {"method": "ipw", "headline": True, "n_treated": 40},
    }
    evalue = {
        "method": "e_value",
        "robustness_value": 2.1,
        "interpretation": "",
        "details": {"kind": "e_value", "extras": {"evalue_estimate": 2.1, "evalue_ci": 1.4, "ci_crosses_null": False}},
    }
    unobserved = {
        "method": "unobserved_common_cause",
        "robustness_value": 0.4,
        "interpretation": "",
        "details": {"kind": "refuter", "extras": {"worst_share": 0.4}},
    }
    old = {"method": "x", "robustness_value": 1.0, "interpretation": "", "details": {"kind": "something_old", "p": 1}}
    state = read_state(
        json.dumps(_v0_analysis(treatment_effects=[effect], sensitivity_results=[evalue, unobserved, old]))
    )
    assert isinstance(state, AnalysisState)
    details = state.treatment_effects[0].details
    assert (details.method_key, details.family, details.headline) == ("ipw", "weighting", True)
    assert details.extras == {"method": "ipw", "n_treated": 40}
    ev, uc, other = (r.details for r in state.sensitivity_results)
    assert (ev.evalue_estimate, ev.evalue_ci, ev.ci_crosses_null, ev.extras) == (2.1, 1.4, False, {})
    assert uc.kind == "unobserved" and uc.extras == {"worst_share": 0.4}
    assert other.kind == "other" and other.extras == {"p": 1}


def test_a_current_state_round_trips_unchanged() -> None:
    state = AnalysisState(job_id="j2", dataset_info=DatasetInfo(url="d.csv"), treatment_variable="t")
    again = read_state(state.to_json())
    assert again.to_json() == state.to_json()
    assert json.loads(state.to_json())["schema_version"] == STATE_SCHEMA_VERSION


@pytest.mark.parametrize(
    ("version", "message"),
    [(STATE_SCHEMA_VERSION + 1, "written by a newer whyflow"), ("1", "not a version number"), (-1, "not a version")],
)
def test_a_version_this_release_cannot_read_is_refused_with_the_reason(version: Any, message: str) -> None:
    with pytest.raises(StateVersionError, match=message):
        upgrade({**_v0_analysis(), "schema_version": version})


def test_an_unknown_kind_or_a_non_state_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown state kind 'survey'"):
        read_state(json.dumps({**_v0_analysis(), "schema_version": 1, "kind": "survey"}))
    with pytest.raises(ValueError, match="not a job state"):
        parse_state("[1, 2]")


def test_a_newer_state_gets_one_line_and_exit_2_from_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _copy("ask_completed", tmp_path)
    doc = json.loads((folder / "state.json").read_text())
    (folder / "state.json").write_text(json.dumps({**doc, "schema_version": STATE_SCHEMA_VERSION + 1}))
    assert main(["status", str(folder)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "state.json: the state was written by a newer whyflow" in err


# ---- a job folder the previous release wrote ---------------------------------------------------
def test_an_old_ask_job_loads_reports_and_lists_from_a_new_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _copy("ask_completed", tmp_path)
    before = (folder / "state.json").read_text()
    assert "schema_version" not in before and WRITTEN_IN in before
    state = JobFolder(folder).load_any()
    assert isinstance(state, AskState)
    assert (state.schema_version, state.kind, state.job_dir) == (STATE_SCHEMA_VERSION, "ask", str(folder.resolve()))
    dataset = next(iter(state.datasets.values()))
    assert Path(dataset.local_path).is_file() and Path(dataset.local_path).is_relative_to(folder.resolve())
    assert state.final_output is not None and "region" in state.final_output.answer
    assert main(["status", str(folder)]) == 0
    assert "mean earnings for each region" in capsys.readouterr().out
    record = read_record(JobFolder(folder))
    assert record is not None and record.completed and record.headline is not None
    assert (folder / "state.json").read_text() == before  # reading never rewrites the file


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_an_old_cancelled_analysis_resumes_and_renders_its_notebook_from_a_new_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _copy("causal_cancelled", tmp_path)
    old = json.loads((folder / "state.json").read_text())
    assert old["status"] == "cancelled" and "schema_version" not in old
    assert main(["resume", str(folder)]) == 0
    printed = capsys.readouterr().out
    assert "resuming job" in printed
    state = JobFolder(folder).load()
    assert state.status.value == "completed" and state.critique_history
    assert state.notebook_path and Path(state.notebook_path).is_relative_to(folder.resolve())
    notebook = json.loads(Path(state.notebook_path).read_text())
    outputs = [o for c in notebook["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])]
    assert outputs and not [o for o in outputs if o.get("output_type") == "error"]
    written = json.loads((folder / "state.json").read_text())
    assert (written["schema_version"], written["kind"], written["job_dir"]) == (
        STATE_SCHEMA_VERSION,
        "analysis",
        str(folder.resolve()),
    )
    assert f'"{WRITTEN_IN}' not in json.dumps(written)  # no value is a path in the old folder any more
    assert old["completed_steps"] == written["completed_steps"][: len(old["completed_steps"])]


def test_a_current_job_folder_moved_elsewhere_reads_its_paths_from_the_new_place(tmp_path: Path) -> None:
    first = tmp_path / "first"
    (first / "data").mkdir(parents=True)
    (first / "data" / "x.parquet").write_bytes(b"")
    state = AnalysisState(job_id="j3", dataset_info=DatasetInfo(url="d.csv"))
    state.dataframe_path = str((first / "data" / "x.parquet").resolve())
    JobFolder(first).save(state)
    JobFolder(first).write_run({"job_id": "j3", "data_local_path": state.dataframe_path})
    moved = tmp_path / "elsewhere" / "second"
    moved.parent.mkdir()
    first.rename(moved)
    again = JobFolder(moved).load()
    assert again.dataframe_path == str((moved / "data" / "x.parquet").resolve()) and again.job_dir == str(
        moved.resolve()
    )
    assert JobFolder(moved).read_run()["data_local_path"] == again.dataframe_path
