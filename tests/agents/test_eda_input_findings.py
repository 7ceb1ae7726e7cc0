"""The EDA's findings on the input as received: recorded by the profiler, the same as reading the file again."""

from __future__ import annotations

from pathlib import Path

from tests.agents.test_data_repair import messy_copy
from tests.helpers import make_state
from whyflow.causal.dataprep.frame_checks import FINDINGS_FILE, load_findings, quality_findings
from whyflow.flows.running.dispatch import run_single_agent
from whyflow.runtime.data import read_table


def test_recorded_findings_give_the_same_quality_report_as_reading_the_input_again(tmp_path: Path) -> None:
    frame, _ = messy_copy()
    state = make_state(frame, tmp_path, profile=False)
    for agent in ("data_profiler", "data_repair", "eda_agent"):
        run_single_agent(agent, state, tmp_path)
    source = state.dataset_info.local_path
    recorded = load_findings(source, tmp_path / "data")
    assert recorded == quality_findings(read_table(source))
    assert recorded["duplicates"] == 40 and "prior_earnings" in recorded["text_numeric"]
    with_record = state.eda_result.data_quality_issues

    (tmp_path / "data" / FINDINGS_FILE).unlink()  # the EDA reads the file itself
    run_single_agent("eda_agent", state, tmp_path)
    assert state.eda_result.data_quality_issues == with_record


def test_findings_of_a_changed_file_are_not_used(tmp_path: Path) -> None:
    frame, _ = messy_copy(n=300)
    state = make_state(frame, tmp_path, profile=False)
    run_single_agent("data_profiler", state, tmp_path)
    source = Path(state.dataset_info.local_path)
    assert load_findings(source, tmp_path / "data") is not None
    frame.iloc[:100].to_csv(source, index=False)  # another file at the same path
    assert load_findings(source, tmp_path / "data") is None
