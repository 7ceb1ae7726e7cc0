"""The worked-example library: YAML files under ``whyflow/ask/tools/examples/``, loaded strictly.

Each example (seed 002's example schema, adapted) says what kind of question it answers, gives a
few example questions for retrieval, names its parameter slots and carries a code template.
Templates use ``$slot`` placeholders (:class:`string.Template`); a column slot is substituted as a
Python string literal (``df[$value]`` → ``df['Fare']``), so a column name can never inject code.
A template sets ``result`` and, for charts, ``figure`` (a Vega-Lite dict with ≤ 100 rows).
"""

from __future__ import annotations

import re
import string
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from whyflow.ask.tools.errors import ExampleLibraryError

__all__ = ["Slot", "Example", "load_examples", "get_example", "SlotKind", "ExampleKind"]

SlotKind = Literal["numeric", "category", "column", "datetime", "integer", "number", "value", "text"]
ExampleKind = Literal[
    "statistic",
    "counts",
    "groupby",
    "test",
    "correlation",
    "chart",
    "outliers",
    "regression",
    "trend",
    "table",
    "concept",
]
COLUMN_SLOTS = ("numeric", "category", "column", "datetime")


class Slot(BaseModel):
    """One parameter of a template: a column of some kind, a number, or a value from the question."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: SlotKind
    description: str
    required: bool = True
    default: Any = None
    role: Literal["first", "second", "group", "time", "target", "any"] = Field(
        default="any", description="Where in the question the slot's column usually sits (e.g. 'by <group>')."
    )


class Example(BaseModel):
    """A worked example: retrieval text, slots, a code template and how its answer reads."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    kind: ExampleKind
    title: str
    description: str
    questions: list[str] = Field(min_length=2)
    tags: list[str] = Field(default_factory=list)
    requires: list[str] = Field(
        default_factory=list, description="Words (or word starts) of which the question must hold at least one."
    )
    avoid: list[str] = Field(default_factory=list, description="Words that mean another example fits better.")
    slots: dict[str, Slot] = Field(default_factory=dict)
    needs_code: bool = True
    needs_evaluation: bool = False
    output: Literal["scalar", "dict", "table", "list", "chart", "text"]
    code: str = ""
    answer: str = Field(
        description="Sentence template; {slot} names and {result}/{result[key]} are filled after the run."
    )
    caveats: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _template_matches_slots(self) -> Example:
        """Every ``$name`` in the code is a declared slot; code examples have code."""
        if self.needs_code and not self.code.strip():
            raise ValueError("an example with needs_code must carry a code template")
        names = set(_placeholders(self.code))
        unknown = names - set(self.slots)
        if unknown:
            raise ValueError(f"template uses undeclared slots: {', '.join(sorted(unknown))}")
        if self.needs_code and "result" not in self.code:
            raise ValueError("the code template must set `result`")
        return self

    def fits_intent(self, question: str) -> bool:
        """Whether the question holds one of the required words (if any) and none of the avoided ones.

        Words of three letters or fewer must match whole words ('per' is not 'percent'); longer
        ones match word starts ('correlat' matches 'correlation', 'skew' matches 'skewness').
        """
        text = question.lower()
        if any(_holds(text, word) for word in self.avoid):
            return False
        return not self.requires or any(_holds(text, word) for word in self.requires)

    def text_for_retrieval(self) -> str:
        """The text TF-IDF indexes: title, description, questions and tags."""
        return " ".join([self.title, self.description, *self.questions, *self.tags])


def _holds(text: str, word: str) -> bool:
    """Whether lower-case ``text`` holds ``word``: whole word if 3 letters or fewer, else a word start."""
    pattern = r"(?<![a-z])" + re.escape(word.lower()) + (r"(?![a-z])" if len(word) <= 3 else "")
    return re.search(pattern, text) is not None


def _placeholders(code: str) -> list[str]:
    """The ``$name`` placeholders of a template."""
    names = []
    for match in string.Template.pattern.finditer(code):
        name = match.group("named") or match.group("braced")
        if name:
            names.append(name)
    return names


@lru_cache(maxsize=1)
def load_examples() -> tuple[Example, ...]:
    """Every example of the packaged library, in file then document order; ids are unique.

    Raises:
        ExampleLibraryError: a file is not valid YAML, an example breaks the schema, or two share an id.
    """
    import yaml

    examples: list[Example] = []
    folder = resources.files("whyflow.ask.tools").joinpath("examples")
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".yaml")), key=lambda f: f.name)
    for file in files:
        try:
            documents = yaml.safe_load(file.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise ExampleLibraryError(f"examples/{file.name}: not valid YAML: {exc}") from exc
        if not isinstance(documents, list):
            raise ExampleLibraryError(f"examples/{file.name}: expected a list of examples at the top level")
        for index, raw in enumerate(documents):
            try:
                examples.append(Example.model_validate(raw))
            except ValidationError as exc:
                ident = raw.get("id", f"#{index + 1}") if isinstance(raw, dict) else f"#{index + 1}"
                raise ExampleLibraryError(f"examples/{file.name} example {ident}: {exc}") from exc
    seen: set[str] = set()
    for example in examples:
        if example.id in seen:
            raise ExampleLibraryError(f"two examples share the id {example.id!r}")
        seen.add(example.id)
    return tuple(examples)


def get_example(example_id: str) -> Example:
    """The example with this id (``KeyError`` naming the closest ids when there is none)."""
    from whyflow.runtime.data import suggest

    for example in load_examples():
        if example.id == example_id:
            return example
    raise KeyError(f"no example {example_id!r}{suggest(example_id, [e.id for e in load_examples()])}")
