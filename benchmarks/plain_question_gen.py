"""Questions composed from operations × populations × groupings × phrasings over six datasets, each
with its gold computed by pandas from the population's own mask (never by the parser).

Each dataset lists the phrases people use for its groups of rows ("trainees", "people who did
not train", "women", "third class passengers", "cars with more than 100 horsepower"), each with
the pandas mask it means, written by hand; the numeric columns asked about, as people name them;
and the events a share asks about ("took the training", "survived"). :func:`generate` composes
seeded questions: a statistic of a column over a population (one phrase, or a head and a
qualifier), a count, a conditional share P(event | population), a contrast between two
populations, and the same with a grouping ("by region") or an unread qualifier ("who live far
away"), which must get no number. :func:`judge` scores one reply against the gold.

    from benchmarks.plain_question_gen import generate, judge
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("WHYFLOW_SHARED", ROOT.parent / "shared"))

Mask = Callable[[pd.DataFrame], pd.Series]


@dataclass(frozen=True)
class Population:
    head: str  # as a noun phrase: "trainees", "married people"
    mask: Mask
    qualifier: str | None = None  # as a qualifier after a head: "who did not train", "older than 50"


@dataclass(frozen=True)
class Event:
    phrase: str  # after "What percentage of <population>": "took the training"
    mask: Mask


@dataclass(frozen=True)
class Dataset:
    name: str
    path: Path
    people: str  # the generic head noun: "people", "passengers", "cars"
    targets: dict[str, str]  # how a question names a numeric column → the column
    populations: tuple[Population, ...]
    events: tuple[Event, ...]
    groupings: tuple[str, ...]  # "by region"
    rates: tuple[Event, ...] = ()  # "survival rate": the share of rows with a flag, named by its word


@dataclass(frozen=True)
class Question:
    dataset: str
    text: str
    gold: float | None  # None: the question must get no number (a grouping or an unread clause)
    kind: str


def _eq(column: str, value: object) -> Mask:
    return lambda df: df[column] == value


def _num(column: str) -> Callable[[pd.DataFrame], pd.Series]:
    return lambda df: pd.to_numeric(df[column], errors="coerce")


def datasets() -> list[Dataset]:
    pub = SHARED / "datasets" / "public"
    return [
        Dataset(
            name="job_training",
            path=ROOT / "examples" / "job_training.csv",
            people="people",
            targets={
                "age": "age",
                "earnings": "earnings",
                "skills score": "skills_score",
                "prior earnings": "prior_earnings",
            },
            populations=(
                Population("trainees", _eq("training", 1), "who trained"),
                Population("non-trainees", _eq("training", 0), "who did not train"),
                Population("married people", _eq("married", 1), "who are married"),
                Population("unmarried people", _eq("married", 0), "who are not married"),
                Population("people in the north region", _eq("region", "north"), "in the north region"),
                Population("people older than 50", lambda df: df["age"] > 50, "older than 50"),
                Population("people over 40", lambda df: df["age"] > 40, None),
                Population(
                    "people with at least 12 years of education",
                    lambda df: df["education_years"] >= 12,
                    "with at least 12 years of education",
                ),
            ),
            events=(
                Event("took the training", _eq("training", 1)),
                Event("did not take the training", _eq("training", 0)),
                Event("are married", _eq("married", 1)),
                Event("are older than 50", lambda df: df["age"] > 50),
            ),
            groupings=("by region", "per region"),
            rates=(Event("training rate", _eq("training", 1)),),
        ),
        Dataset(
            name="titanic",
            path=pub / "dabench" / "titanic.csv",
            people="passengers",
            targets={"age": "Age", "fare": "Fare"},
            populations=(
                Population("women", _eq("Sex", "female"), None),
                Population("men", _eq("Sex", "male"), None),
                Population("survivors", _eq("Survived", 1), "who survived"),
                Population("third class passengers", _eq("Pclass", 3), "in third class"),
                Population("first class passengers", _eq("Pclass", 1), "in first class"),
                Population("passengers older than 30", lambda df: df["Age"] > 30, "older than 30"),
                Population("passengers under 10", lambda df: df["Age"] < 10, None),
            ),
            events=(
                Event("survived", _eq("Survived", 1)),
                Event("did not survive", _eq("Survived", 0)),
                Event("were in third class", _eq("Pclass", 3)),
            ),
            groupings=("by sex", "for each class"),
            rates=(Event("survival rate", _eq("Survived", 1)),),
        ),
        Dataset(
            name="insurance",
            path=pub / "dabench" / "insurance.csv",
            people="people",
            targets={"charges": "charges", "bmi": "bmi", "age": "age"},
            populations=(
                Population("smokers", _eq("smoker", "yes"), "who smoke"),
                Population("non-smokers", _eq("smoker", "no"), "who do not smoke"),
                Population("women", _eq("sex", "female"), None),
                Population("men", _eq("sex", "male"), None),
                Population("people in the southwest region", _eq("region", "southwest"), "in the southwest region"),
                Population("people with 2 children", _eq("children", 2), "with 2 children"),
                Population("people younger than 30", lambda df: df["age"] < 30, "younger than 30"),
            ),
            events=(
                Event("are smokers", _eq("smoker", "yes")),
                Event("have more than 2 children", lambda df: df["children"] > 2),
                Event("are older than 40", lambda df: df["age"] > 40),
            ),
            groupings=("by region", "by sex"),
            rates=(Event("smoking rate", _eq("smoker", "yes")),),
        ),
        Dataset(
            name="credit",
            path=pub / "dabench" / "Credit.csv",
            people="customers",
            targets={"income": "Income", "balance": "Balance", "limit": "Limit", "rating": "Rating"},
            populations=(
                Population("students", _eq("Student", "Yes"), None),
                Population("married customers", _eq("Married", "Yes"), "who are married"),
                Population("customers older than 60", lambda df: df["Age"] > 60, "older than 60"),
                Population("customers with at least 4 cards", lambda df: df["Cards"] >= 4, "with at least 4 cards"),
                Population("women", lambda df: df["Gender"].str.strip() == "Female", None),
            ),
            events=(
                Event("are married", _eq("Married", "Yes")),
                Event("are students", _eq("Student", "Yes")),
                Event("have more than 3 cards", lambda df: df["Cards"] > 3),
            ),
            groupings=("by ethnicity", "per gender"),
        ),
        Dataset(
            name="auto_mpg",
            path=pub / "dabench" / "auto-mpg.csv",
            people="cars",
            targets={"mpg": "mpg", "weight": "weight", "horsepower": "horsepower", "acceleration": "acceleration"},
            populations=(
                Population("cars with 4 cylinders", _eq("cylinders", 4), "with 4 cylinders"),
                Population("cars with 8 cylinders", _eq("cylinders", 8), "with 8 cylinders"),
                Population(
                    "cars with more than 100 horsepower",
                    lambda df: _num("horsepower")(df) > 100,
                    "with more than 100 horsepower",
                ),
                Population("cars heavier than 3000", lambda df: df["weight"] > 3000, None),
            ),
            events=(
                Event("have 4 cylinders", _eq("cylinders", 4)),
                Event("have more than 100 horsepower", lambda df: _num("horsepower")(df) > 100),
            ),
            groupings=("by origin", "for each cylinders"),
        ),
        Dataset(
            name="heart_transplant",
            path=pub / "qrdata2" / "heart_transplant.csv",
            people="patients",
            targets={"age": "age", "survival time": "survtime", "wait": "wait"},
            populations=(
                Population("patients older than 50", lambda df: df["age"] > 50, "older than 50"),
                Population("patients in the treatment group", _eq("transplant", "treatment"), "in the treatment group"),
                Population("patients in the control group", _eq("transplant", "control"), "in the control group"),
            ),
            events=(
                Event("are older than 50", lambda df: df["age"] > 50),
                Event("are in the treatment group", _eq("transplant", "treatment")),
            ),
            groupings=("by transplant",),
        ),
    ]


@cache
def frame(path: Path) -> pd.DataFrame:
    return pd.read_csv(path)


_OPS = {
    "mean": ("the average {t}", "the mean {t}", "the average {t} of"),
    "median": ("the median {t}",),
    "sum": ("the total {t}",),
    "max": ("the highest {t}", "the maximum {t}"),
    "min": ("the lowest {t}", "the minimum {t}"),
    "std": ("the standard deviation of {t}",),
}
_UNREAD = ("who live far away", "who like cats", "born on a Monday")


def _stat(x: pd.Series, op: str) -> float:
    x = pd.to_numeric(x, errors="coerce").dropna()
    if x.empty:
        return math.nan
    return float({"mean": x.mean, "median": x.median, "sum": x.sum, "max": x.max, "min": x.min, "std": x.std}[op]())


def _phrase(ds: Dataset, pop: Population, rng: random.Random) -> str:
    if pop.qualifier and rng.random() < 0.5:
        return f"{ds.people} {pop.qualifier}"
    return pop.head


def _combined(ds: Dataset, rng: random.Random) -> tuple[str, Mask]:
    """One population, or a head with another population's qualifier ('trainees older than 50')."""
    first = rng.choice(ds.populations)
    others = [p for p in ds.populations if p is not first and p.qualifier]
    if others and rng.random() < 0.35:
        second = rng.choice(others)
        return f"{first.head} {second.qualifier}", lambda df: first.mask(df) & second.mask(df)
    return _phrase(ds, first, rng), first.mask


def generate(n: int, seed: int = 0) -> list[Question]:
    """``n`` seeded questions spread over the datasets, each with its pandas gold."""
    rng = random.Random(seed)
    sets = [d for d in datasets() if d.path.exists()]
    out: list[Question] = []
    while len(out) < n:
        ds = rng.choice(sets)
        df = frame(ds.path)
        kind = rng.choices(["stat", "count", "share", "rate", "contrast", "grouped", "unread"], [5, 2, 3, 1, 2, 1, 1])[
            0
        ]
        if kind == "rate" and not ds.rates:
            continue
        name, column = rng.choice(sorted(ds.targets.items()))
        op = rng.choice(sorted(_OPS))
        said = rng.choice(_OPS[op]).format(t=name)
        said = said.removesuffix(" of")
        lead = rng.choice(["What is", "Calculate", "What's", "Tell me"])
        if kind == "stat":
            phrase, mask = _combined(ds, rng)
            joint = rng.choice(["of", "among", "for"])
            text, gold = f"{lead} {said} {joint} {phrase}?", _stat(df.loc[mask(df), column], op)
        elif kind == "count":
            phrase, mask = _combined(ds, rng)
            text = rng.choice([f"How many {phrase} are there?", f"How many {phrase} are in the data?"])
            gold = float(mask(df).sum())
        elif kind == "share":
            phrase, mask = _combined(ds, rng)
            event = rng.choice(ds.events)
            word = rng.choice(["percentage", "proportion", "share", "fraction"])
            rel = rng.choice(["", "that ", "who "]) if not event.phrase.startswith(("are", "were", "have")) else ""
            text = f"What {word} of {phrase} {rel}{event.phrase}?"
            keep = mask(df)
            gold = float(event.mask(df)[keep].mean()) if keep.any() else math.nan
            if word == "percentage":
                gold *= 100
        elif kind == "rate":
            phrase, mask = _combined(ds, rng)
            event = rng.choice(ds.rates)
            text = f"{lead} the {event.phrase} {rng.choice(['of', 'among', 'for'])} {phrase}?"
            keep = mask(df)
            gold = float(event.mask(df)[keep].mean()) if keep.any() else math.nan
        elif kind == "contrast":
            a, b = rng.sample(list(ds.populations), 2)
            text = f"{lead} the difference in average {name} between {a.head} and {b.head}?"
            gold = _stat(df.loc[a.mask(df), column], "mean") - _stat(df.loc[b.mask(df), column], "mean")
        elif kind == "grouped":
            phrase, _ = _combined(ds, rng)
            text, gold = f"{lead} {said} of {phrase} {rng.choice(ds.groupings)}?", None
        else:
            text, gold = f"{lead} {said} of {ds.people} {rng.choice(_UNREAD)}?", None
        if gold is not None and not math.isfinite(gold):
            continue
        out.append(Question(dataset=ds.name, text=text, gold=gold, kind=kind))
    return out


def judge(question: Question, value: float | None) -> str:
    """right, wrong or declined: a number within 1e-6 (relative) of the gold is right; any number
    for a question that must get none, or away from the gold, is wrong; no number is declined."""
    if value is None:
        return "declined"
    if question.gold is None:
        return "wrong"
    share = question.kind == "share" and abs(value * 100 - question.gold) <= 1e-6 * max(1.0, abs(question.gold))
    return "right" if math.isclose(value, question.gold, rel_tol=1e-6, abs_tol=1e-9) or share else "wrong"
