"""The job store: one folder per job, the state written atomically after every agent.

Layout of a job folder::

    state.json      the job's state, of either family (atomic replace after every change the runner
                    makes); it names its schema version and kind, and :mod:`whyflow.versions`
                    reads every earlier version
    traces.jsonl    every agent trace in full (the state keeps a truncated, compressed copy)
    run.json        how the job was started: recipe, data, fingerprint, options (for resume)
    recipe.yaml     the recipe as run
    data/ plots/    derived data and figures
    report.ipynb    the notebook (and report.html)
    CANCEL          present when `whyflow cancel` asked the run to stop

A job folder may be moved or copied: the state and ``run.json`` record the folder they were
written in (``job_dir``), and on reading, every path under that folder is rebased onto the
folder's new place (for a state written before ``job_dir`` existed, the old folder is what its
run asked for as ``--output``, else the path that holds the job id).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from whyflow.causal.state import AnalysisState
from whyflow.core.job import AgentTrace
from whyflow.flows.errors import DamagedJob, JobNotFound, OutputNotWritable
from whyflow.states import JobState
from whyflow.versions import StateVersionError, parse_state, upgrade, validate_state

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


def _keep_previous(path: Path) -> None:
    """Keep the state being replaced as ``state.json.prev`` (a hard link: no copy, never half)."""
    if not path.exists():
        return
    prev = path.with_name(path.name + ".prev")
    tmp = path.with_name(f".{path.name}.prev.tmp")
    try:
        tmp.unlink(missing_ok=True)
        os.link(path, tmp)
        os.replace(tmp, prev)
    except OSError:  # a file system without hard links: the previous state is not kept
        tmp.unlink(missing_ok=True)


def _check_writable(folder: Path) -> None:
    """Make ``folder`` and prove a file can be written in it, or say in one sentence why not."""
    blocker = next((p for p in [folder, *folder.parents] if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        raise OutputNotWritable(f"cannot use {folder} as the job folder: {blocker} is a file, not a folder")
    probe = folder / f".whyflow-write-check-{secrets.token_hex(3)}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"ok")
        probe.unlink()
    except OSError as exc:
        with contextlib.suppress(OSError):
            probe.unlink(missing_ok=True)
        reason = exc.strerror or type(exc).__name__
        raise OutputNotWritable(f"cannot write the job folder {folder}: {reason.lower()}") from None


def damage_message(folder: JobFolder, path: Path, exc: BaseException | None) -> str:
    """One sentence: which file is damaged, why, and what can still be done."""
    why = "is missing"
    if _cut_short(exc):
        why = "is truncated (a write was cut short)"
    elif exc is not None:
        why = f"is not a valid job state ({str(exc).strip().splitlines()[0][:120]})"
    left = [p.name for p in (folder.traces_path, folder.path / "errors.log") if p.exists()]
    prev = folder.path / "state.json.prev"
    if prev.exists() and path != prev:
        todo = f"`whyflow resume {folder.path}` restarts from the previous good state (state.json.prev)"
    else:
        todo = "no earlier state was kept; start the run again"
    kept = f"; {' and '.join(left)} are intact" if left else ""
    return f"job state {path} {why}{kept}; {todo}"


def _cut_short(exc: BaseException | None) -> bool:
    """Whether the JSON ended before the document did (the parser ran out of text)."""
    if isinstance(exc, json.JSONDecodeError):
        return not exc.doc[exc.pos :].strip() or exc.msg.startswith("Unterminated string")
    return isinstance(exc, ValueError) and "EOF" in str(exc)


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

    def save(self, state: JobState) -> None:
        """Write ``state.json`` atomically: a crash leaves the previous or the new state, never half."""
        here = str(self.path.resolve())
        if state.job_dir != here:
            state.job_dir = here
        _keep_previous(self.state_path)
        text = state.to_json()
        try:
            _atomic_write(self.state_path, text)
        except OSError:
            # A full disk: free what this job left half-written and try again; failing that, give
            # up the previous state kept beside it (the state being written supersedes it; else a
            # disk filled up by an agent keeps its failure from being saved, and the job would look
            # still running). If it still fails the caller reports the error.
            for make_room in (self.clean_temporary, self._drop_previous):
                if make_room():
                    with contextlib.suppress(OSError):
                        _atomic_write(self.state_path, text)
                        return
            raise

    def _drop_previous(self) -> bool:
        """Delete ``state.json.prev`` to make room, unless it is the current state itself (a hard link)."""
        prev = self.path / "state.json.prev"
        try:
            if not prev.exists() or (self.state_path.exists() and os.path.samefile(prev, self.state_path)):
                return False
            prev.unlink()
        except OSError:
            return False
        return True

    def clean_temporary(self) -> int:
        """Delete the job's half-written files (``*.tmp``); return how many were removed."""
        removed = 0
        for tmp in [*self.path.glob("*.tmp"), *self.path.glob(".*.tmp"), *self.path.glob("data/*.tmp")]:
            try:
                tmp.unlink()
                removed += 1
            except OSError:
                continue
        return removed

    def load(self) -> AnalysisState:
        """Read the state and connect its trace sink to ``traces.jsonl``."""
        state = self.load_any()
        if not isinstance(state, AnalysisState):
            raise JobNotFound(f"{self.path} holds a question (whyflow ask), not an analysis")
        return state

    def load_any(self) -> JobState:
        """Read the state, of either family and of any schema version."""
        if not self.state_path.exists():
            raise JobNotFound(f"no state.json in {self.path}")
        state = self._parse(self.state_path)
        self.attach(state)
        return state

    def _parse(self, path: Path) -> JobState:
        """The state in ``path``, or :class:`DamagedJob` saying what is left to work with."""
        from pydantic import ValidationError

        try:
            document = upgrade(parse_state(path.read_text(encoding="utf-8")))
            return validate_state(self._rebased(document, document.get("job_dir")))
        except StateVersionError as exc:
            raise StateVersionError(f"{path}: {exc}") from None
        except (OSError, UnicodeDecodeError, ValidationError, ValueError) as exc:
            raise DamagedJob(damage_message(self, path, exc)) from None

    def _rebased(self, document: dict[str, Any], written_in: Any) -> dict[str, Any]:
        """``document`` with every path under the folder it was written in moved to this folder."""
        old = str(written_in) if written_in else _written_in(document, self._raw_run())
        new = str(self.path.resolve())
        if old and old != new:
            document = _rebase(document, old.rstrip(os.sep), new)
        if "job_dir" in document:
            document["job_dir"] = new
        return document

    def _raw_run(self) -> dict[str, Any]:
        try:
            found = json.loads(self.run_path.read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError):
            return {}
        return found if isinstance(found, dict) else {}

    def recover(self) -> JobState:
        """Put the previous good state back (the damaged file is kept as ``state.json.damaged``)."""
        prev = self.path / "state.json.prev"
        if not prev.exists():
            raise DamagedJob(damage_message(self, self.state_path, None))
        state = self._parse(prev)
        if self.state_path.exists():
            os.replace(self.state_path, self.path / "state.json.damaged")
        _atomic_write(self.state_path, prev.read_text(encoding="utf-8"))
        self.attach(state)
        return state

    def attach(self, state: JobState) -> None:
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
        from pydantic import ValidationError

        out: list[AgentTrace] = []
        for line in self.traces_path.read_text(encoding="utf-8", errors="replace").splitlines():
            if not line.strip():
                continue
            try:
                out.append(AgentTrace.model_validate_json(line))
            except (ValidationError, ValueError):  # a line torn by a crash or a full disk: skip it
                continue
        return out

    def write_run(self, info: dict[str, Any]) -> None:
        """Record how the job was started (``run.json``), and in which folder."""
        info = {**info, "job_dir": str(self.path.resolve())}
        _atomic_write(self.run_path, json.dumps(info, indent=2, default=str))

    def read_run(self) -> dict[str, Any]:
        """What ``write_run`` recorded (empty if nothing)."""
        if not self.run_path.exists():
            return {}
        try:
            run = dict(json.loads(self.run_path.read_text(encoding="utf-8")))
            return self._rebased(run, run.get("job_dir"))
        except (ValueError, TypeError, UnicodeDecodeError) as exc:
            raise DamagedJob(
                f"{self.run_path} is damaged ({' '.join(str(exc).split())[:120]}); it records how the job was "
                f"started, so the job cannot be resumed: start the run again"
            ) from None

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
        _check_writable(folder)
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
                if not isinstance(data, dict) or "job_id" not in data:
                    raise ValueError("not a job state")
            except (OSError, ValueError):
                when = datetime.fromtimestamp(state_file.stat().st_mtime, UTC).isoformat()
                data = {"job_id": state_file.parent.name, "status": "damaged", "updated_at": when}
            try:
                run = folder.read_run()
            except DamagedJob:
                run, data = {}, {**data, "status": "damaged"}
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


def _written_in(document: dict[str, Any], run: dict[str, Any]) -> str | None:
    """The folder a state or run written before ``job_dir`` existed was written in, if it can be told.

    The run's requested ``--output`` when it had one; else the leading part, up to the job id, of
    the first path in the document that holds the job id as a folder name.
    """
    request = run.get("request")
    output = request.get("output") if isinstance(request, dict) else None
    if isinstance(output, str) and os.path.isabs(output):
        return output
    marker = f"{os.sep}{document.get('job_id') or run.get('job_id')}{os.sep}"
    for text in _strings(document):
        if text.startswith(os.sep) and marker in text:
            return text[: text.index(marker) + len(marker) - 1]
    return None


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _rebase(value: Any, old: str, new: str) -> Any:
    """Every string that is ``old`` or a path under it, rebased onto ``new``; everything else as it is."""
    if isinstance(value, str):
        if value == old or value.startswith(old + os.sep):
            return new + value[len(old) :]
        return value
    if isinstance(value, dict):
        return {k: _rebase(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_rebase(v, old, new) for v in value]
    return value
