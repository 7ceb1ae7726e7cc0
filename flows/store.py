"""The job store: one folder per job, the state written atomically after every agent.

Layout of a job folder::

    state.json      the AnalysisState (atomic replace after every change the runner makes)
    traces.jsonl    every agent trace in full (the state keeps a truncated, compressed copy)
    run.json        how the job was started: recipe, data, fingerprint, options (for resume)
    recipe.yaml     the recipe as run
    data/ plots/    derived data and figures
    report.ipynb    the notebook (and report.html)
    CANCEL          present when `whyflow cancel` asked the run to stop
"""

from __future__ import annotations

import json
import os
import secrets
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agents.base.state import AgentTrace, AnalysisState
from flows.errors import JobNotFound

__all__ = ["JobFolder", "JobStore", "JobSummary", "new_job_id", "default_runs_dir"]


def default_runs_dir() -> Path:
    """``$WHYFLOW_RUNS_DIR`` or ``./runs``."""
    return Path(os.environ.get("WHYFLOW_RUNS_DIR", "runs"))


def new_job_id() -> str:
    """A sortable, unique job id such as ``20261121-221503-3f9a2c``."""
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@dataclass(frozen=True)
class JobSummary:
    """One line of `whyflow list`."""

    job_id: str
    path: Path
    status: str
    progress: float
    recipe: str
    data: str
    updated_at: str
    error: str | None


@dataclass(frozen=True)
class JobFolder:
    """One job's folder and the files in it."""

    path: Path

    @property
    def state_path(self) -> Path:
        return self.path / "state.json"

    @property
    def traces_path(self) -> Path:
        return self.path / "traces.jsonl"

    @property
    def run_path(self) -> Path:
        return self.path / "run.json"

    @property
    def recipe_path(self) -> Path:
        return self.path / "recipe.yaml"

    @property
    def cancel_path(self) -> Path:
        return self.path / "CANCEL"

    def exists(self) -> bool:
        """Whether a state has been written here."""
        return self.state_path.exists()

    def save(self, state: AnalysisState) -> None:
        """Write ``state.json`` atomically: a crash leaves the previous or the new state, never half."""
        _atomic_write(self.state_path, state.to_json())

    def load(self) -> AnalysisState:
        """Read the state and connect its trace sink to ``traces.jsonl``."""
        if not self.state_path.exists():
            raise JobNotFound(f"no state.json in {self.path}")
        state = AnalysisState.from_json(self.state_path.read_text(encoding="utf-8"))
        self.attach(state)
        return state

    def attach(self, state: AnalysisState) -> None:
        """Send every full trace of ``state`` to ``traces.jsonl``."""
        state.set_trace_sink(self.append_trace)

    def append_trace(self, trace: AgentTrace) -> None:
        """Append one full trace (never truncated) as a JSON line."""
        with self.traces_path.open("a", encoding="utf-8") as fh:
            fh.write(trace.model_dump_json() + "\n")

    def read_traces(self) -> list[AgentTrace]:
        """Every trace recorded for this job, in order."""
        if not self.traces_path.exists():
            return []
        lines = self.traces_path.read_text(encoding="utf-8").splitlines()
        return [AgentTrace.model_validate_json(line) for line in lines if line.strip()]

    def write_run(self, info: dict[str, Any]) -> None:
        """Record how the job was started (``run.json``)."""
        _atomic_write(self.run_path, json.dumps(info, indent=2, default=str))

    def read_run(self) -> dict[str, Any]:
        """What ``write_run`` recorded (empty if nothing)."""
        if not self.run_path.exists():
            return {}
        return dict(json.loads(self.run_path.read_text(encoding="utf-8")))

    def request_cancel(self) -> None:
        """Ask a running job to stop after its current agent."""
        self.cancel_path.write_text(datetime.now(UTC).isoformat(), encoding="utf-8")

    def cancel_requested(self) -> bool:
        """Whether `whyflow cancel` asked this job to stop."""
        return self.cancel_path.exists()

    def clear_cancel(self) -> None:
        """Forget a cancel request (on resume)."""
        self.cancel_path.unlink(missing_ok=True)


class JobStore:
    """Finds, creates and lists job folders under a root (default ``./runs``)."""

    def __init__(self, root: str | Path | None = None) -> None:
        self.root = Path(root) if root is not None else default_runs_dir()

    def create(self, job_id: str, path: str | Path | None = None) -> JobFolder:
        """Make the folder for a new job: ``path`` if given (must be empty), else ``root/job_id``."""
        folder = Path(path) if path is not None else self.root / job_id
        if folder.exists() and (folder / "state.json").exists():
            raise FileExistsError(f"{folder} already holds a job; choose another --output or resume it")
        folder.mkdir(parents=True, exist_ok=True)
        return JobFolder(folder)

    def open(self, ref: str | Path) -> JobFolder:
        """A job by folder path or by id under the root."""
        candidates = [Path(ref), self.root / str(ref)]
        for candidate in candidates:
            if (candidate / "state.json").exists():
                return JobFolder(candidate)
        matches = sorted(self.root.glob(f"{ref}*/state.json")) if self.root.exists() else []
        if len(matches) == 1:
            return JobFolder(matches[0].parent)
        if len(matches) > 1:
            raise JobNotFound(f"'{ref}' matches {len(matches)} jobs in {self.root}; give more of the id")
        raise JobNotFound(f"no job '{ref}' (looked for a folder with state.json at {ref} and in {self.root})")

    def list(self) -> list[JobSummary]:
        """Every job under the root, newest first."""
        if not self.root.exists():
            return []
        out = []
        for state_file in self.root.glob("*/state.json"):
            folder = JobFolder(state_file.parent)
            try:
                data = json.loads(state_file.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            run = folder.read_run()
            out.append(
                JobSummary(
                    job_id=str(data.get("job_id")),
                    path=folder.path,
                    status=str(data.get("status")),
                    progress=float(data.get("progress_percentage") or 0.0),
                    recipe=str(run.get("recipe_name") or ""),
                    data=str(run.get("data") or data.get("dataset_info", {}).get("url", "")),
                    updated_at=str(data.get("updated_at", "")),
                    error=data.get("error_message"),
                )
            )
        return sorted(out, key=lambda s: s.updated_at, reverse=True)
