"""whyflow installed from its wheel, outside the checkout, as a new user gets it.

The wheel is built from a copy of the package's files (no build isolation and no index: no
network), installed into a fresh virtual environment, and its dependencies come from this test
environment through a ``.pth`` line (a path listed there is added to ``sys.path`` without its own
``.pth`` files being run, so the checkout's editable install is not). Every command runs from an
empty temporary folder: nothing of the checkout can be found. OpenAI's Agents SDK
(``openai-agents``, import name ``agents``) is installed beside it, as many users have it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "job_training.csv"


@dataclass(frozen=True)
class Installed:
    """The fresh environment with the wheel installed, and an empty folder to work in."""

    wheel: Path
    python: Path
    whyflow: Path
    work: Path
    env: dict[str, str]

    def run(self, *argv: str, timeout: int = 900) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.whyflow), *argv], cwd=self.work, env=self.env, capture_output=True, text=True, timeout=timeout
        )


def _build_wheel(base: Path) -> Path:
    """The wheel of a copy of the package's own files (no build isolation, no index)."""
    source = base / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "whyflow", source / "whyflow", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    dist = base / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w", str(dist)]
        + [str(source)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    [wheel] = dist.glob("whyflow-*.whl")
    return wheel


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory, prefect_harness: None) -> Iterator[Installed]:
    base = tmp_path_factory.mktemp("install")
    wheel = _build_wheel(base)
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q", str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    deps = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    (Path(purelib) / "_test_dependencies.pth").write_text("\n".join(deps) + "\n")
    work = base / "work"
    work.mkdir()
    shutil.copy2(EXAMPLE, work / "jobs.csv")
    env = {
        "PATH": f"{venv / 'bin'}{os.pathsep}/usr/bin:/bin",
        "HOME": str(base / "home"),
        "PREFECT_HOME": str(base / "prefect"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "MPLCONFIGDIR": str(base / "mpl"),
        "JUPYTER_RUNTIME_DIR": str(base / "jupyter"),
        "IPYTHONDIR": str(base / "ipython"),
        "OMP_NUM_THREADS": "1",
        "LANG": "C.UTF-8",
    }
    from prefect.settings import PREFECT_API_URL

    if PREFECT_API_URL.value():  # the session's test server: no temporary server per command
        env["PREFECT_API_URL"] = str(PREFECT_API_URL.value())
    yield Installed(wheel, python, venv / "bin" / "whyflow", work, env)


def test_the_wheel_holds_one_package_with_its_recipes_and_templates(installed: Installed) -> None:
    names = zipfile.ZipFile(installed.wheel).namelist()
    assert {n.split("/")[0] for n in names} == {"whyflow", "whyflow-0.1.0.dist-info"}
    recipes = {Path(n).name for n in names if n.startswith("whyflow/recipes/")}
    assert recipes == {"ask.yaml", "ask_react.yaml", "auto_analyze.yaml", "causal_analysis.yaml", "quick_estimate.yaml"}
    assert "whyflow/causal/report/templates/report.ipynb.j2" in names
    assert "whyflow/ask/tools/static/vega.min.js" in names and "whyflow/web/static/index.html" in names


def test_the_import_names_are_ours_and_agents_is_openais(installed: Installed) -> None:
    probe = f"""
import importlib.util, json, sys
import whyflow, whyflow.cli.main, whyflow.flows.job_flow, whyflow.registry, agents
checkout, deps = {str(ROOT) + "/"!r}, {str(Path(sys.prefix)) + "/"!r}
ours = [str(getattr(v, "__file__", "") or "") for v in list(sys.modules.values())]
print(json.dumps({{
    "whyflow": whyflow.__file__,
    "agents": agents.__file__,
    "agents_has_runner": hasattr(agents, "Runner") and hasattr(agents, "Agent"),
    "flows": importlib.util.find_spec("flows") is not None,
    "from_checkout": [f for f in ours if f.startswith(checkout) and not f.startswith(deps)],
    "agents_registered": len(whyflow.registry.default_registry().names()),
}}))
"""
    done = subprocess.run(
        [str(installed.python), "-c", probe], cwd=installed.work, env=installed.env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout)
    venv = str(installed.python.parents[1])
    assert found["whyflow"].startswith(venv) and not found["whyflow"].startswith(str(ROOT))
    assert "/site-packages/agents/" in found["agents"] and found["agents_has_runner"]
    assert found["flows"] is False and found["from_checkout"] == []
    assert found["agents_registered"] >= 20


def test_recipes_by_name_and_a_project_folder_to_edit(installed: Installed) -> None:
    listed = installed.run("recipes")
    assert listed.returncode == 0, listed.stderr
    for name in ("ask", "ask_react", "auto_analyze", "causal_analysis", "quick_estimate"):
        assert f"  {name} " in listed.stdout
    made = installed.run("init", "project", "--recipe", "quick_estimate", "--data", "jobs.csv")
    assert made.returncode == 0, made.stderr
    assert installed.run("validate", "project/quick_estimate.yaml").returncode == 0
    deployments = (installed.work / "project" / "prefect.yaml").read_text()
    assert (
        "entrypoint: whyflow.deployments:whyflow_deployment" in deployments
        and "recipe: quick_estimate.yaml" in deployments
    )


def test_ask_answers_from_a_temporary_folder(installed: Installed) -> None:
    done = installed.run("ask", "--data", "jobs.csv", "What is the average earnings by region?", "--output", "asked")
    assert done.returncode == 0, done.stderr[-3000:]
    import pandas as pd

    means = pd.read_csv(installed.work / "jobs.csv").groupby("region")["earnings"].mean()
    assert all(f"{region}" in done.stdout and f"{mean:,.2f}" in done.stdout for region, mean in means.items())
    answer = json.loads((installed.work / "asked" / "answer.json").read_text())
    assert answer["output_type"] == "analysis"


def _executed_without_errors(notebook: Path) -> bool:
    cells = json.loads(notebook.read_text())["cells"]
    outputs = [o for c in cells if c["cell_type"] == "code" for o in c.get("outputs", [])]
    return bool(outputs) and not [o for o in outputs if o.get("output_type") == "error"]


@pytest.mark.parametrize("recipe", ["quick_estimate", "causal_analysis"])
def test_a_recipe_by_name_runs_with_its_executed_notebook(installed: Installed, recipe: str) -> None:
    out = installed.work / f"job-{recipe}"
    done = installed.run("run", recipe, "--data", "jobs.csv", "-t", "training", "-y", "earnings", "-o", out.name)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    state = json.loads((out / "state.json").read_text())
    assert state["status"] == "completed" and state["kind"] == "analysis"
    assert _executed_without_errors(out / "report.ipynb")
    recipe_copy = (out / "recipe.yaml").read_text()
    assert f"name: {recipe}" in recipe_copy
