"""`whyflow ask --engine local`: the ask recipe run by the plain runner in this process, no Prefect.

The same agents, the same sandbox and the same job folder (``state.json``, ``answer.json``,
``answer.html``, the drift record in ``run.json``) as the Prefect flow, without what only Prefect
gives: no flow run in the UI, no artifacts, no task retries by Prefect. `whyflow ask` and
`whyflow serve` use it by default when no Prefect server is configured (:mod:`whyflow.flows.ask_jobs.engine`). It exists because start-up dominates a one-question
answer: importing Prefect alone takes about 3 s here and its temporary API server several more,
while the deterministic agents take well under a second (see the README's ask section).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from whyflow.core.agent import AgentContext, AgentResult
    from whyflow.flows.jobstore.store import JobFolder
    from whyflow.flows.recipes.nodes import AgentNode, Plan
    from whyflow.flows.running.runner import LocalExecutor
    from whyflow.states import JobState

__all__ = ["run_ask_local", "run_ask_plain"]


def _executor() -> LocalExecutor:
    """Plain calls, except that an agent returning after a stop signal does not count.

    A causal question runs a nested job in the agent's own call; a Ctrl-C or SIGTERM cancels
    that job, and the agent then returns an answer saying the estimate is missing. Under the
    flow the signal ends the flow as well; here the run is cancelled before that answer is
    kept, so the run ends cancelled (exit 130) and `whyflow resume` asks again.
    """
    from whyflow.flows.errors import CancelRequested
    from whyflow.flows.running import interrupts
    from whyflow.flows.running.runner import LocalExecutor

    class StoppableExecutor(LocalExecutor):
        def run(self, node: AgentNode, state: JobState, ctx: AgentContext) -> AgentResult:
            result = super().run(node, state, ctx)
            if interrupts.received() is not None:
                raise CancelRequested(interrupts.reason())
            return result

    return StoppableExecutor()


def run_ask_plain(plan: Plan, folder: JobFolder) -> None:
    """Run (or resume) an ask job with the plain runner and write its answer files; no signals, no printing.

    For callers that own the signals (`whyflow serve` runs it in a worker thread); the outcome
    is in the job folder's state, as after the flow.
    """
    from whyflow.ask.state import AskState
    from whyflow.flows.ask_jobs.flow import finish_answer
    from whyflow.flows.errors import RunCancelled, RunFailed
    from whyflow.flows.running.progress import Reporter
    from whyflow.flows.running.runner import Runner

    state = folder.load_any()
    assert isinstance(state, AskState)
    try:
        Runner(plan, folder, state, _executor(), Reporter()).run()
    except (RunFailed, RunCancelled):
        pass  # the state records why; the answer file says it
    finish_answer(plan, folder, state)  # as the flow does, a stopped run included


def run_ask_local(plan: Plan, folder: JobFolder) -> int:
    """Run (or resume) an ask job with the plain runner; print the answer; the exit code."""
    from whyflow.ask.state import AskState
    from whyflow.flows.ask_jobs.flow import finish_answer
    from whyflow.flows.ask_jobs.job import print_answer
    from whyflow.flows.errors import RunCancelled, RunFailed
    from whyflow.flows.running.interrupts import cancel_job, interrupt_guard
    from whyflow.flows.running.progress import Reporter
    from whyflow.flows.running.runner import Runner

    cancelled = f"whyflow: cancelled; `whyflow resume {folder.path}` continues it"

    def give_up() -> None:  # the signal's watchdog: the run did not end within seconds
        cancel_job(folder)
        print(cancelled, file=sys.stderr)

    state = folder.load_any()
    assert isinstance(state, AskState)
    try:
        with interrupt_guard(give_up):  # SIGINT, SIGTERM, SIGHUP: cancelled, exit 130
            Runner(plan, folder, state, _executor(), Reporter()).run()
    except (RunFailed, RunCancelled):
        pass  # the state records why; the answer file says it
    except KeyboardInterrupt:
        cancel_job(folder)
    state = folder.load_any()
    assert isinstance(state, AskState)
    if state.status.value == "cancelled":
        print(cancelled, file=sys.stderr)
        return 130
    finish_answer(plan, folder, state)
    return print_answer(state, folder)
