"""The unprivileged layers on their own, each in a throw-away interpreter: the seccomp filter and
Landlock refuse what they should and allow what ordinary code needs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from whyflow.runtime.sandbox import confine

ROOT = Path(__file__).resolve().parents[2]


def _in_child(setup: str, probes: str) -> dict[str, str]:
    """Run ``setup`` then each probe in a fresh interpreter; what each probe raised, or 'ok'."""
    script = (
        "import ctypes, json, os, signal, socket, sys\n"
        "from whyflow.runtime.sandbox import confine\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "def unshare():\n    if libc.unshare(0x10000000) != 0:\n        raise OSError(ctypes.get_errno(), 'unshare')\n"
        "def fork_and_wait():\n    pid = os.fork()\n    if pid == 0:\n        os._exit(0)\n    os.waitpid(pid, 0)\n"
        f"{setup}\n"
        "out = {}\n"
        f"for name, probe in {probes}:\n"
        "    try:\n        probe()\n        out[name] = 'ok'\n"
        "    except OSError as exc:\n        out[name] = type(exc).__name__\n"
        "print(json.dumps(out))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    return json.loads(done.stdout)


@pytest.mark.skipif(not confine.seccomp_available(), reason="no seccomp filters here (kernel or architecture)")
def test_seccomp_refuses_sockets_namespaces_and_signals_to_others() -> None:
    probes = (
        "[('inet', lambda: socket.socket(socket.AF_INET)), ('unix', lambda: socket.socket(socket.AF_UNIX)),"
        " ('socketpair', socket.socketpair), ('unshare', unshare),"
        " ('setsid', os.setsid), ('kill parent', lambda: os.kill(os.getppid(), 0)),"
        " ('kill all', lambda: os.kill(-1, 0)), ('kill self', lambda: os.kill(os.getpid(), 0)),"
        " ('fork', fork_and_wait)]"
    )
    out = _in_child("confine.seccomp_restrict()", probes)
    assert out["inet"] == out["unix"] == "PermissionError"
    assert out["unshare"] == out["setsid"] == "PermissionError"
    assert out["kill parent"] == out["kill all"] == "PermissionError"
    assert out["socketpair"] == out["kill self"] == out["fork"] == "ok"


@pytest.mark.skipif(confine.landlock_abi() < 1, reason="no Landlock in this kernel")
def test_landlock_allows_only_the_listed_paths(tmp_path: Path) -> None:
    allowed, other = tmp_path / "allowed", tmp_path / "other"
    allowed.mkdir()
    other.mkdir()
    (other / "secret.txt").write_text("x")
    read = [sys.prefix, sys.base_prefix, "/usr", "/lib", "/lib64", "/etc/ld.so.cache", str(ROOT / "agents")]
    setup = f"confine.landlock_restrict({read!r}, [{str(allowed)!r}], ['/dev/null'])"
    probes = (
        f"[('write allowed', lambda: open({str(allowed / 'a.txt')!r}, 'w').write('x')),"
        f" ('read other', lambda: open({str(other / 'secret.txt')!r}).read()),"
        f" ('write other', lambda: open({str(other / 'b.txt')!r}, 'w')),"
        " ('read shadow', lambda: open('/etc/shadow').read()), ('devnull', lambda: open('/dev/null', 'w').write('x'))]"
    )
    out = _in_child(setup, probes)
    assert out == {
        "write allowed": "ok",
        "read other": "PermissionError",
        "write other": "PermissionError",
        "read shadow": "PermissionError",
        "devnull": "ok",
    }
    assert not (other / "b.txt").exists()
