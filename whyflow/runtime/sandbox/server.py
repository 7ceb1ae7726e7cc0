"""Warm starts for the sandbox: a template interpreter with the scientific stack imported, forked
afresh for every run, so a run costs a fork instead of a Python + pandas start-up.

The template (``child.py --serve``) runs inside the same isolation prefix a cold child
would (bubblewrap, or none), never runs generated code, and is forked once per request; the fork
confines itself exactly as a cold child does. Nothing passes between runs: each one starts from
the template's pristine memory, with its own throw-away uid or pids cgroup, its own scratch
folder, and its datasets as read-only descriptors. One run at a time per template; a second
concurrent caller gets a cold start. Templates end with the parent (their socket closes).
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Template", "TemplateError", "WarmChild", "acquire", "discard", "shutdown"]

_START_SECONDS = 60.0


@dataclass
class Template:
    """One warm interpreter and the folder its runs' scratch folders live in."""

    key: tuple[str, ...]
    proc: subprocess.Popen[bytes]
    sock: socket.socket
    root: Path
    pid_namespace: bool
    lock: threading.Lock = field(default_factory=threading.Lock)
    owner: int = field(default_factory=os.getpid)

    def alive(self) -> bool:
        try:
            return self.proc.poll() is None
        except ChildProcessError:
            return False

    def close(self) -> None:
        if os.getpid() != self.owner:  # a forked copy of the parent: the template is not ours
            return
        try:
            self.sock.close()
        finally:
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            shutil.rmtree(self.root, ignore_errors=True)


_templates: dict[tuple[str, ...], Template] = {}
_registry_lock = threading.Lock()


def _start(
    key: tuple[str, ...],
    prefix_for: Callable[[Path], list[str]],
    env_for: Callable[[Path], dict[str, str]],
    child_script: Path,
) -> Template | None:
    root = Path(tempfile.mkdtemp(prefix=f"whyflow-sandbox-warm-{os.getpid()}-"))
    os.chmod(root, 0o711)  # each run's folder inside is private to its own uid
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    prefix = prefix_for(root)
    home = root / "template"  # the template's own caches (matplotlib's font list) live here
    home.mkdir()
    env = env_for(home)
    argv = [*prefix, sys.executable, "-I", str(child_script), "--serve", str(theirs.fileno())]
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(theirs.fileno(),),
            env=env,
            cwd="/",
            start_new_session=True,
        )
    except OSError:
        shutil.rmtree(root, ignore_errors=True)
        return None
    finally:
        theirs.close()
    ours.settimeout(_START_SECONDS)
    try:
        ok = ours.recv(64) == b"ready"
    except OSError:
        ok = False
    if not ok:
        ours.close()
        proc.kill()
        proc.wait()
        shutil.rmtree(root, ignore_errors=True)
        return None
    return Template(key, proc, ours, root, pid_namespace=bool(prefix))


def acquire(
    key: tuple[str, ...],
    prefix_for: Callable[[Path], list[str]],
    env_for: Callable[[Path], dict[str, str]],
    child_script: Path,
) -> Template | None:
    """The warm template for ``key``, locked for one run; None if it is busy or cannot start."""
    with _registry_lock:
        template = _templates.get(key)
        if template is not None and template.owner != os.getpid():
            del _templates[key]  # inherited through a fork of the parent: leave it to its owner
            template = None
        if template is not None and not template.alive():
            template.close()
            del _templates[key]
            template = None
        if template is None:
            template = _start(key, prefix_for, env_for, child_script)
            if template is None:
                return None
            _templates[key] = template
    return template if template.lock.acquire(blocking=False) else None


def shutdown() -> None:
    """Stop every warm template (also run at interpreter exit)."""
    with _registry_lock:
        for template in _templates.values():
            template.close()
        _templates.clear()


atexit.register(shutdown)


class TemplateError(OSError):
    """A warm template did not take a run (it died or answered nonsense); start cold instead."""


def discard(template: Template) -> None:
    """Stop a template that failed, so that the next run starts a new one."""
    with _registry_lock:
        if _templates.get(template.key) is template:
            del _templates[template.key]
    template.close()


class WarmChild:
    """A run forked from a template: its pid as the template sees it, and how it ended."""

    def __init__(self, template: Template, request_path: Path, fds: list[int]) -> None:
        self.template = template
        self.status: int | None = None
        self.cpu = 0.0
        template.sock.settimeout(_START_SECONDS)
        try:
            socket.send_fds(template.sock, [str(request_path).encode()], fds)
            reply = template.sock.recv(256).decode().split()
            while reply[:1] == ["exit"]:  # a late report of an earlier run's end
                reply = template.sock.recv(256).decode().split()
        except OSError as exc:
            raise TemplateError(f"the warm sandbox template did not answer: {exc}") from exc
        if len(reply) != 2 or reply[0] != "pid":
            raise TemplateError(f"the warm sandbox template answered {reply!r}")
        self.pid = int(reply[1])

    def poll(self) -> int | None:
        """The wait status once the template reports the run's end, else None (never blocks)."""
        if self.status is None:
            self._read(block=False)
        return self.status

    def wait(self, timeout: float = 5.0) -> int | None:
        deadline = time.monotonic() + timeout
        while self.status is None and time.monotonic() < deadline:
            self._read(block=True, timeout=max(0.01, deadline - time.monotonic()))
        return self.status

    def kill_group(self) -> None:
        """Kill the run's session where its pid is ours to signal (no pid namespace in between)."""
        if not self.template.pid_namespace:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except OSError:
                pass

    def _read(self, block: bool, timeout: float = 0.0) -> None:
        sock = self.template.sock
        sock.settimeout(timeout if block else 0.0)
        try:
            while self.status is None:
                message = sock.recv(256).decode().split()
                if not message:
                    self.status = 0x7F00  # template gone: report an unknown end
                    return
                if message[0] == "exit" and int(message[1]) == self.pid:
                    self.status, self.cpu = int(message[2]), float(message[3])
        except (BlockingIOError, TimeoutError, InterruptedError):
            return
