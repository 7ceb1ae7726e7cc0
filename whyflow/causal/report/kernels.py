"""The report's Jupyter kernel: its environment, and a kernel started early so it is warm when needed.

Executing the report starts a kernel (about 1 s) whose first cells import pandas, matplotlib,
scikit-learn, statsmodels and networkx (about 2 s more). None of that depends on the analysis,
so :func:`start_warm_kernel` starts the kernel when the run starts, on the core the analysis
leaves idle, with an IPython start-up file that imports those libraries and defines no name (a
cell that forgot an import still fails, as it would for a reader). :func:`take_warm_kernel`
hands it to the notebook's execution if it is still alive; otherwise a kernel is started then,
as before. The kernel runs in the job folder with the environment of :func:`kernel_env`.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["WARM_IMPORTS", "kernel_env", "new_kernel_manager", "shut_down", "start_warm_kernel", "take_warm_kernel"]

WARM_IMPORTS = (
    "numpy",
    "pandas",
    "matplotlib.pyplot",
    "sklearn.linear_model",
    "sklearn.metrics",
    "statsmodels.api",
    "networkx",
)
"""What the report's cells import; the warm kernel imports them before the first cell."""

_STARTUP = """\
# whyflow: import the report's libraries while the analysis runs; no name is left defined.
import importlib as _whyflow_importlib

for _whyflow_module in {modules!r}:
    try:
        _whyflow_importlib.import_module(_whyflow_module)
    except Exception:
        pass
try:  # the first figure drawn loads the renderer and a font: do it once here, off the record
    import io as _whyflow_io

    from matplotlib.figure import Figure as _WhyflowFigure

    _WhyflowFigure(figsize=(1, 1)).text(0.5, 0.5, "x").figure.savefig(_whyflow_io.BytesIO(), format="png")
    del _whyflow_io, _WhyflowFigure
except Exception:
    pass
del _whyflow_importlib, _whyflow_module
"""

_WARM: dict[Path, Any] = {}
_LOCK = threading.Lock()


def kernel_env(job_dir: Path) -> dict[str, str]:
    """The kernel's environment: Jupyter, IPython and matplotlib folders under the job folder."""
    env = dict(os.environ)
    for var, sub in (
        ("JUPYTER_RUNTIME_DIR", ".jupyter/runtime"),
        ("IPYTHONDIR", ".ipython"),
        ("MPLCONFIGDIR", ".mplconfig"),
    ):
        path = job_dir / sub
        path.mkdir(parents=True, exist_ok=True)
        env[var] = str(path)
    env["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def new_kernel_manager(job_dir: Path) -> Any:
    """An async kernel manager whose connection file lives in the job folder.

    The async manager: with a blocking one, a kernel killed at the time limit left nbclient
    waiting forever for its output; with this one it ends with DeadKernelError at once.
    """
    from jupyter_client.manager import AsyncKernelManager

    runtime = job_dir / ".jupyter" / "runtime"
    runtime.mkdir(parents=True, exist_ok=True)
    return AsyncKernelManager(
        kernel_name="python3", connection_file=str(runtime / f"kernel-{uuid.uuid4().hex[:12]}.json")
    )


def start_warm_kernel(job_dir: Path) -> Callable[[], None]:
    """Start the report's kernel for ``job_dir`` now; return what shuts it down if it is never taken."""
    from jupyter_core.utils import run_sync

    job_dir = job_dir.resolve()
    env = kernel_env(job_dir)
    startup = Path(env["IPYTHONDIR"]) / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00-whyflow-imports.py").write_text(_STARTUP.format(modules=WARM_IMPORTS), encoding="utf-8")
    km = new_kernel_manager(job_dir)
    with (job_dir / ".jupyter" / "kernel.log").open("ab") as log:
        run_sync(km.start_kernel)(
            extra_arguments=["--HistoryManager.hist_file=:memory:"],  # what nbclient passes
            cwd=str(job_dir),
            env=env,
            stdout=log,
            stderr=log,
        )
    with _LOCK:
        _WARM[job_dir] = km

    def release() -> None:
        with _LOCK:
            left = _WARM.pop(job_dir, None) is km
        if left:
            shut_down(km)

    return release


def take_warm_kernel(job_dir: Path) -> Any | None:
    """The kernel started early for ``job_dir`` if it is still alive (it is then no longer held)."""
    from jupyter_core.utils import run_sync

    with _LOCK:
        km = _WARM.pop(job_dir.resolve(), None)
    if km is None:
        return None
    try:
        if run_sync(km.is_alive)():
            return km
    except Exception:  # noqa: BLE001 - a kernel that cannot say is not used
        pass
    shut_down(km)
    return None


def shut_down(km: Any) -> None:
    """Shut ``km``'s kernel down now, if it has one (a kernel already gone is no error)."""
    from jupyter_core.utils import run_sync

    try:
        if km.has_kernel:
            run_sync(km.shutdown_kernel)(now=True)
    except Exception:  # noqa: BLE001 - a kernel already gone
        pass
