"""What ``run_code`` gives back for ordinary code: results, tables, figures, errors, limits."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from whyflow.runtime.sandbox.run import Limits, SandboxInputError, run_code

ROOT = Path(__file__).resolve().parents[2]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def sales(tmp_path: Path) -> tuple[Path, pd.DataFrame]:
    rng = np.random.default_rng(7)
    frame = pd.DataFrame({"region": rng.choice(["n", "s", "e"], 300), "revenue": rng.gamma(2.0, 50.0, 300)})
    path = tmp_path / "sales.parquet"
    frame.to_parquet(path)
    return path, frame


def test_readme_sandbox_example_runs_and_matches_pandas() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Sandbox", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, flags=re.S)
    assert block is not None
    namespace: dict[str, object] = {}
    exec(block.group(1), namespace)  # the README's own example, as a user would run it
    res = namespace["res"]
    expected = pd.read_csv(ROOT / "examples/job_training.csv").groupby("region")["earnings"].mean()
    assert res.ok and res.result_kind == "table"  # type: ignore[attr-defined]
    rows = dict(res.result["rows"])  # type: ignore[attr-defined]
    assert rows == pytest.approx(expected.to_dict())


def test_a_table_result_is_truncated_to_max_rows_with_the_true_count(sales: tuple[Path, pd.DataFrame]) -> None:
    path, frame = sales
    res = run_code("result = df.sort_values('revenue')", {"sales": path}, Limits(max_rows=5))
    assert res.ok and res.result_kind == "table" and res.truncated
    assert res.result["row_count"] == len(frame) and len(res.result["rows"]) == 5
    assert res.result["rows"][0][1] == pytest.approx(frame["revenue"].min())


def test_scalars_lists_dicts_and_series_cross_as_json(sales: tuple[Path, pd.DataFrame]) -> None:
    path, frame = sales
    code = (
        "result = {'mean': df['revenue'].mean(), 'n': np.int64(len(df)), 'nan': float('nan'),\n"
        "          'quantiles': df['revenue'].quantile([0.25, 0.75]).to_numpy(), 'when': pd.Timestamp('2024-01-02')}\n"
    )
    res = run_code(code, {"sales": path})
    assert res.ok and res.result_kind == "dict"
    assert res.result["mean"] == pytest.approx(frame["revenue"].mean())
    assert res.result["n"] == 300 and res.result["nan"] is None
    assert res.result["quantiles"] == pytest.approx(frame["revenue"].quantile([0.25, 0.75]).tolist())
    assert res.result["when"].startswith("2024-01-02")
    series = run_code("result = df.groupby('region')['revenue'].sum()", {"sales": path})
    assert series.result_kind == "table" and series.result["columns"] == ["region", "revenue"]
    scalar = run_code("result = np.float32(1.5)")
    assert scalar.result_kind == "scalar" and scalar.result == 1.5


def test_two_datasets_and_df_is_the_first(sales: tuple[Path, pd.DataFrame], tmp_path: Path) -> None:
    path, frame = sales
    other = tmp_path / "other.csv"
    other.write_text("k\n1\n2\n")
    res = run_code("result = [len(df), len(datasets['other']), sorted(datasets)]", {"sales": path, "other": other})
    assert res.ok and res.result == [len(frame), 2, ["other", "sales"]]


def test_figures_vega_lite_and_matplotlib(sales: tuple[Path, pd.DataFrame], tmp_path: Path) -> None:
    path, _ = sales
    spec = "figure = {'mark': 'bar', 'encoding': {'x': {'field': 'region'}}}\n"
    plot = "import matplotlib.pyplot as plt\nplt.hist(df['revenue'])\nresult = 1\n"
    res = run_code(spec + plot, {"sales": path})
    kinds = [f.kind for f in res.figures]
    assert res.ok and kinds == ["vega-lite", "png"]
    assert res.figures[0].spec == {"mark": "bar", "encoding": {"x": {"field": "region"}}}
    assert base64.b64decode(res.figures[1].png_base64 or "").startswith(PNG_MAGIC)
    saved = run_code(plot, {"sales": path}, figures_dir=tmp_path / "figs")
    png = Path(saved.figures[0].png_path or "")
    assert png.parent == tmp_path / "figs" and png.read_bytes().startswith(PNG_MAGIC)


def test_errors_carry_the_generated_line() -> None:
    res = run_code("x = 1\ny = x / 0\n")
    assert not res.ok and res.error == "ZeroDivisionError: division by zero"
    assert 'File "<generated>", line 2' in (res.traceback or "") and "y = x / 0" in (res.traceback or "")
    assert "sandbox/child.py" not in (res.traceback or "")


def test_a_result_that_cannot_cross_is_a_clear_failure() -> None:
    res = run_code("result = open")
    assert not res.ok and "cannot be returned" in (res.error or "")


def test_the_cpu_limit_ends_a_busy_loop_before_the_wall_clock() -> None:
    res = run_code("while True:\n    pass\n", limits=Limits(cpu_seconds=1, wall_seconds=20))
    assert not res.ok and not res.timed_out and "CPU limit" in (res.error or "")
    assert res.wall_seconds < 10


def test_an_oversized_result_is_refused() -> None:
    res = run_code("result = 'x' * 5000", limits=Limits(result_bytes=1024))
    assert not res.ok and "over the 1024-byte limit" in (res.error or "")


def test_nothing_passes_from_one_warm_run_to_the_next() -> None:
    first = run_code("import json\njson.leak = 1\nopen('left.txt', 'w').write('x')\nresult = 1", warm=True)
    second = run_code("import json, os\nresult = [hasattr(json, 'leak'), os.path.exists('left.txt')]", warm=True)
    assert first.ok and second.ok and second.result == [False, False]
    assert "warm-fork" in second.layers


def test_bad_inputs_are_the_callers_error(tmp_path: Path) -> None:
    with pytest.raises(SandboxInputError, match="is not a file"):
        run_code("result = 1", {"x": tmp_path / "missing.csv"})
    (tmp_path / "data.xlsx").write_bytes(b"PK")
    with pytest.raises(SandboxInputError, match="neither CSV nor Parquet"):
        run_code("result = 1", {"x": tmp_path / "data.xlsx"})
    with pytest.raises(ValueError, match="WHYFLOW_SANDBOX_ISOLATION"):
        run_code("result = 1", isolation="none")  # type: ignore[arg-type]


def test_a_dead_warm_template_falls_back_to_a_cold_run(monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import signal

    from whyflow.runtime.sandbox import server as sandbox_server

    assert run_code("result = 1", isolation="no-namespaces", warm=True).ok
    [template] = [t for t in sandbox_server._templates.values() if t.key[0] == "no-namespaces"]
    os.kill(template.proc.pid, signal.SIGKILL)
    template.proc.wait()
    monkeypatch.setattr(sandbox_server.Template, "alive", lambda self: True)  # as if it died just now
    res = run_code("result = 2", isolation="no-namespaces", warm=True)
    assert res.ok and res.result == 2 and "warm-fork" not in res.layers
    assert template not in sandbox_server._templates.values() and not template.root.exists()


def test_the_process_limit_holds() -> None:
    code = (
        "import os, time\nn, err = 0, None\nfor _ in range(40):\n    try:\n        pid = os.fork()\n"
        "    except OSError as exc:\n        err = type(exc).__name__\n        break\n"
        "    if pid == 0:\n        time.sleep(30)\n        os._exit(0)\n    n += 1\nresult = [n, err]\n"
    )
    res = run_code(code, limits=Limits(processes=8, wall_seconds=10))
    assert res.ok and res.result[1] == "BlockingIOError" and 1 <= res.result[0] < 8


def test_filling_the_scratch_folder_with_many_files_is_stopped() -> None:
    code = "import time\nfor i in range(64):\n    open(f'f{i}', 'wb').write(b'x' * (1 << 20))\ntime.sleep(20)\n"
    res = run_code(code, limits=Limits(scratch_bytes=16 * 1024**2, file_size_bytes=2 * 1024**2, wall_seconds=20))
    assert not res.ok and not res.timed_out and "scratch folder" in (res.error or "")
    assert res.wall_seconds < 10


@pytest.mark.parametrize("warm", [True, False])
def test_tsv_and_gzipped_csv_inputs(tmp_path: Path, warm: bool) -> None:
    import gzip

    (tmp_path / "a.tsv").write_text("k\tv\n1\t2\n3\t4\n")
    with gzip.open(tmp_path / "b.csv.gz", "wt") as handle:
        handle.write("k,v\n5,6\n")
    res = run_code(
        "result = [list(df.columns), int(df['v'].sum()), int(datasets['b']['k'].sum())]",
        {"a": tmp_path / "a.tsv", "b": tmp_path / "b.csv.gz"},
        warm=warm,
    )
    assert res.ok and res.result == [["k", "v"], 6, 5], res.error


def test_scratch_folders_of_a_killed_process_are_swept(tmp_path: Path) -> None:
    import os
    import subprocess

    from whyflow.runtime.sandbox import process as sandbox_process

    gone = subprocess.Popen(["true"])
    gone.wait()
    stale = [tmp_path / f"whyflow-sandbox-{gone.pid}-abc", tmp_path / f"whyflow-sandbox-warm-{gone.pid}-def"]
    alive = [tmp_path / "whyflow-sandbox-1-ghi", tmp_path / f"whyflow-sandbox-{os.getpid()}-jkl", tmp_path / "other"]
    for folder in stale + alive:
        (folder / "sub").mkdir(parents=True)
    sandbox_process.sweep_stale(str(tmp_path))
    assert [f.exists() for f in stale] == [False, False] and all(f.exists() for f in alive)
