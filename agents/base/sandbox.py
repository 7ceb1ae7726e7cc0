"""Run code that a model (or a template filled from a question) wrote, so the worst it can do is fail.

``run_code(code, inputs, limits)`` starts a fresh ``python -I`` child for every call, never the
agent's own interpreter: datasets arrive read-only and preloaded as ``df`` / ``datasets[name]``
(pandas DataFrames; ``pd`` and ``np`` imported), the code sets ``result`` (and optionally
``figure``, a Vega-Lite dict, or draws with matplotlib), and everything comes back as data in an
:class:`ExecutionResult` — one JSON document, never a pickle. Whatever the code does (crash, loop,
fork, exit, flood stdout) ends as ``ok=False`` with the error, not as an exception here.

Limits always apply (wall clock with the whole process group killed, CPU, address space, file
size, open files, processes, a scratch folder deleted afterwards, a scrubbed environment); the
isolation layers on top are the best this machine allows (see :mod:`agents.base.sandbox_probe`)
and are listed in ``ExecutionResult.layers``. ``isolation="no-namespaces"`` (or the environment
variable ``WHYFLOW_SANDBOX_ISOLATION``) forces the namespace layers off, ``"limits-only"`` all.
"""

from __future__ import annotations

import base64
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agents.base.errors import DataError

__all__ = [
    "ExecutionResult",
    "Figure",
    "Isolation",
    "Limits",
    "SandboxInputError",
    "run_code",
]

Isolation = Literal["best", "no-namespaces", "limits-only"]
ISOLATION_ENV = "WHYFLOW_SANDBOX_ISOLATION"
_STARTUP_SECONDS = 60.0  # interpreter + pandas start, before the code's own wall clock begins
_GRACE_SECONDS = 0.2  # after the child exits, to drain its pipes
_READY = b"\x06"


class SandboxInputError(DataError):
    """A dataset given to ``run_code`` is missing, unreadable or of an unknown format."""


class Limits(BaseModel):
    """What one run may use. The defaults suit an interactive question on a laptop-sized table."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    wall_seconds: float = Field(30.0, gt=0)
    cpu_seconds: int = Field(60, ge=1)
    memory_bytes: int = Field(2 * 1024**3, ge=256 * 1024**2)
    file_size_bytes: int = Field(256 * 1024**2, ge=0)
    open_files: int = Field(256, ge=16)
    processes: int = Field(64, ge=1)
    output_chars: int = Field(20_000, ge=0)
    max_rows: int = Field(10_000, ge=0, description="rows of a table result sent back (row_count says how many)")
    max_figures: int = Field(8, ge=0)
    result_bytes: int = Field(16 * 1024**2, ge=1024, description="size of the result as JSON")
    figure_bytes: int = Field(8 * 1024**2, ge=1024, description="size of one PNG figure")


class Figure(BaseModel):
    """A figure the code made: a Vega-Lite spec, or a PNG (a file in ``figures_dir``, else inline)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["vega-lite", "png"]
    spec: dict[str, Any] | None = None
    png_path: str | None = None
    png_base64: str | None = None


class ExecutionResult(BaseModel):
    """Everything a run produced, as data."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ok: bool
    result: Any = None
    result_kind: Literal["none", "scalar", "list", "dict", "table"] = "none"
    figures: list[Figure] = Field(default_factory=list)
    stdout: str = ""
    stderr: str = ""
    truncated: bool = False
    error: str | None = None
    traceback: str | None = None
    wall_seconds: float = 0.0
    cpu_seconds: float = 0.0
    timed_out: bool = False
    layers: list[str] = Field(default_factory=list)
    overhead_seconds: float = 0.0


@dataclass
class _Stream:
    limit: int
    chunks: list[bytes] = field(default_factory=list)
    kept: int = 0
    dropped: int = 0

    def feed(self, data: bytes) -> None:
        room = self.limit - self.kept
        if room > 0:
            self.chunks.append(data[:room])
            self.kept += min(room, len(data))
        self.dropped += max(0, len(data) - max(room, 0))

    def text(self, chars: int) -> tuple[str, bool]:
        text = b"".join(self.chunks).decode("utf-8", errors="replace")
        return text[:chars], self.dropped > 0 or len(text) > chars


@dataclass
class _Plan:
    """The layers chosen for one run and what they need from the parent."""

    isolation: Isolation
    prefix: list[str]
    layers: list[str]
    request: dict[str, Any]
    uid: int | None = None
    cgroup: Path | None = None


def _isolation(isolation: Isolation | None) -> Isolation:
    chosen = isolation or os.environ.get(ISOLATION_ENV) or "best"
    if chosen not in ("best", "no-namespaces", "limits-only"):
        raise ValueError(f"{ISOLATION_ENV} must be best, no-namespaces or limits-only, not '{chosen}'")
    return chosen  # type: ignore[return-value]


def _datasets(inputs: Mapping[str, str | Path] | None) -> list[tuple[str, Path, str]]:
    out: list[tuple[str, Path, str]] = []
    for name, raw in (inputs or {}).items():
        path = Path(raw).expanduser().resolve()
        if not path.is_file():
            raise SandboxInputError(f"dataset '{name}': {raw} is not a file")
        if not os.access(path, os.R_OK):
            raise SandboxInputError(f"dataset '{name}': {raw} is not readable")
        suffix = path.suffix.lower()
        fmt = "parquet" if suffix in (".parquet", ".pq") else "csv" if suffix in (".csv", ".txt", ".tsv", ".gz") else ""
        if not fmt:
            raise SandboxInputError(f"dataset '{name}': {raw} is neither CSV nor Parquet")
        out.append((str(name), path, fmt))
    return out


def _environment(scratch: Path) -> dict[str, str]:
    """A scrubbed environment: nothing of the parent's (no API keys), only what libraries need."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(scratch),
        "TMPDIR": str(scratch),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": str(scratch / ".matplotlib"),
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
    }


def _plan(isolation: Isolation, scratch: Path, datasets: list[tuple[str, Path, str]], limits: Limits) -> _Plan:
    from agents.base import sandbox_probe as probe_mod

    caps = probe_mod.probe()
    layers = ["rlimits", "scrubbed-env", "scratch-dir"]
    prefix: list[str] = []
    binds: list[tuple[str, str]] = []
    paths = [str(p) for _, p, _ in datasets]
    namespaces = isolation == "best"
    if namespaces and caps.bwrap:
        binds = [(str(p), f"/data/input-{i}{p.suffix.lower()}") for i, (_, p, _) in enumerate(datasets)]
        paths = [target for _, target in binds]
        prefix = probe_mod.bwrap_argv(scratch, binds, root=caps.root)
        layers += ["bwrap", "no-network", "private-tmp", "read-only-system", "pid-namespace"]
    elif namespaces and caps.unshare:
        prefix = probe_mod.unshare_argv(root=caps.root)
        layers += ["unshare", "no-network", "pid-namespace"]
    plan = _Plan(isolation, prefix, layers, {})
    confined = isolation != "limits-only"
    if caps.root and (caps.bwrap and prefix[:1] == ["bwrap"] or caps.uid_drop_outside_namespaces):
        plan.uid = probe_mod.run_uid()
    elif caps.root and caps.cgroup_pids:
        plan.cgroup = probe_mod.cgroup_create(f"run-{os.getpid()}-{time.monotonic_ns()}", limits.processes)
    read = probe_mod.child_read_paths() + paths
    plan.request = {
        "datasets": [{"name": n, "path": p, "format": f} for (n, _, f), p in zip(datasets, paths, strict=True)],
        "scratch": str(scratch),
        "drop_uid": plan.uid,
        "drop_gid": plan.uid,
        "nproc": _nproc(caps.root, plan.uid, limits.processes),
        "cgroup_procs": [str(plan.cgroup / "cgroup.procs")] if plan.cgroup else [],
        "landlock": {"read": read, "write": [str(scratch)], "devices": probe_mod.device_paths()}
        if confined and caps.landlock_abi >= 1
        else None,
        "seccomp": confined and caps.seccomp,
    }
    if plan.uid is not None:
        os.chown(scratch, plan.uid, plan.uid)
    return plan


def _nproc(root: bool, uid: int | None, processes: int) -> int | None:
    """RLIMIT_NPROC counts every task of the uid: the run's own uid, else the user's (not root's)."""
    if uid is not None:
        return processes
    if root:
        return None  # ignored for root: a pids cgroup limits the run instead, where there is one
    from agents.base.sandbox_probe import count_user_tasks

    return count_user_tasks(os.getuid()) + processes


def _kill(proc: subprocess.Popen[bytes], plan: _Plan) -> None:
    """Kill the run's process group, and every process of its throw-away uid or cgroup."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    if plan.cgroup is not None:
        from agents.base.sandbox_probe import cgroup_destroy

        cgroup_destroy(plan.cgroup)
    if plan.uid is not None:
        _kill_uid(plan.uid)


def _kill_uid(uid: int) -> None:
    for _ in range(100):
        pids = []
        for entry in os.scandir("/proc"):
            try:
                if entry.name.isdigit() and entry.stat().st_uid == uid:
                    pids.append(int(entry.name))
            except OSError:
                continue
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.01)


def _sweep_uid(uid: int) -> None:
    """Remove what a throw-away uid left in the shared temporary folders (only it owned them)."""
    for top in ("/tmp", "/var/tmp", "/dev/shm"):
        try:
            entries = list(os.scandir(top))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.stat(follow_symlinks=False).st_uid != uid:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    os.unlink(entry.path)
            except OSError:
                continue


@dataclass
class _Outcome:
    report: bytes = b""
    ready_at: float | None = None
    ended_at: float = 0.0
    timed_out: bool = False
    status: int | None = None
    rusage: Any = None


def _supervise(proc: subprocess.Popen[bytes], result_fd: int, limits: Limits, plan: _Plan, started: float) -> tuple[_Outcome, _Stream, _Stream]:
    """Read the child's three pipes until it is done or out of time; then kill its group."""
    out, err = _Stream(limits.output_chars * 4), _Stream(limits.output_chars * 4)
    outcome = _Outcome()
    report = bytearray()
    sel = selectors.DefaultSelector()
    assert proc.stdout is not None and proc.stderr is not None
    sel.register(proc.stdout, selectors.EVENT_READ, out.feed)
    sel.register(proc.stderr, selectors.EVENT_READ, err.feed)
    sel.register(result_fd, selectors.EVENT_READ, report.extend)
    exited_at: float | None = None
    while sel.get_map():
        now = time.monotonic()
        deadline = (outcome.ready_at + limits.wall_seconds) if outcome.ready_at else started + _STARTUP_SECONDS + limits.wall_seconds
        if exited_at is None and outcome.status is None:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                outcome.status, outcome.rusage, exited_at = status, usage, now
        if exited_at is not None and now > exited_at + _GRACE_SECONDS:
            break
        if now >= deadline:
            outcome.timed_out = True
            break
        for key, _ in sel.select(timeout=min(0.05, max(0.0, deadline - now))):
            data = os.read(key.fd, 1 << 16)
            if not data:
                sel.unregister(key.fileobj)
                continue
            if key.fd == result_fd and outcome.ready_at is None and data[:1] == _READY:
                outcome.ready_at, data = time.monotonic(), data[1:]
            key.data(data)
    outcome.ended_at = time.monotonic()
    sel.close()
    _kill(proc, plan)
    if outcome.status is None:
        _, outcome.status, outcome.rusage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(outcome.status)
    outcome.report = bytes(report)
    return outcome, out, err


def _figures(raw: list[dict[str, Any]], scratch: Path, limits: Limits, figures_dir: Path | None) -> list[Figure]:
    figures: list[Figure] = []
    for item in raw[: limits.max_figures]:
        if item.get("kind") == "vega-lite" and isinstance(item.get("spec"), dict):
            figures.append(Figure(kind="vega-lite", spec=item["spec"]))
            continue
        name = str(item.get("file", ""))
        path = scratch / name
        if "/" in name or not path.is_file() or path.is_symlink() or path.stat().st_size > limits.figure_bytes:
            continue
        data = path.read_bytes()
        if not data.startswith(b"\x89PNG\r\n\x1a\n"):
            continue
        if figures_dir is None:
            figures.append(Figure(kind="png", png_base64=base64.b64encode(data).decode()))
        else:
            figures_dir.mkdir(parents=True, exist_ok=True)
            target = Path(tempfile.mkstemp(prefix="figure-", suffix=".png", dir=figures_dir)[1])
            target.write_bytes(data)
            figures.append(Figure(kind="png", png_path=str(target)))
    return figures


def _split_report(raw: bytes) -> tuple[list[Any], bytes]:
    """The child's stream after the ready byte: a line of active layers, then the report."""
    line, _, body = raw.partition(b"\n")
    try:
        layers = json.loads(line.decode()) if line.strip() else []
    except (ValueError, UnicodeDecodeError):
        layers = []
    return (layers if isinstance(layers, list) else []), body


def _signal_name(status: int | None, wrapped: bool) -> str:
    """How the child ended; bwrap and unshare report a signal death as exit code 128 + N."""
    if status is None:
        return "unknown"
    code = os.waitstatus_to_exitcode(status)
    if wrapped and code > 128:
        code = 128 - code
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"


def _assemble(outcome: _Outcome, out: _Stream, err: _Stream, plan: _Plan, limits: Limits, scratch: Path, figures_dir: Path | None, started: float) -> ExecutionResult:
    stdout, cut_out = out.text(limits.output_chars)
    stderr, cut_err = err.text(limits.output_chars)
    header, body = _split_report(outcome.report if outcome.ready_at else b"\n" + outcome.report)
    report: dict[str, Any] = {}
    try:
        report = json.loads(body.decode()) if body.strip() else {}
    except (ValueError, UnicodeDecodeError):
        report = {}
    report = report if isinstance(report, dict) else {}
    child_layers = [str(x) for x in report.get("layers", header) if isinstance(x, str)]
    layers = list(dict.fromkeys(plan.layers + child_layers))
    usage_cpu = (outcome.rusage.ru_utime + outcome.rusage.ru_stime) if outcome.rusage else 0.0
    wall = outcome.ended_at - (outcome.ready_at or started)
    common: dict[str, Any] = {
        "stdout": stdout,
        "stderr": stderr,
        "wall_seconds": round(wall, 4),
        "cpu_seconds": round(float(report.get("cpu_seconds") or usage_cpu), 4),
        "layers": layers,
        "timed_out": outcome.timed_out,
    }
    if outcome.timed_out:
        what = f"{limits.wall_seconds:g} s wall-clock limit" if outcome.ready_at else "start-up time limit"
        return ExecutionResult(ok=False, error=f"the code ran past its {what} and was killed", truncated=cut_out or cut_err, **common)
    if not report or "ok" not in report:
        ended = _signal_name(outcome.status, bool(plan.prefix))
        why = f"the sandboxed process ended ({ended}) without reporting a result"
        if ended in ("signal SIGXCPU", "signal SIGKILL"):
            why += f" (CPU limit {limits.cpu_seconds} s or memory exhausted)"
        return ExecutionResult(ok=False, error=why, truncated=cut_out or cut_err, **common)
    ok = bool(report.get("ok"))
    kind = report.get("result_kind", "none") if ok else "none"
    return ExecutionResult(
        ok=ok,
        result=report.get("result") if ok else None,
        result_kind=kind if kind in ("none", "scalar", "list", "dict", "table") else "none",
        figures=_figures(report.get("figures") or [], scratch, limits, figures_dir) if ok else [],
        truncated=bool(report.get("truncated")) or cut_out or cut_err,
        error=None if ok else str(report.get("error") or "the code failed"),
        traceback=None if ok else report.get("traceback"),
        **common,
    )


def run_code(
    code: str,
    inputs: Mapping[str, str | Path] | None = None,
    limits: Limits | None = None,
    *,
    isolation: Isolation | None = None,
    figures_dir: str | Path | None = None,
) -> ExecutionResult:
    """Run ``code`` in a fresh sandboxed child and return what it produced.

    ``inputs`` maps dataset names to CSV or Parquet files (read-only in the child; the first is
    also ``df``). PNG figures are copied into ``figures_dir`` when given, else returned inline
    as base64. Raises only :class:`SandboxInputError` for a bad ``inputs`` entry and
    ``ValueError`` for an unknown ``isolation``; everything the code does comes back as data.
    """
    limits = limits or Limits()
    mode = _isolation(isolation)
    datasets = _datasets(inputs)
    started = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="whyflow-sandbox-"))
    plan: _Plan | None = None
    try:
        plan = _plan(mode, scratch, datasets, limits)
        read_fd, write_fd = os.pipe()
        request = dict(plan.request, code=code, result_fd=write_fd, limits=limits.model_dump())
        request_path = scratch / ".request.json"
        request_path.write_text(json.dumps(request))
        if plan.uid is not None:
            os.chown(request_path, plan.uid, plan.uid)
        argv = [*plan.prefix, sys.executable, "-I", str(_child_script()), str(request_path)]
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(write_fd,),
                env=_environment(scratch),
                cwd=scratch,
                start_new_session=True,
            )
        finally:
            os.close(write_fd)
        try:
            outcome, out, err = _supervise(proc, read_fd, limits, plan, started)
        finally:
            os.close(read_fd)
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
        result = _assemble(outcome, out, err, plan, limits, scratch, Path(figures_dir) if figures_dir else None, started)
        overhead = max(0.0, time.monotonic() - started - result.wall_seconds)
        return result.model_copy(update={"overhead_seconds": round(overhead, 4)})
    finally:
        if plan is not None and plan.cgroup is not None:
            from agents.base.sandbox_probe import cgroup_destroy

            cgroup_destroy(plan.cgroup)
        if plan is not None and plan.uid is not None:
            _sweep_uid(plan.uid)
        shutil.rmtree(scratch, ignore_errors=True)


def _child_script() -> Path:
    from agents.base.sandbox_probe import CHILD_SCRIPT

    return CHILD_SCRIPT
