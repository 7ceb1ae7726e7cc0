"""What the bad-input battery's modules share: the recipes, a study with a known effect, file makers."""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd
import pytest

from benchmarks.synthetic import linear_confounding
from whyflow.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
QUICK = "quick_estimate"
FULL = "causal_analysis"
TOY = str(ROOT / "tests" / "fixtures" / "recipes" / "valid_toy.yaml")
FAST = ("--set", "notebook_generator.execute=false", "--set", "notebook_generator.html=false")
T, Y = ("-t", "treated"), ("-y", "outcome")


def study(n: int = 600, seed: int = 11) -> pd.DataFrame:
    """Linear confounding with a true effect of 2.0 (treated -> outcome; x1..x3 confound)."""
    frame, _ = linear_confounding(n, effect=2.0, seed=seed)
    return frame


@contextlib.contextmanager
def tmpfs(path: Path, options: str) -> Iterator[Path]:
    """A tmpfs mounted at ``path`` (needs root; the test is skipped where mounting is not allowed)."""
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.decode().strip() or 'not root'})")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def write_file(text: str | bytes) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        path = folder / "data.csv"
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        return path

    return make


def frame_file(frame: pd.DataFrame, name: str = "data.csv") -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        path = folder / name
        frame.to_parquet(path) if name.endswith(".parquet") else frame.to_csv(path, index=False)
        return path

    return make


def with_column(column: str, values: list[object]) -> Callable[[Path], Path]:
    frame = study(60)
    frame[column] = (values * len(frame))[: len(frame)]
    return frame_file(frame)


def quick_run(data: Path, out: Path, *extra: str) -> dict:  # type: ignore[type-arg]
    code = main(["run", QUICK, "--data", str(data), *T, *Y, "-o", str(out), *FAST, *extra])
    state = json.loads((out / "state.json").read_text())
    assert code == 0, state.get("error_message")
    return state


def headline_row(state: dict) -> dict:  # type: ignore[type-arg]
    effects = state["treatment_effects"]
    return next(e for e in effects if e["details"].get("headline")) if effects else {}
