"""Small real agents used to test the spine without the statistics stack.

They are registered as plug-ins through a real ``whyflow.agents`` entry point (see
``tests/conftest.py``), exactly as a third-party package would register its agents.
"""

from __future__ import annotations

import os
import time
import warnings

from pydantic import Field

from tests.factories import make_estimate
from tests.helpers import basic_profile
from whyflow.causal.knowledge import DomainKnowledge
from whyflow.causal.state import AnalysisState, CritiqueDecision, CritiqueFeedback
from whyflow.core.agent import Agent, AgentContext, AgentParams, AgentResult
from whyflow.core.status import JobStatus
from whyflow.core.view import StateView
from whyflow.runtime.data import read_table


class ToyProfiler(Agent):
    """Reads the input and writes a plain profile and the analysis copy."""

    STATE_MODEL = AnalysisState
    NAME = "toy_profiler"
    REQUIRED_STATE_FIELDS = ("dataset_info",)
    WRITES_STATE_FIELDS = ("data_profile", "dataframe_path")
    JOB_STATUS = JobStatus.PROFILING

    def run(self, view, params, ctx):  # type: ignore[no-untyped-def]
        frame = read_table(view.dataset_info.local_path)
        path = ctx.data_dir / "analysis.parquet"
        frame.to_parquet(path, index=False)
        t, y = view.get_primary_pair()
        return AgentResult(
            updates={"data_profile": basic_profile(frame, t, y), "dataframe_path": str(path)},
            summary=f"{len(frame)} rows",
        )


class ToyEstimatorParams(AgentParams):
    sleep: float = Field(0.0, ge=0, description="seconds to sleep before estimating")
    warn: bool = Field(False, description="raise a library-style RuntimeWarning while estimating")


class ToyEstimator(Agent[ToyEstimatorParams]):
    """Difference in means with a normal-approximation interval; sleeps if asked.

    Typed the way a plug-in may be: generic over its parameters (the others subclass plain Agent).
    """

    STATE_MODEL = AnalysisState
    NAME = "toy_estimator"
    REQUIRED_STATE_FIELDS = ("data_profile", "dataframe_path")
    OPTIONAL_STATE_FIELDS = ("critique_history",)
    WRITES_STATE_FIELDS = ("treatment_effects", "analyzed_pairs")
    JOB_STATUS = JobStatus.ESTIMATING_EFFECTS
    PROGRESS_WEIGHT = 3.0

    Params = ToyEstimatorParams

    def run(self, view: StateView, params: ToyEstimatorParams, ctx: AgentContext) -> AgentResult:
        if params.sleep:
            time.sleep(params.sleep)
        if params.warn:
            warnings.warn("toy estimator: overflow encountered in a library", RuntimeWarning, stacklevel=1)
        frame = read_table(view.dataframe_path)
        t, y = view.get_primary_pair()
        a, b = frame[frame[t] == 1][y], frame[frame[t] == 0][y]
        est = float(a.mean() - b.mean())
        se = float((a.var() / len(a) + b.var() / len(b)) ** 0.5)
        effect = make_estimate(
            "diff_means",
            est,
            se,
            label="Difference in means",
            ci=(est - 1.96 * se, est + 1.96 * se),
            treatment=t,
            outcome=y,
            headline=True,
            round=ctx.iteration,
            pid=os.getpid(),
        )
        return AgentResult(updates={"treatment_effects": [effect]}, summary=f"{est:.3f}")


class ToyCritique(Agent):
    """Asks for another round until round ``approve_at``, then approves."""

    STATE_MODEL = AnalysisState
    NAME = "toy_critique"
    REQUIRED_STATE_FIELDS = ("treatment_effects",)
    OPTIONAL_STATE_FIELDS = ("critique_history",)
    WRITES_STATE_FIELDS = ("critique_history",)
    JOB_STATUS = JobStatus.CRITIQUE_REVIEW
    IS_CRITIQUE = True

    class Params(AgentParams):
        approve_at: int = Field(2, ge=1, description="the round that approves")

    def run(self, view, params, ctx):  # type: ignore[no-untyped-def]
        round_ = view.iteration_count + 1
        decision = CritiqueDecision.APPROVE if round_ >= params.approve_at else CritiqueDecision.ITERATE
        feedback = CritiqueFeedback(
            decision=decision, iteration=round_, scores={"overall": 3}, issues=[], improvements=[], reasoning="toy"
        )
        return AgentResult(updates={"critique_history": [*view.critique_history, feedback]}, summary=decision.value)


class Recommender(Agent):
    """Writes one recommendation (a sibling for parallel-isolation tests)."""

    STATE_MODEL = AnalysisState
    NAME = "toy_recommender"
    REQUIRED_STATE_FIELDS = ("data_profile",)
    WRITES_STATE_FIELDS = ("recommendations",)
    JOB_STATUS = JobStatus.EXPLORATORY_ANALYSIS

    def run(self, view, params, ctx):  # type: ignore[no-untyped-def]
        profile = view.data_profile
        profile.feature_names.append("MUTATED")  # mutating a view's copy must not leak anywhere
        return AgentResult(updates={"recommendations": [f"{len(profile.feature_names)} names seen"]})


class Watcher(Agent):
    """Reads the profile a parallel sibling may have mutated and reports what it saw."""

    STATE_MODEL = AnalysisState
    NAME = "toy_watcher"
    REQUIRED_STATE_FIELDS = ("data_profile",)
    WRITES_STATE_FIELDS = ("domain_knowledge",)
    JOB_STATUS = JobStatus.EXPLORATORY_ANALYSIS

    def run(self, view, params, ctx):  # type: ignore[no-untyped-def]
        time.sleep(0.2)
        seen = DomainKnowledge(notes=list(view.data_profile.feature_names))
        return AgentResult(updates={"domain_knowledge": seen})


class BadWriter(Agent):
    """Returns a field outside its contract."""

    STATE_MODEL = AnalysisState
    NAME = "bad_writer"
    REQUIRED_STATE_FIELDS = ("data_profile",)
    WRITES_STATE_FIELDS = ("recommendations",)
    JOB_STATUS = JobStatus.CRITIQUE_REVIEW

    def run(self, view, params, ctx):  # type: ignore[no-untyped-def]
        return AgentResult(updates={"recommendations": ["x"], "treatment_effects": []})


class Crasher(Agent):
    """Raises, to test failure handling."""

    STATE_MODEL = AnalysisState
    NAME = "crasher"
    REQUIRED_STATE_FIELDS = ("data_profile",)
    WRITES_STATE_FIELDS = ("recommendations",)
    JOB_STATUS = JobStatus.CRITIQUE_REVIEW

    def run(self, view, params, ctx):  # type: ignore[no-untyped-def]
        raise RuntimeError("boom: the agent broke")
