"""A directed causal question as one request: the estimand, the method, the treatment, the outcome
and the covariates it names, run exactly as asked.

"What is the average treatment effect on the treated?" with a binary treatment column names its
estimand (ATT); "use inverse probability weighting" names the method. The request is computed in
the sandbox by :func:`whyflow.ask.tools.request_ops.causal_effect` and the answer starts with the
number, rounded as asked, then says what was run. A question naming a design (DiD, RDD, IV,
synthetic control, matching, stratification) is read by :mod:`whyflow.ask.tools.causal_designs`.
An open question ("what is the effect of X on Y?", no estimand and no method) is left to the full
causal recipe.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from whyflow.ask.tools.causal_designs import parse_design
from whyflow.ask.tools.request_rules import _norm
from whyflow.ask.tools.request_spec import Request, RequestSpec
from whyflow.ask.tools.requests import _decimals
from whyflow.ask.tools.textbook_prompt import split_prompt

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["CausalRequestError", "parse_causal"]

_ESTIMANDS = (
    (r"\beffect on the (?:treated|treatment group)\b|(?-i:\bATT\b)", "att"),
    (r"\beffect on the (?:control|controls|untreated|control group)\b|(?-i:\bATC\b)", "atc"),
    (r"\baverage (?:treatment|causal) effect\b|(?-i:\bATE\b)", "ate"),
)
_METHODS = (
    (
        r"inverse probability|propensity score weighting|(?-i:\bIPT?W\b)",
        "ipw",
        "inverse probability weighting with a logistic propensity score",
    ),
    (r"difference in means|simple difference", "difference_in_means", "the difference in mean outcomes"),
    (
        r"regression adjustment|outcome model|t-learner",
        "regression_adjustment",
        "regression adjustment (a linear outcome model for each arm, averaged over the estimand's units)",
    ),
)
_CAUSAL = re.compile(r"\b(?:effects?|impacts?|causal|(?-i:ATE|ATT|LATE))\b", re.I)
"""A question asking for an effect: only then does a design word ("matching", "strata") name a design."""
_ROUND = (
    ("nearest hundredth", 2),
    ("nearest thousandth", 3),
    ("nearest tenth", 1),
    ("nearest integer", 0),
    ("nearest whole", 0),
)
_TREATMENT_NAMES = ("treatment", "treat", "treated", "t", "w", "d", "z")
_OUTCOME_NAMES = ("y", "outcome", "y_factual", "re78")


class CausalRequestError(ValueError):
    """The causal question names a column or a method that cannot be run here."""


def _binary(series: pd.Series) -> bool:
    values = set(series.dropna().unique().tolist())
    return len(values) == 2 and values <= {0, 1}  # True == 1 and 0.0 == 0 in a set


def _named(text: str, frame: pd.DataFrame, default_names: tuple[str, ...], binary: bool) -> str | None:
    """A column the text names in parentheses ("job training (t)"), or the conventional name."""
    by_norm = {_norm(str(c)): str(c) for c in frame.columns}
    for inner in re.findall(r"\(\s*[`'\"]?([A-Za-z_][\w.]{0,30})[`'\"]?\s*\)", text):
        col = by_norm.get(_norm(inner))
        if col is not None and (_binary(frame[col]) == binary):
            return col
    for name in default_names:
        col = by_norm.get(name)
        if col is not None and (_binary(frame[col]) == binary or not binary):
            return col
    return None


def _decimals_of(question: str) -> int | None:
    low = question.lower()
    for phrase, d in _ROUND:
        if phrase in low:
            return d
    return _decimals(question)


def parse_causal(question: str, frame: pd.DataFrame) -> tuple[RequestSpec, str] | None:
    """The directed causal request of a question and the words saying what runs (None: not directed)."""
    if re.search(r"^\s*Choices:", question, re.M):
        return None  # a multiple-choice question about the design, not a request for a number
    estimand = next((e for pattern, e in _ESTIMANDS if re.search(pattern, question, re.I)), None)
    prompt = split_prompt(question)
    if _CAUSAL.search(prompt.question):
        designed = parse_design(prompt.question, prompt.context, frame, estimand)
        if designed is not None:
            spec, sentence = designed
            spec.requests[0].decimals = _decimals_of(question)
            return spec.model_copy(update={"sentence": sentence}), sentence
    method = next(((m, words) for pattern, m, words in _METHODS if re.search(pattern, question, re.I)), None)
    if estimand is None and method is None:
        return None
    treatment = _named(question, frame, _TREATMENT_NAMES, binary=True)
    outcome = _named(question, frame, _OUTCOME_NAMES, binary=False)
    if treatment is None or outcome is None:
        missing = "treatment (a 0/1 column)" if treatment is None else "outcome"
        raise CausalRequestError(
            f"the question asks for a causal effect but names no {missing} column of the data; "
            f"columns: {', '.join(map(str, frame.columns[:30]))}"
        )
    covariates = [str(c) for c in frame.columns if str(c) not in (treatment, outcome) and frame[c].dtype.kind in "biuf"]
    estimand = estimand or "ate"
    key, words = method or ("regression_adjustment", _METHODS[2][2])
    options: dict[str, Any] = {
        "treatment": treatment,
        "outcome": outcome,
        "covariates": covariates,
        "estimand": estimand,
        "method": key,
        "seed": 0,
        "bootstrap": 200,
    }
    request = Request(
        slot="effect", op="effect", columns=[treatment, outcome], options=options, decimals=_decimals_of(question)
    )
    label = {
        "ate": "average treatment effect (ATE)",
        "att": "average treatment effect on the treated (ATT)",
        "atc": "average treatment effect on the control (ATC)",
    }[estimand]
    adjusted = f"adjusting for {len(covariates)} covariates" if covariates else "with no covariates"
    sentence = (
        f"{{shown}} is the {label} of '{treatment}' on '{outcome}', estimated by {words}, {adjusted} "
        f"(bootstrap standard error {{se:.3g}}, n = {{n}}, {{n_treated}} treated)."
    )
    return RequestSpec(requests=[request], sentence=sentence), sentence
