"""The ask state's layout: a plan carries its filled worked example typed, a run is the sandbox's
own ExecutionResult, and an ask job the previous release wrote reads into both."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from whyflow.ask.planning import plan_question
from whyflow.ask.state import AskState
from whyflow.ask.tools.retrieval import FilledPlan
from whyflow.core.job import STATE_SCHEMA_VERSION
from whyflow.runtime.sandbox.run import ExecutionResult, Figure
from whyflow.versions import read_state, upgrade

V0_ASK = Path(__file__).resolve().parents[1] / "fixtures" / "jobs_v0" / "ask_completed" / "state.json"


def test_a_plan_carries_its_filled_example_typed_through_state_json(shop: tuple[Path, pd.DataFrame]) -> None:
    _, frame = shop
    plan, _ = plan_question("What is the average price by region?", [], frame)
    assert isinstance(plan.filled, FilledPlan) and plan.filled.example_id == "mean_by_group"
    assert plan.filled.params == {"group": "region", "value": "price"}
    assert plan.parameters == {"question": "What is the average price by region?"}
    state = AskState(job_id="j", question="q", plan=plan)
    again = read_state(state.to_json())
    assert isinstance(again, AskState) and again.plan == plan
    assert isinstance(again.plan.filled, FilledPlan) and again.plan.filled.code == plan.filled.code


def test_a_run_in_the_state_is_the_sandboxs_result() -> None:
    run = ExecutionResult(
        ok=True,
        result={"mean": 2.5, "sd": float("nan")},
        result_kind="dict",
        figures=[Figure(kind="vega-lite", spec={"mark": "bar"})],
        wall_seconds=0.5,
        overhead_seconds=0.02,
        layers=["rlimits"],
    )
    state = AskState(job_id="j", question="q", execution_result=run, execution_success=True)
    text = state.to_json()
    assert '"sd": NaN' in text  # the job's NaN convention reaches the result inside the run
    again = read_state(text)
    assert isinstance(again, AskState) and again.execution_result is not None
    assert again.execution_result.result["mean"] == 2.5 and math.isnan(again.execution_result.result["sd"])
    assert again.execution_result.model_copy(update={"result": run.result}) == run


def test_an_ask_job_of_version_0_moves_its_filled_example_out_of_the_parameters() -> None:
    old = json.loads(V0_ASK.read_text())
    filled = old["plan"]["parameters"]["filled"]
    document = upgrade(old)
    assert document["schema_version"] == STATE_SCHEMA_VERSION and document["kind"] == "ask"
    assert document["plan"]["filled"] == filled and "filled" not in document["plan"]["parameters"]
    assert "filled" in old["plan"]["parameters"]  # the document read is left as it was
    state = read_state(V0_ASK.read_text())
    assert isinstance(state, AskState) and state.plan is not None
    assert state.plan.filled == FilledPlan.model_validate(filled)
    assert state.plan.parameters == {"question": "What is the average earnings by region?"}
    run = state.execution_result
    assert isinstance(run, ExecutionResult) and run.overhead_seconds == 0.0
    assert run.result == old["execution_result"]["result"] and run.layers == old["execution_result"]["layers"]


def test_a_plan_without_an_example_upgrades_unchanged() -> None:
    old = json.loads(V0_ASK.read_text())
    old["plan"]["parameters"] = {"question": "q", "error": "no column 'x'"}
    assert upgrade(old)["plan"]["parameters"] == {"question": "q", "error": "no column 'x'"}
    assert upgrade({**old, "plan": None})["plan"] is None
