"""Run code that a model (or a template filled from a question) wrote, so the worst it can do is fail.

``run_code(code, inputs, limits)`` starts a fresh ``python -I`` child for every call, never the
agent's own interpreter: datasets arrive read-only and preloaded as ``df`` / ``datasets[name]``
(pandas DataFrames; ``pd`` and ``np`` imported), the code sets ``result`` (and optionally
``figure``, a Vega-Lite dict, or draws with matplotlib), and everything comes back as data in an
:class:`ExecutionResult` — one JSON document, never a pickle. Whatever the code does (crash, loop,
fork, exit, flood stdout) ends as ``ok=False`` with the error, not as an exception here.

Limits always apply (wall clock with the whole process group killed, CPU, address space, file
size, open files, processes, a scratch folder deleted afterwards, a scrubbed environment); the
isolation layers on top are the best this machine allows (see :mod:`whyflow.runtime.sandbox.probe`)
and are listed in ``ExecutionResult.layers``. ``isolation="no-namespaces"`` (or the environment
variable ``WHYFLOW_SANDBOX_ISOLATION``) forces the namespace layers off, ``"limits-only"`` all.

By default a run is forked from a warm template interpreter (:mod:`whyflow.runtime.sandbox.server`)
that has the scientific stack imported, which turns a 1–2 s start into tens of milliseconds; the
template never runs generated code, and each fork confines itself exactly as a cold child does.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from whyflow.core.errors import DataError

if TYPE_CHECKING:
    from whyflow.runtime.sandbox.process import Outcome, Plan, Stream
    from whyflow.runtime.sandbox.server import Template

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
WARM_ENV = "WHYFLOW_SANDBOX_WARM"


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
    scratch_bytes: int = Field(1024**3, ge=1024**2, description="all files in the scratch folder together")


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
    """The isolation layers that were active for this run (``whyflow doctor`` explains each)."""
    overhead_seconds: float = 0.0
    """Seconds the call took beyond ``wall_seconds``: setting up the isolation, starting the child, reading its report."""


def _isolation(isolation: Isolation | None) -> Isolation:
    chosen = isolation or os.environ.get(ISOLATION_ENV) or "best"
    if chosen not in ("best", "no-namespaces", "limits-only"):
        raise ValueError(f"{ISOLATION_ENV} must be best, no-namespaces or limits-only, not '{chosen}'")
    return chosen  # type: ignore[return-value]


_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".txt": "csv", ".tsv": "tsv", ".tab": "tsv"}


def _format(path: Path) -> str:
    """``csv``, ``tsv`` or ``parquet``, with ``.gz`` for a gzipped text file; "" if unknown."""
    suffixes = [s.lower() for s in path.suffixes[-2:]]
    if suffixes[-1:] == [".gz"]:
        inner = _FORMATS.get(suffixes[0], "") if len(suffixes) == 2 else "csv"
        return f"{inner}.gz" if inner in ("csv", "tsv") else ""
    return _FORMATS.get(suffixes[-1], "") if suffixes else ""


def _datasets(inputs: Mapping[str, str | Path] | None) -> list[tuple[str, Path, str]]:
    out: list[tuple[str, Path, str]] = []
    for name, raw in (inputs or {}).items():
        path = Path(raw).expanduser().resolve()
        if not path.is_file():
            raise SandboxInputError(f"dataset '{name}': {raw} is not a file")
        if not os.access(path, os.R_OK):
            raise SandboxInputError(f"dataset '{name}': {raw} is not readable")
        fmt = _format(path)
        if not fmt:
            raise SandboxInputError(f"dataset '{name}': {raw} is neither CSV nor Parquet")
        out.append((str(name), path, fmt))
    return out


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


def _assemble(run: _Run, outcome: Outcome, out: Stream, err: Stream) -> ExecutionResult:
    """The child's report, its pipes and how it ended, as one result."""
    limits, started = run.limits, run.started
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
    layers = list(dict.fromkeys(run.plan.layers + (["warm-fork"] if run.template else []) + child_layers))
    wall = outcome.ended_at - (outcome.ready_at or started)
    common: dict[str, Any] = {
        "stdout": stdout,
        "stderr": stderr,
        "wall_seconds": round(wall, 4),
        "cpu_seconds": round(float(report.get("cpu_seconds") or outcome.cpu), 4),
        "layers": layers,
        "timed_out": outcome.timed_out,
    }
    if outcome.over_quota:
        error = f"the code wrote more than {limits.scratch_bytes} bytes (or 100,000 files) to its scratch folder and was killed"
        return ExecutionResult(ok=False, error=error, truncated=cut_out or cut_err, **common)
    if outcome.timed_out:
        what = f"{limits.wall_seconds:g} s wall-clock limit" if outcome.ready_at else "start-up time limit"
        return ExecutionResult(
            ok=False, error=f"the code ran past its {what} and was killed", truncated=cut_out or cut_err, **common
        )
    if not report or "ok" not in report:
        ended = _signal_name(outcome.status, bool(run.plan.namespace) and run.template is None)
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
        figures=_figures(report.get("figures") or [], run.scratch, limits, run.figures_dir) if ok else [],
        truncated=bool(report.get("truncated")) or cut_out or cut_err,
        error=None if ok else str(report.get("error") or "the code failed"),
        traceback=None if ok else report.get("traceback"),
        **common,
    )


@dataclass
class _Run:
    """One call of ``run_code``: its settings and the resources to release afterwards."""

    code: str
    datasets: list[tuple[str, Path, str]]
    limits: Limits
    plan: Plan
    template: Template | None
    scratch: Path
    figures_dir: Path | None
    started: float


def _warm(warm: bool | None) -> bool:
    if warm is not None:
        return warm
    return os.environ.get(WARM_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def _template(plan: Plan) -> Template | None:
    """The warm template for this plan's layers, locked for this run (None: start cold)."""
    from whyflow.runtime.sandbox import process as sp
    from whyflow.runtime.sandbox import server as sandbox_server
    from whyflow.runtime.sandbox.probe import CHILD_SCRIPT

    if not plan.warm_killable:
        return None
    key = (plan.isolation, plan.namespace, str(plan.caps.root), tempfile.gettempdir(), sys.executable)
    return sandbox_server.acquire(key, lambda root: plan.prefix(root, []), sp.environment, CHILD_SCRIPT)


def _request(run: _Run) -> tuple[dict[str, Any], list[tuple[str, str]], list[int]]:
    """The child's request, bubblewrap's dataset binds (cold), the dataset descriptors (warm)."""
    from whyflow.runtime.sandbox import process as sp

    binds: list[tuple[str, str]] = []
    fds: list[int] = []
    if run.template is not None:  # the template's view is fixed: datasets travel as descriptors
        fds = [os.open(path, os.O_RDONLY | os.O_CLOEXEC) for _, path, _ in run.datasets]
        paths: list[str] = []
        items = [{"name": name, "format": fmt} for name, _, fmt in run.datasets]
    else:
        if run.plan.namespace == "bwrap":
            binds = [(str(p), f"/data/input-{i}{p.suffix.lower()}") for i, (_, p, _) in enumerate(run.datasets)]
            paths = [target for _, target in binds]
        else:
            paths = [str(p) for _, p, _ in run.datasets]
        items = [
            {"name": name, "format": fmt, "path": path}
            for (name, _, fmt), path in zip(run.datasets, paths, strict=True)
        ]
    request = sp.request_for(run.plan, run.scratch, items, paths, run.limits.processes)
    request.update(code=run.code, limits=run.limits.model_dump())
    return request, binds, fds


def _execute(run: _Run) -> ExecutionResult:
    from whyflow.runtime.sandbox import process as sp
    from whyflow.runtime.sandbox.server import WarmChild

    if run.plan.uid is not None:
        os.chown(run.scratch, run.plan.uid, run.plan.uid)
    request, binds, data_fds = _request(run)
    pipes = [os.pipe() for _ in range(3)]
    reads = tuple(r for r, _ in pipes)
    writes = tuple(w for _, w in pipes)
    request["result_fd"] = writes[2]
    request_path = run.scratch / ".request.json"
    request_path.write_text(json.dumps(request))
    if run.plan.uid is not None:
        os.chown(request_path, run.plan.uid, run.plan.uid)
    child: sp.Child
    try:
        if run.template is not None:
            child = WarmChild(run.template, request_path, [*writes, *data_fds])
        else:
            argv = sp.child_argv(run.plan, run.scratch, binds, request_path)
            child = sp.ColdChild(argv, (writes[0], writes[1], writes[2]), sp.environment(run.scratch), run.scratch)
    except BaseException:
        for fd in reads:
            os.close(fd)
        raise
    finally:
        for fd in (*writes, *data_fds):
            os.close(fd)
    try:
        quota = sp.ScratchQuota(run.scratch, run.limits.scratch_bytes)
        outcome, out, err = sp.supervise(
            child, (reads[0], reads[1], reads[2]), run.limits, quota, run.plan, run.started
        )
    finally:
        for fd in reads:
            os.close(fd)
    return _assemble(run, outcome, out, err)


def run_code(
    code: str,
    inputs: Mapping[str, str | Path] | None = None,
    limits: Limits | None = None,
    *,
    isolation: Isolation | None = None,
    figures_dir: str | Path | None = None,
    warm: bool | None = None,
) -> ExecutionResult:
    """Run ``code`` in a fresh sandboxed child and return what it produced.

    ``inputs`` maps dataset names to CSV or Parquet files (read-only in the child; the first is
    also ``df``). PNG figures are copied into ``figures_dir`` when given, else returned inline
    as base64. ``warm`` (default on, ``WHYFLOW_SANDBOX_WARM=0`` turns it off) forks the child
    from a template interpreter that has pandas imported, instead of starting Python afresh.
    Raises only :class:`SandboxInputError` for a bad ``inputs`` entry and ``ValueError`` for an
    unknown ``isolation``; everything the code does comes back as data.
    """
    from whyflow.runtime.sandbox.server import TemplateError

    limits = limits or Limits()
    mode = _isolation(isolation)
    datasets = _datasets(inputs)
    started = time.monotonic()
    try:
        return _attempt(code, datasets, limits, mode, _warm(warm), figures_dir, started)
    except TemplateError:
        return _attempt(code, datasets, limits, mode, False, figures_dir, started)


def _attempt(
    code: str,
    datasets: list[tuple[str, Path, str]],
    limits: Limits,
    mode: Isolation,
    warm: bool,
    figures_dir: str | Path | None,
    started: float,
) -> ExecutionResult:
    """One try at a run, warm or cold; every resource it took is released before it returns."""
    from whyflow.runtime.sandbox import process as sp
    from whyflow.runtime.sandbox import server as sandbox_server

    plan: Plan | None = None
    template: Template | None = None
    scratch: Path | None = None
    try:
        plan = sp.choose(mode, limits.processes)
        template = _template(plan) if warm else None
        sp.sweep_stale(tempfile.gettempdir())
        scratch = Path(tempfile.mkdtemp(prefix=sp.scratch_prefix(), dir=template.root if template else None))
        run = _Run(code, datasets, limits, plan, template, scratch, Path(figures_dir) if figures_dir else None, started)
        try:
            result = _execute(run)
        except sandbox_server.TemplateError:
            assert template is not None
            template.lock.release()
            sandbox_server.discard(template)
            template = None
            raise
        overhead = max(0.0, time.monotonic() - started - result.wall_seconds)
        return result.model_copy(update={"overhead_seconds": round(overhead, 4)})
    finally:
        if scratch is not None:
            sp.cleanup(plan, scratch)
        elif plan is not None and plan.cgroup is not None:
            from whyflow.runtime.sandbox.probe import cgroup_destroy

            cgroup_destroy(plan.cgroup)
        if template is not None:
            template.lock.release()
