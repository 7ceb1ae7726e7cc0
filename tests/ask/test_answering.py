"""The honest 'cannot answer' reply says what was tried: no model, or a model whose plan was unusable."""

from __future__ import annotations

from whyflow.ask.answering import cannot_answer
from whyflow.ask.state import AskPlan


def _plan() -> AskPlan:
    return AskPlan(needs_code=False, reasoning="no example fits", closest_examples=["group_mean", "histogram"])


def test_without_a_model_it_suggests_switching_one_on() -> None:
    final = cannot_answer(_plan())
    assert final.answer.startswith("I can't answer this without a model")
    assert "--llm on" in final.answer and "group_mean; histogram" in final.answer
    assert final.confidence == 0.0 and final.examples == ["group_mean", "histogram"]


def test_with_a_model_it_does_not_blame_a_missing_model() -> None:
    final = cannot_answer(_plan(), with_model=True)
    assert "without a model" not in final.answer and "--llm on" not in final.answer
    assert "the model's plan could not be used" in final.answer
