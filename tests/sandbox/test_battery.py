"""The hostile-code battery of issue 14, under the best isolation and with namespaces forced off.

Every case must end as a clean failure (or a harmless success) within its limit; afterwards the
parent is unharmed, the input file is byte-identical, no process the code started is alive and
nothing is left in the temporary folders. Each case also asserts what it specifically tried.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from whyflow.runtime.sandbox import server as sandbox_server
from whyflow.runtime.sandbox.probe import probe
from whyflow.runtime.sandbox.run import ExecutionResult, Limits, run_code

CANARY = "sk-whyflow-canary-7f3a9c"
ISOLATIONS = ["best", "no-namespaces"]


@dataclass
class World:
    """What a case may attack, and what must be unchanged afterwards."""

    data: Path
    data_digest: str
    home: Path
    scratch_parent: Path
    listener: socket.socket
    marker: str

    def fill(self, code: str) -> str:
        return (
            code.replace("@DATA@", str(self.data))
            .replace("@HOME@", str(self.home))
            .replace("@PORT@", str(self.listener.getsockname()[1]))
            .replace("@MARKER@", self.marker)
        )


@pytest.fixture(scope="module")
def scratch_parent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Where this module's runs (and their warm templates) keep their scratch folders."""
    parent = tmp_path_factory.mktemp("sandbox-scratch")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tempfile, "tempdir", str(parent))
        yield parent
        sandbox_server.shutdown()
    assert list(parent.iterdir()) == [], "a warm template left its folder behind"


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scratch_parent: Path) -> Iterator[World]:
    data = tmp_path / "data.csv"
    data.write_text("x,y\n" + "".join(f"{i},{i * i}\n" for i in range(50)))
    data.chmod(0o644)
    home = tmp_path / "home"
    home.mkdir()
    (home / "secret.txt").write_text(CANARY)
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    monkeypatch.setenv("WHYFLOW_TEST_SECRET", CANARY)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    marker = f"{os.getpid() % 1000}.{time.monotonic_ns() % 10**6:06d}"
    yield World(data, hashlib.sha256(data.read_bytes()).hexdigest(), home, scratch_parent, listener, marker)
    listener.close()


def _leftover_processes(marker: str, scratch_parent: Path) -> list[str]:
    """Processes whose command line has the case's marker, or that sit in a run's scratch folder
    (a warm template sits in its own root folder, one level up, and is not a leftover)."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry.name}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(f"/proc/{entry.name}/cwd")
        except OSError:
            continue
        in_run_folder = (
            cwd.startswith(str(scratch_parent)) and "/whyflow-sandbox-" in cwd.split("whyflow-sandbox-warm-")[-1]
        )
        if marker in cmdline or in_run_folder:
            found.append(f"{entry.name}: {cmdline[:80]} (cwd {cwd})")
    return found


def _scratch_leftovers(scratch_parent: Path) -> list[Path]:
    """Anything in the scratch parent but the warm templates' roots and their own caches."""
    left = []
    for path in scratch_parent.rglob("*"):
        parts = path.relative_to(scratch_parent).parts
        if parts[0].startswith("whyflow-sandbox-warm-") and (len(parts) == 1 or parts[1] == "template"):
            continue
        left.append(path)
    return left


def _check_unharmed(world: World, result: ExecutionResult, elapsed: float, wall: float) -> None:
    assert isinstance(result, ExecutionResult)
    assert elapsed < wall + 20, f"took {elapsed:.1f} s for a {wall} s limit"
    assert world.data.is_file() and hashlib.sha256(world.data.read_bytes()).hexdigest() == world.data_digest
    assert (world.home / "secret.txt").read_text() == CANARY
    assert sorted(world.home.iterdir()) == [world.home / "secret.txt"]
    assert _scratch_leftovers(world.scratch_parent) == [], "the scratch folder was not deleted"
    assert os.environ["OPENAI_API_KEY"] == CANARY
    with pytest.raises(BlockingIOError):
        world.listener.accept()
    for top in ("/tmp", "/var/tmp", "/dev/shm"):
        assert not [p for p in os.listdir(top) if world.marker in p], f"left behind in {top}"
    deadline = time.monotonic() + 2.0
    while (left := _leftover_processes(world.marker, world.scratch_parent)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not left, f"processes outlived the run: {left}"


def _failed(*needles: str) -> Callable[[ExecutionResult, World], None]:
    def check(result: ExecutionResult, world: World) -> None:
        assert not result.ok and result.result is None
        text = f"{result.error} {result.traceback}"
        assert any(n in text for n in needles), text

    return check


def _timed_out(result: ExecutionResult, world: World) -> None:
    assert not result.ok and result.timed_out and "wall-clock" in (result.error or "")


def _all_refused(result: ExecutionResult, world: World) -> None:
    assert result.ok, result.error
    assert isinstance(result.result, list) and result.result
    assert all(isinstance(x, str) and x.endswith("Error") for x in result.result), result.result
    assert CANARY not in json.dumps(result.result) + result.stdout


def _no_secret(result: ExecutionResult, world: World) -> None:
    assert result.ok, result.error
    seen = json.dumps(result.result) + result.stdout + result.stderr
    assert CANARY not in seen and "OPENAI_API_KEY" not in seen


def _flood(result: ExecutionResult, world: World) -> None:
    assert result.truncated and len(result.stdout) <= 1000
    assert result.ok or result.timed_out


def _spawned(result: ExecutionResult, world: World) -> None:
    assert result.ok and result.result == "spawned", result.error


def _empty(result: ExecutionResult, world: World) -> None:
    assert result.ok and result.result_kind == "none" and result.result is None


def _writes_refused(result: ExecutionResult, world: World) -> None:
    assert result.ok, result.error
    # /tmp inside bubblewrap is the sandbox's own, gone with it: a harmless success there
    private_tmp = "private-tmp" in result.layers
    for outcome in result.result:
        assert outcome.endswith("Error") or (private_tmp and outcome.startswith("done /tmp/")), result.result


def _parent_refused(result: ExecutionResult, world: World) -> None:
    if "pid-namespace" in result.layers and not result.ok:
        return  # the parent there is the namespace's init: killing it ends the run cleanly
    assert result.ok and result.result == ["PermissionError"], result


def _attempts(paths_code: str, action: str) -> str:
    return (
        "import glob, os\nout = []\n"
        f"for path in {paths_code}:\n"
        f"    try:\n        {action}\n        out.append('done ' + path)\n"
        "    except Exception as exc:\n        out.append(type(exc).__name__)\n"
        "result = out\n"
    )


@dataclass(frozen=True)
class Case:
    code: str
    check: Callable[[ExecutionResult, World], None]
    wall: float = 10.0
    processes: int = 64


CASES: dict[str, Case] = {
    "read /etc/shadow and the home folder": Case(
        _attempts(
            "['/etc/shadow', '@HOME@/secret.txt', '/root/.bashrc', '/root']",
            "open(path).read() if path != '/root' else os.listdir(path)",
        ),
        _all_refused,
    ),
    "write outside the scratch folder": Case(
        _attempts(
            "['@HOME@/evil.txt', '/tmp/whyflow-@MARKER@', '/var/tmp/whyflow-@MARKER@', '/dev/shm/whyflow-@MARKER@', '/etc/whyflow-@MARKER@', '/usr/whyflow-@MARKER@']",
            "open(path, 'w').write('x')",
        ),
        _writes_refused,
    ),
    "delete or overwrite the dataset": Case(
        _attempts("['@DATA@', *glob.glob('/data/*')]", "os.remove(path)")
        + "for path in ['@DATA@', *glob.glob('/data/*')]:\n    try:\n        open(path, 'w').write('gone')\n    except OSError as exc:\n        out.append(type(exc).__name__)\n"
        "result = out\n",
        _all_refused,
    ),
    "sockets to 127.0.0.1 and to an outside address": Case(
        "import socket\nout = []\n"
        "for address in [('127.0.0.1', @PORT@), ('192.0.2.1', 80)]:\n"
        "    try:\n        socket.create_connection(address, timeout=1)\n        out.append('connected')\n"
        "    except OSError as exc:\n        out.append(type(exc).__name__)\n"
        "try:\n    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('192.0.2.1', 53))\n    out.append('sent')\n"
        "except OSError as exc:\n    out.append(type(exc).__name__)\n"
        "result = out\n",
        _all_refused,
    ),
    "os.fork() in a loop": Case(
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
        _timed_out,
        wall=2.0,
        processes=16,
    ),
    "allocate 20 GiB": Case("block = bytearray(20 * 1024**3)\nresult = len(block)\n", _failed("MemoryError")),
    "while True: pass": Case("while True:\n    pass\n", _timed_out, wall=2.0),
    "sleep past the timeout": Case("import time\ntime.sleep(60)\nresult = 1\n", _timed_out, wall=2.0),
    "a background process that outlives the run": Case(
        "import os, subprocess\n"
        "try:\n    subprocess.Popen(['sleep', '@MARKER@'], start_new_session=True)\n"
        "except OSError:\n    subprocess.Popen(['sleep', '@MARKER@'])\n"
        "if os.fork() == 0:\n    try:\n        os.setsid()\n    except OSError:\n        pass\n"
        "    if os.fork() == 0:\n        os.execv('/usr/bin/sleep', ['sleep', '@MARKER@'])\n    os._exit(0)\n"
        "result = 'spawned'\n",
        _spawned,
    ),
    "print 1 GB to stdout": Case(
        "import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(1024):\n    sys.stdout.write(chunk)\nresult = 'done'\n",
        _flood,
        wall=8.0,
    ),
    "read environment variables for keys": Case(
        "import os\nfound = dict(os.environ)\n"
        "for path in ['/proc/1/environ', f'/proc/{os.getppid()}/environ']:\n"
        "    try:\n        found[path] = open(path, 'rb').read().decode('latin-1')\n"
        "    except OSError as exc:\n        found[path] = type(exc).__name__\n"
        "print(found)\nresult = found\n",
        _no_secret,
    ),
    "import ctypes and crash the interpreter": Case(
        "import ctypes\nctypes.string_at(0)\nresult = 1\n", _failed("SIGSEGV")
    ),
    "a syntax error": Case("result = (1 +\n", _failed("SyntaxError")),
    "an empty payload": Case("", _empty),
    "sys.exit(0) before setting result": Case("import sys\nsys.exit(0)\nresult = 1\n", _failed("sys.exit(0)")),
    "kill the parent": Case(
        "import os, signal\ntry:\n    os.kill(os.getppid(), signal.SIGKILL)\n    result = ['sent']\n"
        "except OSError as exc:\n    result = [type(exc).__name__]\n",
        _parent_refused,
    ),
}


@pytest.mark.parametrize("isolation", ISOLATIONS)
@pytest.mark.parametrize("name", list(CASES))
def test_hostile_code_fails_cleanly(name: str, isolation: str, world: World) -> None:
    _run_case(name, isolation, True, world)


# Where a cold child differs from a warm one: datasets bound by path rather than passed as
# descriptors, its own process tree to kill, its own exit status (through bwrap) to decode.
COLD_CASES = [
    "read /etc/shadow and the home folder",
    "write outside the scratch folder",
    "delete or overwrite the dataset",
    "os.fork() in a loop",
    "sleep past the timeout",
    "a background process that outlives the run",
    "read environment variables for keys",
    "import ctypes and crash the interpreter",
]


@pytest.mark.parametrize("name", COLD_CASES)
def test_hostile_code_fails_cleanly_in_a_cold_child(name: str, world: World) -> None:
    """The battery without the warm template: a fresh interpreter under the best layers."""
    _run_case(name, "best", False, world)


def _run_case(name: str, isolation: str, warm: bool, world: World) -> None:
    case = CASES[name]
    caps = probe()
    if isolation == "best" and not (caps.bwrap or caps.unshare):
        pytest.skip("no namespace layer on this machine: 'best' is the same as 'no-namespaces'")
    limits = Limits(wall_seconds=case.wall, cpu_seconds=20, processes=case.processes, output_chars=1000)
    start = time.monotonic()
    result = run_code(world.fill(case.code), {"data": world.data}, limits, isolation=isolation, warm=warm)  # type: ignore[arg-type]
    assert ("warm-fork" in result.layers) == (warm and "rlimits" in result.layers), result.layers
    elapsed = time.monotonic() - start
    case.check(result, world)
    _check_unharmed(world, result, elapsed, case.wall)
    if isolation == "no-namespaces":
        assert not {"bwrap", "unshare", "no-network"} & set(result.layers)
    if caps.landlock_abi and caps.seccomp:
        assert {"landlock", "seccomp"} <= set(result.layers)
