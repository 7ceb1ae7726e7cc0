"""Textbook statistics questions composed over several two-category datasets, each with its gold
computed here by statsmodels, scipy.special or pandas (never by the reader or its operations):
a variable's type, the independence of two columns (yes/no, p-value, degrees of freedom, accept /
reject), a stated chi-square statistic's p-value, whether two values are mutually exclusive, the
probability that a randomly chosen row with one value has another, and the same with an unread
clause, which must get no number. Choice answers are scored as numbers: 1 for 'not independent',
'reject', 'disjoint' and 'numerical', 0 for the other option.

    from benchmarks.textbook_question_gen import generate_textbook
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import pandas as pd
from scipy import special
from scipy.stats import norm
from statsmodels.stats.contingency_tables import Table

from benchmarks.plain_question_gen import SHARED, Question, frame

_PAIRS = (  # file, two categorical columns
    ("heart_transplant.csv", "survived", "transplant"),
    ("diabetes2.csv", "treatment", "outcome"),
    ("smallpox.csv", "result", "inoculated"),
    ("migraine.csv", "group", "pain_free"),
    ("stent365.csv", "group", "outcome"),
    ("sleep_deprivation.csv", "sleep", "profession"),
    ("full_body_scan.csv", "answer", "party_affiliation"),
    ("immigration.csv", "response", "political"),
    ("drone_blades.csv", "supplier", "inspection"),
    ("burger.csv", "best_burger_place", "gender"),
    ("sinusitis.csv", "group", "self_reported_improvement"),
)
_UNREAD = ("among people who like cats", "for those born on a Monday")


@dataclass(frozen=True)
class _Pair:
    name: str
    df: pd.DataFrame
    a: str
    b: str


def _said(column: str) -> str:
    return column.replace("_", " ")


def _pairs() -> list[_Pair]:
    folder = SHARED / "datasets" / "public" / "qrdata2"
    return [_Pair(f, frame(folder / f), a, b) for f, a, b in _PAIRS if (folder / f).exists()]


def _pearson(df: pd.DataFrame, a: str, b: str) -> tuple[float, int]:
    both = df[[a, b]].dropna()
    table = Table(pd.crosstab(both[a].astype(str), both[b].astype(str)))
    test = table.test_nominal_association()
    return float(test.pvalue), int(test.df)


def _unique_values(p: _Pair) -> list[tuple[str, str]]:
    """(column, value) whose label no other column of the pair holds, one word or a whole label."""
    held: dict[str, set[str]] = {}
    for c in (p.a, p.b):
        for v in p.df[c].dropna().astype(str).unique():
            held.setdefault(v.lower(), set()).add(c)
    return [(next(iter(cs)), v) for v, cs in held.items() if len(cs) == 1 and v.replace("'", "").isascii()]


def _value_label(p: _Pair, column: str, low: str) -> str:
    return next(v for v in p.df[column].dropna().astype(str).unique() if v.lower() == low)


def generate_textbook(n: int, seed: int = 0) -> list[tuple[Question, str]]:
    """``n`` seeded (question, prompt) pairs with their golds; the prompt is what a person types."""
    rng = random.Random(seed)
    pairs = _pairs()
    out: list[tuple[Question, str]] = []
    while pairs and len(out) < n:
        p = rng.choice(pairs)
        a, b = rng.sample([p.a, p.b], 2)
        kind = rng.choice(
            ["type", "independent", "p", "df", "decision", "stated", "exclusive", "probability", "unread"]
            + ["size", "se", "ci", "gap", "higher"]
        )
        gold: float | None
        if kind == "type":
            text = f'Is the {_said(a)} variable numerical or categorical? Answer with "numerical" or "categorical".'
            gold = 0.0  # these columns hold labels
        elif kind == "independent":
            form = rng.choice(["Is {a} independent of {b}?", "Are {a} and {b} independent?"])
            text = form.format(a=_said(a), b=_said(b)) + ' Answer with "yes" or "no".'
            gold = float(_pearson(p.df, a, b)[0] < 0.05)
        elif kind in ("p", "df", "decision"):
            null = f"Given the null hypothesis that {_said(a)} is independent of {_said(b)}, conduct a chi-square test."
            p_value, dof = _pearson(p.df, a, b)
            if kind == "p":
                text, gold = f"{null} Identify the p-value.", p_value
            elif kind == "df":
                text, gold = f"{null} How many degrees of freedom does the test have?", float(dof)
            else:
                level = rng.choice([1, 5, 10])
                text = f'{null} Will you accept or reject the hypothesis at the {level}% significance level? Answer with "accept" or "reject".'
                gold = float(p_value < level / 100)
        elif kind == "size":
            noun = rng.choice(["patients", "respondents", "participants", "people"])
            text = rng.choice([f"How many {noun} were included in the study?", f"How many {noun} are in the data?"])
            gold = float(len(p.df))
        elif kind in ("gap", "higher"):
            flag = next((c for c in (p.a, p.b) if set(p.df[c].dropna().astype(str).str.lower()) == {"yes", "no"}), None)
            group = p.b if flag == p.a else p.a
            if flag is None or p.df[group].nunique() != 2 and kind == "gap":
                continue
            share = (p.df[flag].astype(str).str.lower() == "yes").groupby(p.df[group]).mean()
            if kind == "gap":
                text = f"What is the absolute value of the difference in {_said(flag)} rates in the two groups?"
                gold = float(abs(share.iloc[0] - share.iloc[1]))
            else:
                labels = " or ".join(f'"{v}"' for v in share.index)
                text = (
                    f"In which {_said(group)} did a higher percentage of rows have {_said(flag)}? Answer with {labels}."
                )
                gold = float(share.max()) if (share == share.max()).sum() == 1 else math.nan
        elif kind == "stated":
            stat, dof = round(rng.uniform(0.5, 20), 2), rng.randint(1, 6)
            text = (
                f"If the null hypothesis is true, the test statistic X2 = {stat} follows a chi-square distribution with "
                f"{dof} degrees of freedom. Identify the p-value."
            )
            gold = float(special.chdtrc(dof, stat))
        else:
            values = _unique_values(p)
            first = [v for v in values if v[0] == a]
            second = [v for v in values if v[0] == b]
            if not first or not second:
                continue
            (ca, va), (cb, vb) = rng.choice(first), rng.choice(second)
            la, lb = _value_label(p, ca, va), _value_label(p, cb, vb)
            hit_a = p.df[ca].astype(str).str.lower() == va
            hit_b = p.df[cb].astype(str).str.lower() == vb
            known = p.df[ca].notna()
            share, n_known = float(hit_a[known].mean()), int(known.sum())
            if kind == "se":
                text, gold = (
                    f"Estimate the standard error of the proportion of {la}.",
                    math.sqrt(share * (1 - share) / n_known),
                )
            elif kind == "ci":
                level, side = rng.choice([90, 95, 99]), rng.choice(["lower", "upper"])
                text = (
                    f"Construct a {level}% confidence interval for the proportion of {la}. "
                    f"Please output the {side} bound of the confidence interval."
                )
                half = norm.ppf(1 - (1 - level / 100) / 2) * math.sqrt(share * (1 - share) / n_known)
                gold = share - half if side == "lower" else share + half
            elif kind == "exclusive":
                text = f'Are {la} and {lb} mutually exclusive? Answer with "yes" or "no".'
                gold = float(not (hit_a & hit_b).any())
            elif kind == "probability":
                forms = (
                    "What is the probability that a randomly chosen row with {a} is {b}?",
                    "What is the probability that a randomly selected row is {b} given that it is {a}?",
                )
                text = rng.choice(forms).format(a=la, b=lb)
                gold = float(hit_b[hit_a].mean()) if hit_a.any() else math.nan
            else:
                text, gold = f"Is {_said(a)} independent of {_said(b)} {rng.choice(_UNREAD)}?", None
        if gold is not None and not math.isfinite(gold):
            continue
        out.append((Question(dataset=p.name, text=text, gold=gold, kind=kind), text))
    return out
