"""Errors of loading, validating and running recipes: one class per failure mode."""

from __future__ import annotations

from dataclasses import dataclass

from whyflow.core.errors import DataError, WhyflowError

__all__ = [
    "RecipeIssue",
    "RecipeSyntaxError",
    "RecipeValidationError",
    "RecipeNotFound",
    "MetadataError",
    "JobNotFound",
    "DamagedJob",
    "OutputNotWritable",
    "RunFailed",
    "RunCancelled",
    "CancelRequested",
]


@dataclass(frozen=True)
class RecipeIssue:
    """One problem in a recipe, located in the user's file and named in the user's terms."""

    path: str
    line: int | None
    column: int | None
    where: str
    message: str

    def __str__(self) -> str:
        loc = (
            self.path
            + (f":{self.line}" if self.line else "")
            + (f":{self.column}" if self.line and self.column else "")
        )
        return f"{loc} {self.where} → {self.message}" if self.where else f"{loc} → {self.message}"


class RecipeSyntaxError(WhyflowError):
    """The recipe file is not valid YAML (or repeats a key)."""

    def __init__(self, path: str, line: int | None, column: int | None, message: str, snippet: str = "") -> None:
        self.path = path
        self.line = line
        self.column = column
        self.problem = message
        loc = path + (f":{line}" if line else "") + (f":{column}" if line and column else "")
        super().__init__(f"{loc} → {message}" + (f"\n{snippet}" if snippet else ""))


class RecipeValidationError(WhyflowError):
    """A recipe broke one or more rules; every problem is collected and reported at once."""

    document: object = None

    def __init__(self, path: str, issues: list[RecipeIssue]) -> None:
        self.path = path
        self.issues = list(issues)
        head = f"{len(self.issues)} error{'s' if len(self.issues) != 1 else ''} in {path}:"
        super().__init__("\n".join([head, *(f"  {issue}" for issue in self.issues)]))


class MetadataError(DataError):
    """The ``--metadata`` file is missing, is not YAML/JSON, or breaks the metadata spec (bad input: exit 2).

    One problem is one line, ``meta.yaml:12 → forbiden_edges: ...``; further problems found in the
    same file (``more``, each a line of that form) are listed under a count, as for a recipe.
    """

    def __init__(
        self,
        path: str,
        line: int | None,
        message: str,
        column: int | None = None,
        key: str | None = None,
        more: tuple[str, ...] = (),
    ) -> None:
        self.path = path
        self.line = line
        self.column = column
        self.key = key
        self.problem = message
        self.more = more
        loc = path + (f":{line}" if line else "") + (f":{column}" if line and column else "")
        first = f"{loc} → {message}"
        if not more:
            super().__init__(first)
        else:
            lines = [first, *more]
            super().__init__("\n".join([f"{len(lines)} problems in {path}:", *(f"  {x}" for x in lines)]))


class JobNotFound(WhyflowError):
    """No job folder matches the id or path the user gave."""


class DamagedJob(WhyflowError):
    """A job folder's state.json cannot be read (truncated, emptied or hand-edited)."""


class OutputNotWritable(WhyflowError):
    """The job folder cannot be made or written (read-only, under a file, disk full)."""


class RunFailed(WhyflowError):
    """An agent failed; the job is FAILED and everything written so far is kept."""

    def __init__(self, agent: str, message: str, job_dir: str) -> None:
        self.agent = agent
        self.reason = message
        self.job_dir = job_dir
        super().__init__(f"agent '{agent}' failed: {message}")


class RunCancelled(WhyflowError):
    """The run was cancelled (Ctrl-C, SIGTERM, `whyflow cancel` or Prefect); state is saved."""


class CancelRequested(BaseException):
    """Raised inside the runner when a cancellation signal or request arrives."""


class RecipeNotFound(WhyflowError):
    """A recipe named on the command line is neither a file nor one of the built-in recipes."""

    def __init__(self, ref: str, message: str) -> None:
        self.ref = ref
        super().__init__(message)
