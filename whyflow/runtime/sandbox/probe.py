"""Which isolation layers this machine allows, probed once, and the pieces that use them.

The sandbox layers its isolation from the best available down to limits only:
bubblewrap (namespaces: no network, a read-only view of the system, a private /tmp), else
``unshare`` (namespaces without a file-system view), then Landlock and seccomp (no privileges
needed), and rlimits always. Where the parent is root, the child also drops to a throw-away
uid (so that RLIMIT_NPROC counts, and nothing of root's is readable), or joins a pids cgroup
when its interpreter is not reachable by another uid.
"""

from __future__ import annotations

import functools
import os
import secrets
import shutil
import site
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "Capabilities",
    "CHILD_SCRIPT",
    "bwrap_argv",
    "cgroup_create",
    "cgroup_destroy",
    "child_read_paths",
    "count_user_tasks",
    "probe",
    "run_uid",
    "unshare_argv",
]

CHILD_SCRIPT = Path(__file__).resolve().with_name("child.py")
_CONFINE_SCRIPT = CHILD_SCRIPT.with_name("confine.py")
_ETC_FILES = ("ld.so.cache", "localtime", "passwd", "group", "nsswitch.conf", "fonts", "mime.types")
_DEVICES = ("/dev/null", "/dev/zero", "/dev/urandom", "/dev/random")
_CGROUP_PIDS = Path("/sys/fs/cgroup/pids")
_UID_BASE, _UID_SPAN = 1_900_000, 100_000


@dataclass(frozen=True)
class Capabilities:
    """What the start-up probe found; ``notes`` says why a layer is missing."""

    bwrap: bool
    unshare: bool
    landlock_abi: int
    seccomp: bool
    root: bool
    uid_drop_outside_namespaces: bool
    cgroup_pids: bool
    notes: tuple[str, ...]


def _python_dirs() -> list[str]:
    """Every directory the child interpreter reads: prefixes, the real executable, site-packages."""
    dirs = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    dirs.add(str(Path(sys.executable).resolve().parent.parent))
    paths = sysconfig.get_paths()
    dirs.update(paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths)
    dirs.update(site.getsitepackages())
    return sorted({str(Path(d).resolve()) for d in dirs if d and Path(d).exists()})


def _python_binds() -> list[str]:
    """The smallest set of python directories that covers all of ``_python_dirs``."""
    out: list[str] = []
    for d in _python_dirs():
        if not any(d == o or d.startswith(o.rstrip("/") + "/") for o in out):
            out.append(d)
    return out


def child_read_paths() -> list[str]:
    """What Landlock lets the child read (besides its datasets): system, Python, a few /etc files.

    Not /proc as a whole: other processes' ``environ`` stayed readable there for a root child
    (measured); the child adds its own ``/proc/<pid>``.
    """
    system = [
        p for p in ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/sys/devices/system/cpu") if os.path.exists(p)
    ]
    system += [p for p in ("/proc/cpuinfo", "/proc/meminfo", "/proc/stat") if os.path.exists(p)]
    etc = [f"/etc/{name}" for name in _ETC_FILES if os.path.exists(f"/etc/{name}")]
    return system + etc + _python_binds() + [str(CHILD_SCRIPT), str(_CONFINE_SCRIPT)]


def device_paths() -> list[str]:
    """Character devices the child may read and write."""
    return [d for d in _DEVICES if os.path.exists(d)]


def _world_traversable(path: str) -> bool:
    p = Path(path).resolve()
    for part in [p, *p.parents]:
        try:
            if not part.stat().st_mode & 0o001:
                return False
        except OSError:
            return False
    return True


def run_uid() -> int:
    """A fresh throw-away uid for one run (root only), so runs never count against each other."""
    return _UID_BASE + secrets.randbelow(_UID_SPAN)


def count_user_tasks(uid: int) -> int:
    """How many tasks (threads included) ``uid`` runs now: RLIMIT_NPROC counts them all."""
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    count += len(os.listdir(f"/proc/{entry.name}/task"))
            except OSError:
                continue
    return count


def _system_binds() -> list[str]:
    args: list[str] = []
    for top in ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for name in _ETC_FILES:
        if os.path.exists(f"/etc/{name}"):
            args += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    extra = [
        d
        for d in _python_binds()
        if not any(d == t or d.startswith(t + "/") for t in ("/usr", "/lib", "/lib64", "/bin"))
    ]
    # Folders above a bound Python (/root/.pyenv/...) must be traversable by the throw-away uid.
    ancestors = sorted({str(a) for d in extra for a in Path(d).parents if str(a) != "/"}, key=len)
    for folder in ancestors:
        args += ["--perms", "0755", "--dir", folder]
    for d in extra:
        args += ["--ro-bind", d, d]
    return args


def bwrap_argv(scratch: Path, binds: list[tuple[str, str]], *, root: bool) -> list[str]:
    """The bubblewrap prefix: no network, new pid/ipc/uts namespaces, read-only system and
    data, private /tmp, the scratch folder the only writable place."""
    args = ["bwrap", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if root:  # keep only what the child needs to drop to its throw-away uid
        args += [
            "--cap-drop",
            "ALL",
            "--cap-add",
            "CAP_SETUID",
            "--cap-add",
            "CAP_SETGID",
            "--cap-add",
            "CAP_DAC_OVERRIDE",
        ]
    else:
        args += ["--unshare-user"]
    args += ["--die-with-parent", "--new-session", "--hostname", "sandbox"]
    args += _system_binds()
    # A small private /tmp (it is memory): TMPDIR points at the scratch folder anyway.
    args += ["--proc", "/proc", "--dev", "/dev", "--size", str(16 * 1024**2), "--tmpfs", "/tmp", "--dir", "/data"]
    for script in (CHILD_SCRIPT, _CONFINE_SCRIPT):
        args += ["--ro-bind", str(script), str(script)]
    for source, target in binds:
        args += ["--ro-bind", source, target]
    args += ["--bind", str(scratch), str(scratch), "--chdir", str(scratch), "--"]
    return args


def unshare_argv(*, root: bool) -> list[str]:
    """The util-linux ``unshare`` prefix: no network, own pid namespace (killed with its init)."""
    args = ["unshare", "--net", "--pid", "--fork", "--mount-proc", "--ipc", "--uts", "--kill-child"]
    return args + ([] if root else ["--map-root-user"]) + ["--"]


def cgroup_create(name: str, max_pids: int) -> Path | None:
    """A v1 pids cgroup limiting a run's processes; None where it cannot be made."""
    group = _CGROUP_PIDS / "whyflow-sandbox" / name
    try:
        group.mkdir(parents=True)
        (group / "pids.max").write_text(str(max_pids))
    except OSError:
        cgroup_destroy(group)
        return None
    return group


def cgroup_destroy(group: Path) -> None:
    """Kill every process left in the cgroup, then remove it."""
    import signal
    import time

    for _ in range(50):
        try:
            pids = [int(p) for p in (group / "cgroup.procs").read_text().split()]
        except OSError:
            pids = []
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.01)
    try:
        group.rmdir()
    except OSError:
        pass


def _works(argv: list[str]) -> tuple[bool, str]:
    """Whether ``argv`` runs and exits 0, and the last line it printed (the reason, if not)."""
    try:
        done = subprocess.run(argv, capture_output=True, timeout=20, text=True, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        return False, str(exc)
    lines = (done.stderr or done.stdout).strip().splitlines()
    return done.returncode == 0, lines[-1] if lines else ""


@functools.lru_cache(maxsize=1)
def probe() -> Capabilities:
    """Try each layer once (a few hundred milliseconds) and remember the answer."""
    from whyflow.runtime.sandbox import confine

    notes: list[str] = []
    root = os.geteuid() == 0
    check = [sys.executable, "-I", "-c", "import socket, sys; sys.exit(0)"]
    bwrap = shutil.which("bwrap") is not None
    if bwrap:
        with _TempDir() as tmp:
            bwrap, why = _works(bwrap_argv(tmp, [], root=root) + check)
        if not bwrap:
            notes.append(f"bubblewrap is installed but cannot start a sandbox here: {why}")
    else:
        notes.append("bubblewrap (bwrap) is not installed: apt-get install bubblewrap")
    unshare = shutil.which("unshare") is not None
    if unshare:
        unshare, why = _works(unshare_argv(root=root) + check)
        if not unshare:
            notes.append(f"unshare cannot create namespaces here: {why}")
    abi = confine.landlock_abi()
    if abi < 1:
        notes.append("Landlock is not available in this kernel")
    seccomp = confine.seccomp_available()
    if not seccomp:
        notes.append("seccomp filters are not available (kernel or architecture)")
    cgroup = False
    if root and _CGROUP_PIDS.is_dir():
        group = cgroup_create(f"probe-{os.getpid()}", 8)
        cgroup = group is not None
        if group is not None:
            cgroup_destroy(group)
    uid_drop = root and all(_world_traversable(d) for d in _python_dirs())
    return Capabilities(bwrap, unshare, abi, seccomp, root, uid_drop, cgroup, tuple(notes))


class _TempDir:
    def __enter__(self) -> Path:
        import tempfile

        self.path = Path(tempfile.mkdtemp(prefix="whyflow-probe-"))
        return self.path

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
