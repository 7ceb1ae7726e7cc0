"""The typed requests of one question, and the sandbox code that computes them.

:class:`RequestSpec` is what :func:`whyflow.ask.tools.requests.parse_requests` reads from a question
(and :mod:`whyflow.ask.tools.causal_requests` from a directed causal one); :func:`request_code` turns
it into complete sandbox code: the source of :mod:`whyflow.ask.tools.request_ops` followed by one call,
so each request is computed on its own and a failure stays in its own slot.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Request", "RequestSpec", "request_code", "sandbox_source"]


class Request(BaseModel):
    """One quantity the question asks for, with everything needed to compute it."""

    model_config = ConfigDict(extra="forbid")

    slot: str
    op: str = Field(description="an operation of whyflow.ask.tools.request_ops.compute, or 'unknown'")
    columns: list[str] = Field(default_factory=list)
    options: dict[str, Any] = Field(default_factory=dict)
    decimals: int | None = None
    stage: str = Field(
        "after",
        description="'after' the question's data steps, 'before' its outlier removal, or "
        "'original': before its cleaning (the outlier removal, or else the imputation)",
    )
    reason: str | None = Field(None, description="why an unknown request cannot be computed")


class RequestSpec(BaseModel):
    """The requests of one question and the data steps every request shares."""

    model_config = ConfigDict(extra="forbid")

    requests: list[Request]
    steps: list[dict[str, Any]] = Field(default_factory=list)
    sentence: str | None = Field(None, description="the answer sentence, filled from the first request's result")

    @property
    def computable(self) -> int:
        return sum(r.op != "unknown" for r in self.requests)


SANDBOX_MODULES = ("request_ops_base.py", "request_fits.py", "request_designs.py", "request_ops.py")
"""The operations' modules, in the order their sources make one sandbox program."""
_OWN_IMPORT = re.compile(r"^from whyflow\.ask\.tools\.request_\w+ import (?:\([^)]*\)|[^\n]+)\n", re.M)


def sandbox_source() -> str:
    """The operations as one program: each module's source in order, without its imports of the others."""
    here = Path(__file__).parent
    parts = [(here / name).read_text(encoding="utf-8") for name in SANDBOX_MODULES]
    return "\n\n".join(_OWN_IMPORT.sub("", p.replace("from __future__ import annotations\n", "")) for p in parts)


def request_code(spec: RequestSpec) -> str:
    """Complete sandbox code: the operations' source, then one call computing every request."""
    source = sandbox_source()
    payload = json.dumps(spec.model_dump(mode="json"))
    return (
        f"{source}\n\nimport json\n\n"
        "try:\n    df\nexcept NameError:\n    df = next(iter(datasets.values()))\n"
        f"SPEC = json.loads({payload!r})\n"
        "result = answer_requests(df, SPEC)\n"
        "first = result.get(SPEC['requests'][0]['slot'])\n"
        "if SPEC.get('sentence') and isinstance(first, dict):\n"
        "    result['answer'] = SPEC['sentence'].format(**first)\n"
        "elif SPEC.get('sentence'):\n"
        "    result['answer'] = 'Not computed: ' + str(result['_notes'].get(SPEC['requests'][0]['slot']))\n"
    )
