"""One chat turn as a run of an ask recipe, told to the page as a stream of events.

A question runs ``whyflow/recipes/ask_react.yaml`` (the ReAct data scientist), the first look at an
upload ``whyflow/recipes/auto_analyze.yaml``; both are prepared and run exactly as `whyflow ask` does
(:func:`whyflow.flows.ask_jobs.job.prepare_ask_job`, then the compiled flow of :func:`whyflow.flows.job_flow.build_flow`, or
the plain runner of :func:`whyflow.flows.ask_jobs.local.run_ask_plain` with the ``local`` engine), with job
folders under the session's folder. While the run goes, every tool call of the agent's
:class:`~whyflow.ask.toolbox.Toolbox` is observed: before it a ``status`` line, after it the
content it showed (``query_result`` for ``sql_query``, ``text``, ``table``, ``plot``). When the
flow has finished, what the answer holds and no tool showed yet (the code's chart, the answer
and its caveats) follows, then ``session_update`` (a first analysis names the session), and
``done``; a failure is an ``error`` then ``done``. Content events are saved as messages before
they are sent, the reasoning only saved. ``stop`` raises the runner's cancel request after the
tool call under way, so the run ends cancelled and the session stays usable.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from whyflow.web.store import ChatStore, Session, clean

__all__ = ["ASK_RECIPE", "AUTO_RECIPE", "Turn", "run_turn", "install_tool_hook", "stop_runs", "cancel_runs", "STATUS"]

ASK_RECIPE = "ask_react"
"""The built-in recipe a chat question runs (the ReAct data scientist)."""
AUTO_RECIPE = "auto_analyze"
"""The built-in recipe of the first look at an upload."""

STATUS = {
    "profile_data": "Profiling the data",
    "sql_query": "Querying the data",
    "write_code": "Writing code",
    "execute_code": "Running the code in the sandbox",
    "validate_results": "Checking the result",
    "output_text": "Writing the summary",
    "output_table": "Preparing a table",
    "create_plot": "Drawing a chart",
    "explain_findings": "Explaining the findings",
    "finalize": "Finishing the answer",
}
"""The status line shown while a tool runs."""

CONTENT = ("text", "table", "plot", "query_result")
_log = logging.getLogger("whyflow.web")


class Turn:
    """One run's events: content saved to the store, then handed to ``emit`` (thread-safe)."""

    def __init__(self, store: ChatStore, session_id: str, emit: Callable[[dict[str, Any]], None]) -> None:
        self.store, self.session_id, self._emit = store, session_id, emit
        self.stop = threading.Event()
        self.job_dir: str | None = None
        self.sent: dict[str, int] = {}
        self.texts: set[str] = set()
        self.last_status = ""
        self.on_done: Callable[[], None] | None = None
        """Called just before ``done`` is sent (the app frees the session for its next run)."""

    def event(self, type_: str, **payload: Any) -> None:
        payload = clean(payload)
        if type_ in CONTENT:
            text, data = _record(type_, payload)
            self.store.add_message(self.session_id, "assistant", type_, text, data, self.job_dir)
            self.sent[type_] = self.sent.get(type_, 0) + 1
            if type_ == "text":
                self.texts.add(payload["text"].strip())
        if type_ == "done" and self.on_done is not None:
            try:
                self.on_done()
            except RuntimeError as exc:  # the server's event loop has ended (the server stopped)
                _log.debug("session not freed: %s", exc)
        if type_ == "status":
            self.last_status = payload.get("message", "")
        try:
            self._emit({"type": type_, **payload})
        except Exception as exc:  # noqa: BLE001 - a gone client must not end the run
            _log.debug("event not delivered: %s", exc)

    def status(self, message: str) -> None:
        self.event("status", message=message)


def _record(type_: str, payload: dict[str, Any]) -> tuple[str, Any]:
    """The message row of a content event: (text, data)."""
    if type_ == "text":
        return payload["text"], None
    if type_ == "table":
        return payload.get("title", ""), {"headers": payload["headers"], "rows": payload["rows"]}
    if type_ == "plot":
        return payload.get("title", ""), {
            "title": payload.get("title", ""),
            "vega_lite_spec": payload["vega_lite_spec"],
        }
    return payload.get("description", ""), {
        k: payload.get(k) for k in ("query", "columns", "rows", "row_count", "is_error")
    }


# ---- observing the agent's tools ---------------------------------------------------------------
_turns: dict[str, Turn] = {}
_lock = threading.Lock()
_installed = False


def install_tool_hook() -> None:
    """Wrap :meth:`Toolbox.call` once: a registered job folder's tool calls become events."""
    global _installed
    with _lock:
        if _installed:
            return
        from whyflow.ask.toolbox import Toolbox

        original = Toolbox.call

        def call(self: Any, tool: str, args: Any, origin: str = "deterministic") -> Any:
            turn = _turns.get(str(Path(self.job_dir).resolve()))
            if turn is None:
                return original(self, tool, args, origin)
            _capture_artifacts(self.runtime)
            turn.status(STATUS.get(tool, f"Running {tool}") + _detail(tool, args))
            obs = original(self, tool, args, origin)
            _tool_events(turn, self, tool, args, obs)
            if turn.stop.is_set():
                from whyflow.flows.errors import CancelRequested

                raise CancelRequested("stopped from the chat page")
            return obs

        Toolbox.call = call  # type: ignore[method-assign]
        _installed = True


def _detail(tool: str, args: Any) -> str:
    description = getattr(args, "description", "") if tool == "sql_query" else getattr(args, "title", "")
    return f": {description}" if isinstance(description, str) and description.strip() else ""


def _capture_artifacts(runtime: Any) -> None:
    """Keep the content of the runtime's artifacts (it keeps only their hashes) on the runtime itself."""
    if getattr(runtime, "_web_contents", None) is not None:
        return
    contents: dict[str, Any] = {}
    add = runtime.add_artifact

    def add_artifact(
        name: str, type_: str, producer: str, source_call: str, content: Any, logical_key: str | None = None
    ) -> Any:
        contents[type_] = content
        return add(name, type_, producer, source_call, content, logical_key)

    runtime.add_artifact = add_artifact
    runtime._web_contents = contents


def _tool_events(turn: Turn, box: Any, tool: str, args: Any, obs: Any) -> None:
    contents = box.runtime._web_contents
    if tool == "sql_query" and obs.status in ("ok", "failed"):
        content = contents.pop("query_result", None) if obs.status == "ok" else None
        content = content or {"columns": [], "rows": [], "row_count": 0}
        turn.event(
            "query_result",
            description=args.description or "query",
            query=args.query,
            columns=content["columns"],
            rows=content["rows"],
            row_count=content["row_count"],
            is_error=obs.status != "ok",
            **({"error": obs.text} if obs.status != "ok" else {}),
        )
    if obs.status != "ok" or "not shown again" in obs.text or "not drawn again" in obs.text:
        return
    if tool == "output_text":
        turn.event("text", text=args.text)
    elif tool == "output_table":
        turn.event(
            "table",
            title=args.title,
            headers=list(args.headers),
            rows=[list(r) for r in args.rows][:200],
            total_rows=args.total_rows if args.total_rows is not None else len(args.rows),
        )
    elif tool == "create_plot":
        spec = box.figures[-1] if box.figures else args.vega_lite_spec
        turn.event("plot", title=args.title, vega_lite_spec=spec)


def stop_runs(timeout: float) -> None:
    """Stop every run going: each ends CANCELLED after its current tool call or agent.

    Waits up to ``timeout`` seconds for them to end, then saves those still going as cancelled.
    """
    import time

    from whyflow.flows.jobstore.store import JobFolder

    with _lock:
        going = dict(_turns)
    for key, turn in going.items():
        turn.stop.set()  # the tool hook raises the runner's cancel after the tool call under way
        JobFolder(Path(key)).request_cancel()  # the runner checks it before every agent
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with _lock:
            if not _turns:
                return
        time.sleep(0.05)
    cancel_runs()


def cancel_runs() -> None:
    """Save every run still going as cancelled and stop its kernels (the server is stopping now)."""
    from whyflow.flows.jobstore.store import JobFolder
    from whyflow.flows.running.interrupts import cancel_job

    with _lock:
        going = list(_turns)
    for key in going:
        try:
            cancel_job(JobFolder(Path(key)))
        except Exception as exc:  # noqa: BLE001 - the other runs are still saved
            _log.warning("run %s not saved as cancelled: %s", key, exc)


# ---- the turn ----------------------------------------------------------------------------------
def run_turn(store: ChatStore, session: Session, kind: str, text: str, turn: Turn, engine: str = "prefect") -> None:
    """Run one turn (a ``message`` or ``auto_analyze``) to its end; every outcome ends with ``done``.

    ``engine``: ``prefect`` (a flow run of the compiled recipe) or ``local`` (the plain runner).
    """
    try:
        _run(store, session, kind, text, turn, engine)
    except Exception as exc:  # noqa: BLE001 - the page gets the reason; the session stays usable
        _log.exception("chat turn failed")
        turn.event("error", message=f"the run failed: {exc}")
    turn.event("done", data_updated=False, **({"stopped": True} if turn.stop.is_set() else {}))


def _run(store: ChatStore, session: Session, kind: str, text: str, turn: Turn, engine: str) -> None:
    from whyflow.ask.state import AskState
    from whyflow.core.errors import WhyflowError
    from whyflow.flows.ask_jobs.job import AUTO_QUESTION, AskRequest, prepare_ask_job, save_turn
    from whyflow.flows.jobstore.store import JobStore
    from whyflow.flows.recipes.plan import load_plan

    install_tool_hook()
    from whyflow.flows.ask_jobs.engine import prewarm_sandbox

    ready = prewarm_sandbox()  # the sandbox's template, kept by a thread that outlives this turn's
    auto = kind == "auto_analyze"
    turn.status("Reading the data" if auto else "Planning the answer")
    recipe = AUTO_RECIPE if auto else ASK_RECIPE
    plan = load_plan(recipe)
    runs_dir = str(Path(session.dataset_path).parent / "runs")
    request = AskRequest(
        AUTO_QUESTION if auto else text,
        [session.dataset_path],
        recipe=str(recipe),
        session=None if auto else session.id,
        runs_dir=runs_dir,
    )
    try:
        folder = prepare_ask_job(request, plan, engine=engine)
    except WhyflowError as exc:
        turn.event("error", message=str(exc))
        return
    key = str(folder.path.resolve())
    turn.job_dir = key
    with _lock:
        _turns[key] = turn  # from here a stop or a signal reaches the run
    try:
        ready.wait(60)  # at once when it is warm; else it boots while the data is read, not twice
        if engine == "local":
            from whyflow.flows.ask_jobs.local import run_ask_plain

            run_ask_plain(plan, folder)
        else:
            from whyflow.flows.job_flow import build_flow

            build_flow(plan, run_name=f"{plan.name}-{folder.path.name}")(
                recipe=str(folder.recipe_path.resolve()), job_dir=key, return_state=True
            )
    finally:
        with _lock:
            _turns.pop(key, None)
    state = folder.load_any()
    assert isinstance(state, AskState)
    if request.session:
        save_turn(JobStore(runs_dir).root, request.session, state)
    _reasoning(store, session, state, key)
    if turn.stop.is_set() or state.status.value in ("cancelled", "cancelling"):
        turn.stop.set()
        turn.status("Stopped")
        return
    _final_events(turn, state)
    if auto and state.session_title:
        store.set_title(session.id, state.session_title)
        turn.event("session_update", title=state.session_title)


def _final_events(turn: Turn, state: Any) -> None:
    """What the finished answer holds that no tool showed: the code's chart, the answer, caveats."""
    from whyflow.ask.tools.render import table_from_result

    final = state.final_output
    if final is None or final.output_type == "error":
        reason = final.answer if final is not None else (state.error_message or "the run gave no answer")
        turn.event("error", message=reason)
        return
    if not turn.sent.get("table"):
        table = table_from_result(final.result, title="Result")
        if table is not None:
            turn.event(
                "table",
                title=table.title,
                headers=table.headers,
                rows=table.rows,
                total_rows=table.total_rows or len(table.rows),
            )
    if final.figure and not turn.sent.get("plot"):
        title = final.figure.get("title")
        title = title.get("text") if isinstance(title, dict) else title
        turn.event("plot", title=str(title or "Chart"), vega_lite_spec=final.figure)
    answer = final.answer.strip()
    caveats = [c for c in final.caveats if c.strip()]
    if answer and answer not in turn.texts:
        body = answer + ("\n\n**Caveats**\n\n" + "\n".join(f"- {c}" for c in caveats) if caveats else "")
        turn.event("text", text=body)


def _reasoning(store: ChatStore, session: Session, state: Any, job_dir: str) -> None:
    """The reasoning message: saved for the record and later turns, never streamed."""
    lines: list[str] = []
    if state.final_output is not None:
        lines += [str(x) for x in state.final_output.reasoning_trace]
    for trace in state.agent_traces:
        if trace.reasoning:
            lines.append(f"[{trace.agent_name}] {trace.reasoning}")
    if lines:
        store.add_message(session.id, "assistant", "reasoning", "\n".join(lines), None, job_dir)
