"""Which engine answers a question: a Prefect flow run, or the plain runner in this process.

``--engine auto`` (the default of `whyflow ask` and `whyflow serve`) runs the ask recipe as a
Prefect flow when a Prefect API server is configured, so the run is recorded where the user
looks for it (the UI), and with the plain runner otherwise (:mod:`whyflow.flows.ask_jobs.local`): without a
server Prefect would start a temporary one for every question, which costs about 10 s of a
one-line answer and records the run in a database nobody sees. ``--engine prefect`` forces a
tracked flow run (a temporary server when none is configured); ``--engine local`` never
imports Prefect. Both write the same job folder and give the same answer.

Deciding must not import Prefect (about 1 s): the server is read from ``PREFECT_API_URL`` in
the environment, then from Prefect's own settings when Prefect is already imported (a test
harness, the ``ask`` deployment), then from the active profile in ``$PREFECT_HOME/profiles.toml``.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
import tomllib
from pathlib import Path

__all__ = ["ENGINES", "ENGINE_ENV", "prefect_api_url", "resolve_engine", "engine_note", "prewarm_sandbox"]

ENGINES = ("auto", "prefect", "local")
ENGINE_ENV = "WHYFLOW_ASK_ENGINE"


def prefect_api_url() -> str | None:
    """The Prefect API server this process would talk to, or None (Prefect's ephemeral mode)."""
    url = os.environ.get("PREFECT_API_URL", "").strip()
    if url:
        return url
    if "prefect.settings" in sys.modules:  # already imported: its settings are the truth
        try:
            from prefect.settings import get_current_settings

            return get_current_settings().api.url or None
        except Exception:  # noqa: BLE001 - an unreadable setting is no server
            return None
    return _profile_api_url()


def _profile_api_url() -> str | None:
    home = Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser()
    path = Path(os.environ.get("PREFECT_PROFILES_PATH") or home / "profiles.toml").expanduser()
    try:
        profiles = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    active = os.environ.get("PREFECT_PROFILE") or profiles.get("active") or "ephemeral"
    section = (profiles.get("profiles") or {}).get(active) or {}
    url = section.get("PREFECT_API_URL") if isinstance(section, dict) else None
    return str(url).strip() or None if url else None


def resolve_engine(choice: str | None) -> tuple[str, str]:
    """The engine to run (``prefect`` or ``local``) and why, for ``--engine`` ``choice``.

    ``None`` reads :data:`ENGINE_ENV`, then ``auto``.
    """
    choice = (choice or os.environ.get(ENGINE_ENV) or "auto").strip().lower()
    if choice not in ENGINES:
        raise ValueError(f"{ENGINE_ENV}={choice!r}: use one of {', '.join(ENGINES)}")
    if choice == "prefect":
        return "prefect", "asked for"
    if choice == "local":
        return "local", "asked for"
    url = prefect_api_url()
    if url:
        return "prefect", f"a Prefect server is configured ({url})"
    return "local", "no Prefect server configured; --engine prefect records a flow run"


def engine_note(engine: str, reason: str) -> str:
    """The one line that says which engine answered."""
    what = "a Prefect flow run" if engine == "prefect" else "the plain runner, without Prefect"
    return f"engine: {engine} ({what}: {reason})"


def prewarm_sandbox() -> threading.Event:
    """Have the sandbox's warm template interpreter started (or checked) by a thread that stays.

    The template (a Python with pandas imported, forked for every code run) runs under
    bubblewrap's ``--die-with-parent``, which ties it to the *thread* that started it: one
    started by a chat turn's worker thread, or by a Prefect task's, died with that thread, so
    every question paid a fresh start (2-3 s). Started here, by one keeper thread that lives as
    long as the process, it stays warm for every later run from any thread, and a one-shot
    `whyflow ask` gets it booting on the other core while this one reads the data and plans.
    Returns an event set once the template is ready (or could not start: the code run then
    starts one itself, as before). Never fatal.
    """
    global _requests
    from whyflow.runtime.sandbox import process as sp  # noqa: F401 - imported before the keeper uses it
    from whyflow.runtime.sandbox import run as sb  # imported here: two threads importing one module can deadlock
    from whyflow.runtime.sandbox.probe import cgroup_destroy  # noqa: F401 - likewise

    done = threading.Event()
    if not sb._warm(None):
        done.set()
        return done
    with _keeper_lock:
        if _requests is None:
            _requests = queue.Queue()
            threading.Thread(target=_keep, args=(_requests,), name="whyflow-sandbox-keeper", daemon=True).start()
        _requests.put(done)
    return done


_keeper_lock = threading.Lock()
_requests: queue.Queue[threading.Event] | None = None


def _keep(requests: queue.Queue[threading.Event]) -> None:
    """The keeper thread: start the template when asked, then wait for the next request, never ending."""
    while True:
        done = requests.get()
        try:
            _ensure_template()
        finally:
            done.set()


def _ensure_template() -> None:
    from whyflow.runtime.sandbox import process as sp
    from whyflow.runtime.sandbox import run as sb
    from whyflow.runtime.sandbox.probe import cgroup_destroy

    try:
        plan = sp.choose(sb._isolation(None), sb.Limits().processes)
        try:
            template = sb._template(plan)  # started by this thread when missing or dead
            if template is not None:
                template.lock.release()
        finally:
            if plan.cgroup is not None:  # a run's own cgroup; the template needs none
                cgroup_destroy(plan.cgroup)
    except Exception:  # noqa: BLE001 - the code run starts it itself
        return
