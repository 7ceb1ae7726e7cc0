"""The parent's side of one sandboxed run: choose the layers, start the child (cold or warm),
watch its pipes against the clock, and kill everything it started.

Split from :mod:`whyflow.runtime.sandbox.run` (the public models and ``run_code``) so that each module
keeps to one idea: this one is processes, descriptors and signals.
"""

from __future__ import annotations

import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from whyflow.runtime.sandbox import probe as probe_mod

__all__ = [
    "ColdChild",
    "Outcome",
    "Plan",
    "ScratchQuota",
    "Stream",
    "choose",
    "cleanup",
    "environment",
    "request_for",
    "scratch_prefix",
    "supervise",
    "sweep_stale",
]

STARTUP_SECONDS = 60.0  # interpreter + pandas start, before the code's own wall clock begins
_GRACE_SECONDS = 0.2  # after the child exits, to drain its pipes
_READY = b"\x06"


@dataclass
class Stream:
    """The first ``limit`` bytes of a pipe; the rest is read and counted, never kept."""

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
class Plan:
    """The layers chosen for one run and what they need from the parent."""

    isolation: str
    namespace: str  # "bwrap", "unshare" or ""
    layers: list[str]
    caps: probe_mod.Capabilities
    uid: int | None = None
    cgroup: Path | None = None

    @property
    def warm_killable(self) -> bool:
        """Whether every process of a warm run can be found and killed from here."""
        return self.uid is not None or self.cgroup is not None or not self.namespace

    def prefix(self, scratch: Path, binds: list[tuple[str, str]]) -> list[str]:
        """The command prefix that puts the child in its namespaces (empty for none)."""
        if self.namespace == "bwrap":
            return probe_mod.bwrap_argv(scratch, binds, root=self.caps.root)
        if self.namespace == "unshare":
            return probe_mod.unshare_argv(root=self.caps.root)
        return []


class Child(Protocol):
    """A started run, cold (our own child) or warm (a template's fork)."""

    def poll(self) -> int | None: ...

    def wait(self, timeout: float = 5.0) -> int | None: ...

    def kill_group(self) -> None: ...


class ColdChild:
    """A fresh interpreter started for this run alone."""

    def __init__(self, argv: list[str], fds: tuple[int, int, int], env: dict[str, str], cwd: Path) -> None:
        out_fd, err_fd, result_fd = fds
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out_fd,
            stderr=err_fd,
            pass_fds=(result_fd,),
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
        self.pid = self.proc.pid
        self.status: int | None = None
        self.cpu = 0.0

    def _reap(self, flags: int) -> int | None:
        if self.status is None:
            pid, status, usage = os.wait4(self.pid, flags)
            if pid:
                self.status, self.cpu = status, usage.ru_utime + usage.ru_stime
                self.proc.returncode = os.waitstatus_to_exitcode(status)
        return self.status

    def poll(self) -> int | None:
        return self._reap(os.WNOHANG)

    def wait(self, timeout: float = 5.0) -> int | None:
        return self._reap(0)

    def kill_group(self) -> None:
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except OSError:
            pass


def choose(isolation: str, processes: int) -> Plan:
    """Pick the layers for one run from what the probe found."""
    caps = probe_mod.probe()
    layers = ["rlimits", "scrubbed-env", "scratch-dir"]
    namespace = ""
    if isolation == "best" and caps.bwrap:
        namespace = "bwrap"
        layers += ["bwrap", "no-network", "private-tmp", "read-only-system", "pid-namespace"]
    elif isolation == "best" and caps.unshare:
        namespace = "unshare"
        layers += ["unshare", "no-network", "pid-namespace"]
    plan = Plan(isolation, namespace, layers, caps)
    if caps.root and (namespace == "bwrap" or caps.uid_drop_outside_namespaces):
        plan.uid = probe_mod.run_uid()
    elif caps.root and caps.cgroup_pids:
        plan.cgroup = probe_mod.cgroup_create(f"run-{os.getpid()}-{time.monotonic_ns()}", processes)
    return plan


def environment(scratch: Path) -> dict[str, str]:
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


def _nproc(plan: Plan, processes: int) -> int | None:
    """RLIMIT_NPROC counts every task of the uid: the run's own uid, else the user's (not root's)."""
    if plan.uid is not None:
        return processes
    if plan.caps.root:
        return None  # ignored for root: a pids cgroup limits the run instead, where there is one
    return probe_mod.count_user_tasks(os.getuid()) + processes


def request_for(
    plan: Plan, scratch: Path, datasets: list[dict[str, str]], data_paths: list[str], processes: int
) -> dict[str, Any]:
    """What the child needs to confine itself (everything but the code and limits)."""
    confined = plan.isolation != "limits-only"
    read = probe_mod.child_read_paths() + data_paths
    return {
        "datasets": datasets,
        "scratch": str(scratch),
        "env": environment(scratch),
        "drop_uid": plan.uid,
        "drop_gid": plan.uid,
        "nproc": _nproc(plan, processes),
        "cgroup_procs": [str(plan.cgroup / "cgroup.procs")] if plan.cgroup else [],
        "landlock": {"read": read, "write": [str(scratch)], "devices": probe_mod.device_paths()}
        if confined and plan.caps.landlock_abi >= 1
        else None,
        "seccomp": confined and plan.caps.seccomp,
        "protected_pids": [] if plan.namespace else [os.getpid()],  # pids as the child sees them
    }


def kill_all(child: Child, plan: Plan) -> None:
    """Kill the run's process group, and every process of its throw-away uid or cgroup."""
    child.kill_group()
    if plan.cgroup is not None:
        probe_mod.cgroup_destroy(plan.cgroup)
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


_STALE = re.compile(r"^whyflow-sandbox-(?:warm-)?(\d+)-")
_swept: set[str] = set()


def scratch_prefix(kind: str = "") -> str:
    """Folder-name prefix with the owner's pid, so that a later process can tell a stale one."""
    return f"whyflow-sandbox-{kind}{os.getpid()}-"


def sweep_stale(parent: str) -> None:
    """Once per process and folder: remove scratch folders whose owning process is gone (it was
    killed before it could clean up; its template and runs died with it)."""
    if parent in _swept:
        return
    _swept.add(parent)
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return
    for entry in entries:
        match = _STALE.match(entry.name)
        if not match or int(match.group(1)) == os.getpid():
            continue
        try:
            os.kill(int(match.group(1)), 0)
        except ProcessLookupError:
            shutil.rmtree(entry.path, ignore_errors=True)
        except OSError:
            continue


def cleanup(plan: Plan | None, scratch: Path) -> None:
    """Remove the scratch folder, the cgroup, and whatever the throw-away uid left in /tmp."""
    if plan is not None and plan.cgroup is not None:
        probe_mod.cgroup_destroy(plan.cgroup)
    if plan is not None and plan.uid is not None:
        _sweep_uid(plan.uid)
    shutil.rmtree(scratch, ignore_errors=True)


def _sweep_uid(uid: int) -> None:
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
class Outcome:
    """How the run ended, as the parent saw it."""

    report: bytes = b""
    ready_at: float | None = None
    ended_at: float = 0.0
    timed_out: bool = False
    over_quota: bool = False
    status: int | None = None
    cpu: float = 0.0


class ScratchQuota:
    """Checks, a few times a second, that the scratch folder stays under its size and file count
    (the per-file size limit alone would let the code fill the disk with many files)."""

    MAX_FILES = 100_000
    EVERY = 0.25

    def __init__(self, scratch: Path, max_bytes: int) -> None:
        self.scratch, self.max_bytes, self.next_check = scratch, max_bytes, 0.0

    def exceeded(self, now: float) -> bool:
        if now < self.next_check:
            return False
        self.next_check = now + self.EVERY
        used, files = 0, 0
        for folder, _, names in os.walk(self.scratch):
            for name in names:
                try:
                    used += os.lstat(os.path.join(folder, name)).st_blocks * 512
                except OSError:
                    continue
            files += len(names)
            if used > self.max_bytes or files > self.MAX_FILES:
                return True
        return False


def supervise(
    child: Child, fds: tuple[int, int, int], limits: Any, quota: ScratchQuota, plan: Plan, started: float
) -> tuple[Outcome, Stream, Stream]:
    """Read the child's three pipes until it is done, out of time or over its scratch quota;
    then kill everything it started."""
    wall_seconds = limits.wall_seconds
    out, err = Stream(limits.output_chars * 4), Stream(limits.output_chars * 4)
    outcome = Outcome()
    report = bytearray()
    result_fd = fds[2]
    sel = selectors.DefaultSelector()
    for fd, sink in zip(fds, (out.feed, err.feed, report.extend), strict=True):
        sel.register(fd, selectors.EVENT_READ, sink)
    exited_at: float | None = None
    while sel.get_map():
        now = time.monotonic()
        deadline = (outcome.ready_at + wall_seconds) if outcome.ready_at else started + STARTUP_SECONDS + wall_seconds
        if exited_at is None and child.poll() is not None:
            exited_at = now
        if exited_at is not None and now > exited_at + _GRACE_SECONDS:
            break  # something it started still holds the pipes: it is killed below
        if now >= deadline:
            outcome.timed_out = True
            break
        if quota.exceeded(now):
            outcome.over_quota = True
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
    kill_all(child, plan)
    outcome.status = child.wait()
    outcome.cpu = float(getattr(child, "cpu", 0.0))
    outcome.report = bytes(report)
    return outcome, out, err


def child_argv(plan: Plan, scratch: Path, binds: list[tuple[str, str]], request_path: Path) -> list[str]:
    """The command line of a cold child."""
    return [*plan.prefix(scratch, binds), sys.executable, "-I", str(probe_mod.CHILD_SCRIPT), str(request_path)]
