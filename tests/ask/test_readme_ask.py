"""The `whyflow ask` examples of the README and of docs/ask.md are answered (deterministic mode,
the real runner and sandbox); an answer the page prints below its command is the one given."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.ask.test_agents import ask
from whyflow.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Example:
    data: str
    question: str
    describe: str | None
    metadata: str | None
    printed: str | None
    """The answer line the page shows below the command, if it shows one."""


def _examples(page: str, heading: str) -> list[Example]:
    text = (ROOT / page).read_text(encoding="utf-8")
    section = text[text.index(heading) :]
    section = section[: section.index("\n## ", 5)]
    out = []
    for match in re.finditer(r"^\$ (whyflow ask .*)$\n?(?P<next>[^$\n`][^\n]*)?", section, flags=re.M):
        line = match.group(1)
        argv = shlex.split(line.split("  #")[0])
        if "--session" in argv or "--llm" in argv or "effect of" in line:
            continue  # sessions, the model and the causal recipe have their own tests
        args = build_parser().parse_args(argv[1:])
        out.append(Example(args.data[0], args.question, args.describe, args.metadata, match.group("next")))
    return out


README = _examples("README.md", "## Ask the data")
DESCRIBED = _examples("docs/ask.md", "## The data's own words")


@pytest.mark.slow
def test_readme_ask_examples_are_answered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    assert len(README) >= 5 and any(e.describe for e in README) and any(e.metadata for e in README)
    if not Path("../shared/datasets/public").is_dir():  # as test_auto: the shared datasets live beside the checkout
        pytest.skip("the README's example data (../shared/datasets/public) is not beside this checkout")
    _answered(README, tmp_path)


def test_describe_examples_of_the_docs_are_answered_as_printed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    assert len(DESCRIBED) == 2 and all(e.printed for e in DESCRIBED)
    _answered(DESCRIBED, tmp_path)
    for i, example in enumerate(DESCRIBED):  # and without the description: declined, not guessed
        bare = ask(tmp_path / f"bare{i}", Path(example.data), example.question)
        assert bare.final_output is not None and bare.final_output.answer.startswith("I can't"), example


def _answered(examples: list[Example], tmp_path: Path) -> None:
    for i, e in enumerate(examples):
        if not Path(e.data).exists():
            pytest.fail(f"example data {e.data} is missing")
        state = ask(tmp_path / str(i), Path(e.data), e.question, describe=e.describe, metadata=e.metadata)
        final = state.final_output
        assert final is not None and final.output_type in ("analysis", "visualization"), (e.question, final)
        assert state.execution_success and not final.answer.startswith("I can't"), e.question
        if e.printed and not e.printed.startswith(("answer:", "page:")):
            assert final.answer == e.printed, (e.question, final.answer)
