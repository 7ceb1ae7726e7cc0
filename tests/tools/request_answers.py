"""Answer a question's requests the way the sandbox would: the request code, run on a frame."""

from __future__ import annotations

import pandas as pd

from whyflow.ask.tools.request_spec import request_code
from whyflow.ask.tools.requests import parse_requests


def answers(question: str, frame: pd.DataFrame) -> dict:  # type: ignore[type-arg]
    """Every slot's shown value (and ``_notes``) for ``question`` on ``frame``."""
    spec = parse_requests(question, frame)
    assert spec is not None
    scope: dict = {"df": frame}  # type: ignore[type-arg]
    exec(request_code(spec), scope)  # noqa: S102 - the code the sandbox would run
    return scope["result"]  # type: ignore[no-any-return]
