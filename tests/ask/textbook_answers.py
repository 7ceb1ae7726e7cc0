"""A textbook question answered the way the engine does without a model: split, parsed, computed."""

from __future__ import annotations

from typing import Any

import pandas as pd

from whyflow.ask.tools.textbook_ops import answer_textbook
from whyflow.ask.tools.textbook_prompt import split_prompt
from whyflow.ask.tools.textbook_questions import parse_textbook
from whyflow.ask.tools.textbook_spec import TextbookSpec


def textbook_answer(text: str, df: pd.DataFrame, kind: str | None = None) -> dict[str, Any] | None:
    """The answer of a question read as a textbook statistic (of ``kind`` when given), or None when it is
    declined; a question read as a plain one fails the test, since it was not answered as one."""
    parsed = parse_textbook(split_prompt(text), df)
    if parsed is None or parsed.spec is None:
        return None
    assert isinstance(parsed.spec, TextbookSpec), parsed.spec
    assert kind is None or parsed.spec.kind == kind, parsed.spec.kind
    return answer_textbook(df, parsed.spec.model_dump(mode="json"))
