"""What a plain question asks, typed: its kind, the statistic, the column, and the conditions on
the rows (the population, a share's event, a contrast's two sides); and the sandbox code that
computes it with :mod:`whyflow.ask.tools.plain_ops`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Condition", "PlainSpec", "plain_code"]


class Condition(BaseModel):
    """One condition on the rows: ``column op value``, with the words it was read from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    column: str
    op: Literal["==", "!=", ">", ">=", "<", "<="]
    value: float | str
    words: str = Field(description="the condition as the answer sentence states it, e.g. 'training = 0'")


class PlainSpec(BaseModel):
    """A plain question's computation."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["aggregate", "count", "share", "contrast"]
    op: Literal["mean", "median", "sum", "max", "min", "std", "var"] | None = None
    target: str | None = None
    population: list[Condition] = Field(default_factory=list)
    event: list[Condition] = Field(default_factory=list, description="a share's condition: P(event | population)")
    sides: list[list[Condition]] = Field(
        default_factory=list, description="a contrast's two groups, first minus second"
    )
    order: Literal["first_minus_second", "second_minus_first"] = "first_minus_second"
    restated: list[str] = Field(
        default_factory=list, description="the question's phrases read as a repeat of the data's description"
    )


def plain_code(spec: PlainSpec) -> str:
    """Complete sandbox code: the operations' source, then the one call that answers the spec."""
    return sandbox_program(Path(__file__).parent / "plain_ops.py", "answer_plain", spec)


def sandbox_program(ops: Path, function: str, spec: BaseModel) -> str:
    """The self-contained program a reader's spec runs as in the sandbox: the operations module's own
    source (it imports nothing of whyflow), then ``result = function(df, spec)``."""
    source = ops.read_text(encoding="utf-8").replace("from __future__ import annotations\n", "")
    payload = json.dumps(spec.model_dump(mode="json"))
    return (
        f"{source}\n\nimport json\n\n"
        "try:\n    df\nexcept NameError:\n    df = next(iter(datasets.values()))\n"
        f"result = {function}(df, json.loads({payload!r}))\n"
    )
