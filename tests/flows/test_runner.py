"""The runner's own logic, driven in-process: persistence, failure, loops, cancel, progress."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.synthetic import linear_confounding
from whyflow.causal.state import AnalysisState, CritiqueDecision
from whyflow.core.status import JobStatus
from whyflow.flows.errors import RunCancelled, RunFailed
from whyflow.flows.jobstore.jobs import RunRequest, prepare_job
from whyflow.flows.jobstore.store import JobFolder
from whyflow.flows.recipes.nodes import Plan
from whyflow.flows.recipes.plan import load_plan
from whyflow.flows.running.progress import Reporter
from whyflow.flows.running.runner import LocalExecutor, Runner

RECIPES = Path(__file__).resolve().parents[1] / "fixtures" / "recipes"


class DiskWatcher(Reporter):
    """After every finished step, reads state.json back from disk."""

    def __init__(self, folder: JobFolder) -> None:
        self.folder = folder
        self.snapshots: list[dict] = []

    def step_finished(self, key, node, result, state) -> None:  # type: ignore[no-untyped-def]
        self.snapshots.append(json.loads(self.folder.state_path.read_text()))


def write_recipe(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "recipe.yaml"
    path.write_text(text)
    return path


def start(
    tmp_path: Path, recipe: Path, overrides: dict[str, str] | None = None
) -> tuple[Plan, JobFolder, AnalysisState]:
    frame, _ = linear_confounding(400, effect=2.0, seed=3)
    data = tmp_path / "data.csv"
    frame.to_csv(data, index=False)
    plan = load_plan(recipe, overrides)
    folder = prepare_job(
        RunRequest(
            recipe=str(recipe), data=str(data), treatment="treated", outcome="outcome", output=str(tmp_path / "job")
        ),
        plan,
    )
    return plan, folder, folder.load()


def test_state_is_persisted_after_every_agent(tmp_path: Path) -> None:
    plan, folder, state = start(tmp_path, RECIPES / "valid_toy.yaml")
    watcher = DiskWatcher(folder)
    Runner(plan, folder, state, LocalExecutor(), watcher).run()
    done = [snap["completed_steps"] for snap in watcher.snapshots]
    assert done[0] == ["toy_profiler"]
    assert all(len(b) == len(a) + 1 for a, b in zip(done, done[1:], strict=False))
    progress = [snap["progress_percentage"] for snap in watcher.snapshots]
    assert progress == sorted(progress) and progress[0] > 0
    final = json.loads(folder.state_path.read_text())
    assert final["status"] == "completed" and final["progress_percentage"] == 100.0
    assert len(folder.read_traces()) == len(watcher.snapshots)


def test_critique_loop_runs_until_approve(tmp_path: Path) -> None:
    plan, folder, state = start(tmp_path, RECIPES / "valid_toy.yaml")
    Runner(plan, folder, state, LocalExecutor(), Reporter()).run()
    assert [f.decision for f in state.critique_history] == [CritiqueDecision.ITERATE, CritiqueDecision.APPROVE]
    assert state.iteration_count == 2
    assert "toy_estimator@2" in state.completed_steps and "toy_estimator@3" not in state.completed_steps


def test_critique_loop_stops_at_the_limit(tmp_path: Path) -> None:
    plan, folder, state = start(tmp_path, RECIPES / "valid_toy.yaml", {"toy_critique.approve_at": "99"})
    Runner(plan, folder, state, LocalExecutor(), Reporter()).run()
    assert len(state.critique_history) == 3 and state.iteration_count == 3
    assert state.status is JobStatus.COMPLETED


def test_agent_exception_fails_the_job_and_keeps_everything(tmp_path: Path) -> None:
    recipe = write_recipe(tmp_path, "name: t\nsteps:\n  - agent: toy_profiler\n  - agent: crasher\n")
    plan, folder, state = start(tmp_path, recipe)
    with pytest.raises(RunFailed, match="agent 'crasher' failed: RuntimeError: boom"):
        Runner(plan, folder, state, LocalExecutor(), Reporter()).run()
    saved = folder.load()
    assert saved.status is JobStatus.FAILED
    assert saved.error_agent == "crasher" and "boom" in (saved.error_message or "")
    assert saved.data_profile is not None and saved.completed_steps == ["toy_profiler"]
    assert "RuntimeError: boom: the agent broke" in (folder.path / "errors.log").read_text()


def test_contract_violation_by_a_plugin_fails_naming_agent_and_field(tmp_path: Path) -> None:
    recipe = write_recipe(tmp_path, "name: t\nsteps:\n  - agent: toy_profiler\n  - agent: bad_writer\n")
    plan, folder, state = start(tmp_path, recipe)
    with pytest.raises(RunFailed) as caught:
        Runner(plan, folder, state, LocalExecutor(), Reporter()).run()
    assert "agent 'bad_writer' wrote state field 'treatment_effects'" in str(caught.value)
    saved = folder.load()
    assert saved.recommendations == [] and saved.error_agent == "bad_writer"


def test_resume_skips_completed_steps(tmp_path: Path) -> None:
    recipe = write_recipe(tmp_path, "name: t\nsteps:\n  - agent: toy_profiler\n  - agent: crasher\n")
    plan, folder, state = start(tmp_path, recipe)
    with pytest.raises(RunFailed):
        Runner(plan, folder, state, LocalExecutor(), Reporter()).run()
    # The user fixes the recipe (the crasher is replaced) and resumes the same job.
    fixed = load_plan(write_recipe(tmp_path, "name: t\nsteps:\n  - agent: toy_profiler\n  - agent: toy_estimator\n"))
    state = folder.load()
    state.reopen()
    skipped: list[str] = []

    class Skips(Reporter):
        def step_skipped(self, key: str) -> None:
            skipped.append(key)

    Runner(fixed, folder, state, LocalExecutor(), Skips()).run()
    assert skipped == ["toy_profiler"]
    assert state.status is JobStatus.COMPLETED and state.treatment_effects


def test_cancel_request_stops_between_agents_and_saves(tmp_path: Path) -> None:
    plan, folder, state = start(tmp_path, RECIPES / "valid_toy.yaml")
    statuses: list[str] = []

    class CancelAfterProfiler(Reporter):
        def step_finished(self, key, node, result, state) -> None:  # type: ignore[no-untyped-def]
            if key == "toy_profiler":
                folder.request_cancel()

    original_save = folder.save

    def recording_save(s: AnalysisState) -> None:
        statuses.append(s.status.value)
        original_save(s)

    object.__setattr__(folder, "save", recording_save)
    with pytest.raises(RunCancelled):
        Runner(plan, folder, state, LocalExecutor(), CancelAfterProfiler()).run()
    saved = JobFolder(folder.path).load()
    assert saved.status is JobStatus.CANCELLED and saved.completed_steps == ["toy_profiler"]
    assert statuses[-2:] == ["cancelling", "cancelled"]
