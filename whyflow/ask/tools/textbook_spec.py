"""What a textbook statistics question asks, typed (the test, its columns or values, what of the
test is wanted, the convention used), and the sandbox code that computes it with
:mod:`whyflow.ask.tools.textbook_ops`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ValueRef", "TextbookSpec", "textbook_code"]


class ValueRef(BaseModel):
    """One value of one column, with the question's words that named it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    column: str
    value: str
    words: str


class TextbookSpec(BaseModel):
    """A textbook question's computation.

    - ``column_type``: whether ``columns[0]`` is a numerical or a categorical variable;
    - ``chi2_stated``: the upper-tail p-value of a stated chi-square ``statistic`` with ``df``;
    - ``independence``: Pearson's chi-square test of ``columns[0]`` against ``columns[1]``;
    - ``disjoint``: whether ``values`` never occur together in one row;
    - ``goodness_of_fit``: the chi-square goodness-of-fit test over the categories of ``columns[0]``;
    - ``sample_size``: the number of rows;
    - ``proportion_se`` / ``proportion_ci``: the standard error / normal-approximation confidence
      interval (level ``1 - alpha``) of the share of ``values[0]``;
    - ``one_proportion_z``: the one-sample z-test of the share of ``values[0]`` against
      ``null_value`` (standard error from the null value), ``alternative`` as said;
    - ``z_score``: (``given`` - mean) / sd of ``columns[0]`` (sample sd, n - 1);
    - ``distribution_fit``: the maximum-likelihood ``want`` (mean, sd or rate) of a ``distribution``
      fitted to ``columns[0]``;
    - ``proportion_point``: the sample proportion (the point estimate) of ``values[0]``;
    - ``proportion_difference``: the absolute gap between the share of ``values[0]`` in the two
      values of ``columns[1]``;
    - ``higher_group``: the value of ``columns[0]`` with the higher (``want='statistic'``) or lower
      share of ``values[0]``;
    - ``paired_t``: the two-sided paired t-test of the mean of ``columns[0] - columns[1]`` over the
      rows with both (``want``: the p-value, the t statistic or its degrees of freedom);
    - ``two_sample_t``: Welch's two-sided t-test of ``columns[0]`` between the rows holding
      ``values[0]`` and those holding ``values[1]`` (of ``columns[1]``);
    - ``quartile``: the median, first or third quartile, or interquartile range (``want``) of
      ``columns[0]``, interpolated linearly between order statistics;
    - ``two_proportion_z``: the two-sample z-test of proportions (pooled, two-sided) of the share of
      ``values[0]`` between the rows holding ``values[1]`` and those holding ``values[2]``;
    - ``skew``: the direction of ``columns[0]``'s skewness, symmetric within twice its standard
      error (``want='statistic'``: the question offers no 'symmetric', no answer there);
    - ``union``: the share of rows holding any of ``values`` (P(A or B)), over the rows where each
      named column is known;
    - ``draws``: the binomial probability that ``want`` (all, none, exactly / at least / at most
      ``hits``) of ``draws`` independent draws hold the event: ``values[0]``, or ``low`` ≤
      ``columns[0]`` ≤ ``high`` (< where ``strict``), its share over the rows weighted by ``weights`` when given;
    - ``expected_count``: the expected count, under independence, of the rows holding both
      ``values`` (one of each of ``columns``): row total times column total over the rows with both;
    - ``study_design``: an experiment, the description saying the units were assigned at random
      (``evidence``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal[
        "column_type",
        "chi2_stated",
        "independence",
        "disjoint",
        "goodness_of_fit",
        "sample_size",
        "proportion_se",
        "proportion_ci",
        "proportion_difference",
        "higher_group",
        "study_design",
        "paired_t",
        "quartile",
        "two_sample_t",
        "union",
        "two_proportion_z",
        "skew",
        "draws",
        "expected_count",
        "proportion_point",
        "one_proportion_z",
        "z_score",
        "distribution_fit",
    ]
    want: Literal[
        "p_value",
        "statistic",
        "df",
        "decision",
        "independent",
        "lower",
        "upper",
        "answer",
        "median",
        "q1",
        "q3",
        "iqr",
        "all",
        "none",
        "at_least",
        "at_most",
        "exactly",
        "mean",
        "sd",
        "rate",
    ] = "answer"
    columns: list[str] = Field(default_factory=list)
    values: list[ValueRef] = Field(default_factory=list)
    statistic: float | None = None
    df: int | None = None
    alpha: float = Field(0.05, gt=0, lt=1, description="the significance level a decision uses")
    alpha_stated: bool = False
    choices: list[str] = Field(default_factory=list, description="the answer's options, as the question gave them")
    decimals: int | None = None
    restated: list[str] = Field(
        default_factory=list, description="the question's phrases read as a repeat of the data's description"
    )
    evidence: str | None = Field(None, description="the description's words a study_design answer rests on")
    draws: int | None = Field(None, ge=1, description="the number of independent random draws")
    hits: int | None = Field(None, ge=0, description="how many of the draws the event must hold in (see want)")
    low: float | None = Field(None, description="the event's lower bound on columns[0]")
    high: float | None = Field(None, description="the event's upper bound on columns[0]")
    strict: bool = Field(False, description="low and high themselves are outside the event ('more than 30')")
    weights: str | None = Field(None, description="a frequency column: how many units each row stands for")
    unit: str | None = Field(None, description="the question's word for what is drawn ('adults')")
    null_value: float | None = Field(None, gt=0, lt=1, description="the proportion a one-sample test is against")
    alternative: Literal["two-sided", "larger", "smaller"] = "two-sided"
    given: float | None = Field(None, description="the value of columns[0] whose z-score is asked")
    distribution: Literal["normal", "exponential", "poisson"] | None = None
    described: bool = Field(False, description="values[0] is named by the data's description, not the question")


def textbook_code(spec: TextbookSpec) -> str:
    """Complete sandbox code: the operations' source, then the one call that answers the spec."""
    from whyflow.ask.tools.plain_spec import sandbox_program

    return sandbox_program(Path(__file__).parent / "textbook_ops.py", "answer_textbook", spec)
