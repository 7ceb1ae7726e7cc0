"""The job's lifecycle: its statuses and which moves between them are legal.

The statuses are read as a pipeline of phases (fetching data → profiling → … → notebook): a
recipe may skip phases going forward, never go back except through ITERATING (a critique
round), and may always fail or start cancelling; a terminal job is left only by reopening it
(``whyflow resume``).
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["JobStatus", "is_legal_transition"]


class JobStatus(StrEnum):
    """The lifecycle of a job; each agent moves the job to its declared JOB_STATUS."""

    PENDING = "pending"
    FETCHING_DATA = "fetching_data"
    PROFILING = "profiling"
    EXPLORATORY_ANALYSIS = "exploratory_analysis"
    DISCOVERING_CAUSAL = "discovering_causal"
    ESTIMATING_EFFECTS = "estimating_effects"
    SENSITIVITY_ANALYSIS = "sensitivity_analysis"
    CRITIQUE_REVIEW = "critique_review"
    ITERATING = "iterating"
    GENERATING_NOTEBOOK = "generating_notebook"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLING = "cancelling"
    CANCELLED = "cancelled"

    @property
    def is_terminal(self) -> bool:
        """True for COMPLETED, FAILED and CANCELLED."""
        return self in _TERMINAL


_PHASES: tuple[JobStatus, ...] = (
    JobStatus.FETCHING_DATA,
    JobStatus.PROFILING,
    JobStatus.EXPLORATORY_ANALYSIS,
    JobStatus.DISCOVERING_CAUSAL,
    JobStatus.ESTIMATING_EFFECTS,
    JobStatus.SENSITIVITY_ANALYSIS,
    JobStatus.CRITIQUE_REVIEW,
    JobStatus.GENERATING_NOTEBOOK,
)
_RANK = {status: i for i, status in enumerate(_PHASES)}
_TERMINAL = frozenset({JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELLED})


def is_legal_transition(current: JobStatus, target: JobStatus) -> bool:
    """Whether the job may move from ``current`` to ``target`` (see the module docstring)."""
    if current in _TERMINAL:
        return False
    if current is JobStatus.PENDING:
        return target in (JobStatus.FETCHING_DATA, JobStatus.CANCELLED)
    if current is JobStatus.CANCELLING:
        return target is JobStatus.CANCELLED
    if target in (JobStatus.FAILED, JobStatus.CANCELLING):
        return True
    if current is JobStatus.ITERATING:
        return target in _RANK and _RANK[JobStatus.PROFILING] <= _RANK[target] <= _RANK[JobStatus.CRITIQUE_REVIEW]
    if target is JobStatus.ITERATING:
        return current is JobStatus.CRITIQUE_REVIEW
    if target is JobStatus.COMPLETED:
        return current is not JobStatus.FETCHING_DATA
    return target in _RANK and _RANK[target] >= _RANK[current]
