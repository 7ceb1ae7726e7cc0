"""The README's `whyflow ask` examples are answered (deterministic mode, the real runner and sandbox)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.ask.test_agents import ask

ROOT = Path(__file__).resolve().parents[2]


def _examples() -> list[tuple[str, str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Ask the data") :]
    section = section[: section.index("\n## ", 5)]
    out = []
    for line in re.findall(r"^\$ (whyflow ask .*)$", section, flags=re.M):
        argv = shlex.split(line.split("  #")[0])
        if "--session" in argv or "--llm" in argv or "effect of" in line:
            continue  # sessions, the model and the causal recipe have their own tests
        data = argv[argv.index("--data") + 1]
        question = next(a for a in argv[2:] if not a.startswith("-") and a != data and not a.startswith("runs/"))
        out.append((data, question))
    return out


@pytest.mark.slow
def test_readme_ask_examples_are_answered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    examples = _examples()
    assert len(examples) >= 5
    if not Path("../shared/datasets/public").is_dir():  # as test_auto: the shared datasets live beside the checkout
        pytest.skip("the README's example data (../shared/datasets/public) is not beside this checkout")
    for i, (data, question) in enumerate(examples):
        if not Path(data).exists():
            pytest.fail(f"README example data {data} is missing")
        state = ask(tmp_path / str(i), Path(data), question)
        final = state.final_output
        assert final is not None and final.output_type in ("analysis", "visualization"), (question, final)
        assert state.execution_success and not final.answer.startswith("I can't"), question
