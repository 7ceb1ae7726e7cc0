"""`whyflow ask --engine local`: the same answer and job files as the flow, without Prefect."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from whyflow.cli.main import main


def test_local_engine_answers_and_writes_the_job(
    shop: tuple[Path, pd.DataFrame], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, frame = shop
    out = tmp_path / "job"
    q = "Mean and median of price?\nFormat: @mean_price[m] @median_price[d] rounded to two decimal places"
    code = main(
        ["--runs-dir", str(tmp_path / "runs"), "ask", "--engine", "local", "--data", str(path), q, "--output", str(out)]
    )
    printed = capsys.readouterr().out
    assert code == 0
    assert f"@mean_price[{frame.price.mean():.2f}]" in printed
    assert f"@median_price[{frame.price.median():.2f}]" in printed
    answer = json.loads((out / "answer.json").read_text())
    assert answer["answer"] in printed
    assert json.loads((out / "state.json").read_text())["status"] == "completed"


def test_local_engine_never_imports_prefect(shop: tuple[Path, pd.DataFrame], tmp_path: Path) -> None:
    path, _ = shop
    script = (
        "import sys\nfrom whyflow.cli.main import main\n"
        f"code = main(['--runs-dir', {str(tmp_path)!r}, 'ask', '--engine', 'local', '--data', {str(path)!r}, "
        f"'What is the average price?', '--output', {str(tmp_path / 'job')!r}])\n"
        "print('PREFECT' if 'prefect' in sys.modules else 'NO-PREFECT', code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.stdout.strip().splitlines()[-1] == "NO-PREFECT 0", done.stderr[-2000:]
