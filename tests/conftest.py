"""Session-wide test setup: quiet offline Prefect, one test harness, the test plug-in agents.

The spine's test agents (tests/spine_agents.py) are registered through a real
``whyflow.agents`` entry point: a ``.dist-info`` folder on sys.path (and on PYTHONPATH for
subprocesses), which is how a third-party package's agents are found.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "job_training.csv"
"""The shipped example, as a new user first tries it."""
PLUGIN_DIR = Path(__file__).resolve().parent / "fixtures" / "plugin_site"

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MPLBACKEND", "Agg")
if str(PLUGIN_DIR) not in sys.path:
    sys.path.insert(0, str(PLUGIN_DIR))
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def start_whyflow(argv: list[str], *, ephemeral: bool = False) -> subprocess.Popen[bytes]:
    """`whyflow` in its own process group, as a terminal runs a foreground job.

    ``ephemeral``: no PREFECT_API_URL, so whyflow starts its temporary Prefect server, which is
    then in the same process group, as it is for a user without a Prefect server.
    """
    env = subprocess_env()
    if ephemeral:
        env.pop("PREFECT_API_URL", None)
    return subprocess.Popen(
        [sys.executable, "-m", "whyflow.cli.main", *argv],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        cwd=str(ROOT),
    )


def subprocess_env(**extra: str) -> dict[str, str]:
    """Environment for a `whyflow` subprocess that sees the test plug-ins and the harness."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(PLUGIN_DIR), str(ROOT), env.get("PYTHONPATH", "")])
    try:
        from prefect.settings import PREFECT_API_URL

        url = PREFECT_API_URL.value()
        if url:
            env["PREFECT_API_URL"] = url
    except Exception:  # noqa: BLE001 - without a harness the subprocess uses ephemeral mode
        pass
    env.update(extra)
    return env


@pytest.fixture(scope="session")
def prefect_harness() -> Iterator[None]:
    """One Prefect test server for the whole session (about 7 s to start)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture(scope="module")
def local_url() -> Iterator[str]:
    """A real local model (xllamacpp serving SmolLM2-135M) for one test module; its base URL.

    Module-scoped: the server runs threads in the test process, so it stops before the next
    module (sandbox tests fork). Tests using it skip when ``available()`` is false.
    """
    from whyflow.runtime.llm.local import start

    server, url = start(n_ctx=4096)
    yield url
    del server
