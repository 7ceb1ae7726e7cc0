"""The program the sandbox runs in its child: confine itself, load the data, run the code, report.

Started as ``python -I child.py REQUEST.json`` (never imported by the parent's
interpreter). The request says which datasets to load, which limits and layers to apply and
where to write the result; the result goes back as one JSON document on an inherited pipe, so
nothing the generated code produced is ever unpickled by the parent. Any step the parent asked
for that cannot be applied stops the run before the generated code starts (fail closed).
"""

from __future__ import annotations

import datetime as _dt
import decimal
import importlib.util
import json
import linecache
import math
import os
import resource
import sys
import time
import traceback
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
_CODE_NAME = "<generated>"


def _load_confine() -> Any:
    spec = importlib.util.spec_from_file_location("_whyflow_sandbox_confine", _HERE / "confine.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cell(value: Any, depth: int = 0) -> Any:
    """One value as JSON: NaN/NaT become null, numpy scalars plain Python, dates ISO text."""
    if depth > 50:
        raise ValueError("the result is nested more than 50 levels deep")
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _cell(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_cell(v, depth + 1) for v in value]
    import numpy as np
    import pandas as pd

    if isinstance(value, np.ndarray | pd.Index):
        return [_cell(v, depth + 1) for v in value.tolist()]
    if value is pd.NaT or value is pd.NA:
        return None
    if isinstance(value, np.generic):
        return _cell(value.item(), depth + 1)
    if isinstance(value, _dt.datetime | _dt.date | _dt.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return _cell(float(value))
    if isinstance(value, pd.Timedelta | _dt.timedelta | bytes):
        return str(value)
    return str(value)


def _table(frame: Any, max_rows: int) -> tuple[dict[str, Any], bool]:
    import pandas as pd

    if isinstance(frame, pd.Series):
        frame = frame.to_frame(name=frame.name if frame.name is not None else "value")
    # The index is data when it is named (a group-by) or not plain row numbers (labels, dates).
    index = frame.index
    if any(name is not None for name in index.names) or not pd.api.types.is_integer_dtype(index.dtype):
        frame = frame.reset_index()
    head = frame.head(max_rows)
    rows = [[_cell(v) for v in row] for row in head.itertuples(index=False, name=None)]
    table = {"columns": [str(c) for c in frame.columns], "rows": rows, "row_count": int(len(frame))}
    return table, len(frame) > max_rows


def _result(value: Any, max_rows: int) -> tuple[str, Any, bool]:
    """(result_kind, JSON value, truncated) for what the code left in ``result``."""
    import numpy as np
    import pandas as pd

    if value is None:
        return "none", None, False
    if isinstance(value, pd.DataFrame | pd.Series):
        table, truncated = _table(value, max_rows)
        return "table", table, truncated
    if isinstance(value, dict):
        return "dict", _cell(value), False
    if isinstance(value, list | tuple | set | frozenset | np.ndarray | pd.Index):
        return "list", _cell(value), False
    scalar_types = (bool, int, float, str, np.generic, _dt.date, _dt.time, decimal.Decimal, pd.Timedelta)
    if isinstance(value, scalar_types) or value is pd.NaT:
        return "scalar", _cell(value), False
    raise TypeError(
        f"result is a {type(value).__module__}.{type(value).__qualname__}, which cannot be returned; "
        "set result to a number, text, list, dict, DataFrame or Series"
    )


def _figures(namespace: dict[str, Any], scratch: Path, max_figures: int) -> list[dict[str, Any]]:
    figures: list[dict[str, Any]] = []
    spec = namespace.get("figure")
    if isinstance(spec, dict):
        figures.append({"kind": "vega-lite", "spec": _cell(spec)})
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        for number in plt.get_fignums()[:max_figures]:
            name = f"figure-{number}.png"
            plt.figure(number).savefig(scratch / name, format="png", dpi=100)
            figures.append({"kind": "png", "file": name})
        plt.close("all")
    elif spec is not None and hasattr(spec, "savefig"):
        spec.savefig(scratch / "figure-0.png", format="png", dpi=100)
        figures.append({"kind": "png", "file": "figure-0.png"})
    return figures[:max_figures]


def _read(source: Any, fmt: str) -> Any:
    """One dataset as a DataFrame; a descriptor has no file name, so the format is spelled out."""
    import pandas as pd

    if fmt == "parquet":
        return pd.read_parquet(source)
    kind, _, compressed = fmt.partition(".")
    return pd.read_csv(
        source, sep="\t" if kind == "tsv" else ",", compression="gzip" if compressed else None, low_memory=False
    )


def _load_datasets(items: list[dict[str, Any]]) -> dict[str, Any]:
    datasets: dict[str, Any] = {}
    for item in items:
        # A read-only descriptor (warm runs: the file is not visible in the sandbox) or a path.
        source: Any = os.fdopen(int(item["fd"]), "rb") if "fd" in item else item["path"]
        try:
            frame = _read(source, str(item["format"]))
        except Exception as exc:  # reported as a failure of the run, never raised
            raise RuntimeError(f"could not read dataset '{item['name']}': {type(exc).__name__}: {exc}") from exc
        datasets[item["name"]] = frame
    return datasets


def _confine(request: dict[str, Any]) -> list[str]:
    """Apply the layers the parent asked for, in an order that keeps each one possible."""
    confine = _load_confine()
    applied: list[str] = []
    for path in request.get("cgroup_procs") or []:
        Path(path).write_text(str(os.getpid()))
        applied.append("cgroup-pids")
    limits = request["limits"]
    confine.apply_rlimits(
        limits["cpu_seconds"],
        limits["memory_bytes"],
        limits["file_size_bytes"],
        limits["open_files"],
        request.get("nproc"),
    )
    applied.append("rlimits")
    if request.get("drop_uid") is not None:
        confine.drop_privileges(int(request["drop_uid"]), int(request["drop_gid"]))
        applied.append("uid-drop")
    elif os.geteuid() == 0:  # root that stays root: without this, rlimits could be raised back
        confine.drop_capabilities()
        applied.append("no-capabilities")
    landlock = request.get("landlock")
    if landlock:
        own = [f"/proc/{os.getpid()}", "/proc/thread-self"]
        abi = confine.landlock_restrict([*landlock["read"], *own], landlock["write"], landlock["devices"])
        applied.append("landlock")
        if abi >= 4:
            applied.append("landlock-net")
    if request.get("seccomp"):
        confine.seccomp_restrict([int(p) for p in request.get("protected_pids") or []])
        applied.append("seccomp")
    return sorted(set(applied), key=applied.index)


def _generated_traceback(exc: BaseException) -> str:
    """The traceback from the first frame of the generated code on (the bootstrap's are noise)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != _CODE_NAME:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb if tb is not None else exc.__traceback__))


def _run(request: dict[str, Any], report: dict[str, Any]) -> None:
    import numpy as np
    import pandas as pd

    scratch = Path(request["scratch"])
    datasets = _load_datasets(request["datasets"])
    os.chdir(scratch)
    report["layers"] = _confine(request)
    code = request["code"]
    linecache.cache[_CODE_NAME] = (len(code), None, code.splitlines(True), _CODE_NAME)
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__, "pd": pd, "np": np}
    namespace["datasets"] = datasets
    namespace["df"] = next(iter(datasets.values()), None)
    compiled = compile(code, _CODE_NAME, "exec")
    # Ready: the code's own wall clock starts now; the layers are known even if it never ends.
    os.write(int(request["result_fd"]), b"\x06" + json.dumps(report["layers"]).encode() + b"\n")
    start_wall, start_cpu = time.perf_counter(), time.process_time()
    try:
        exec(compiled, namespace)
    finally:
        report["wall_seconds"] = time.perf_counter() - start_wall
        report["cpu_seconds"] = time.process_time() - start_cpu
    limits = request["limits"]
    kind, value, truncated = _result(namespace.get("result"), limits["max_rows"])
    report.update(ok=True, result_kind=kind, result=value, truncated=truncated)
    report["figures"] = _figures(namespace, scratch, limits["max_figures"])


def _write(fd: int, report: dict[str, Any], max_bytes: int) -> None:
    data = json.dumps(report, allow_nan=False, default=str).encode()
    if len(data) > max_bytes:
        slim = {k: report.get(k) for k in ("layers", "wall_seconds", "cpu_seconds")}
        slim.update(ok=False, error=f"the result is {len(data)} bytes as JSON, over the {max_bytes}-byte limit")
        data = json.dumps(slim).encode()
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def main(argv: list[str]) -> None:
    """Run one request (or, with ``--serve FD``, serve forks of this warm interpreter)."""
    if argv[1:2] == ["--serve"]:
        serve(int(argv[2]))
    run_request(Path(argv[1]), None)


def run_request(request_path: Path, fds: list[int] | None) -> None:
    """Run one request; always exit through ``os._exit`` so that no atexit hook of the code runs.

    ``fds`` (warm runs) are the descriptors the parent sent: result pipe, then the datasets.
    """
    request = json.loads(request_path.read_text())
    request_path.unlink()
    if fds is not None:
        request["result_fd"] = fds[0]
        for item, fd in zip(request["datasets"], fds[1:], strict=False):
            item["fd"] = fd
    os.environ.clear()
    os.environ.update(request.get("env") or {})
    fd = int(request["result_fd"])
    report: dict[str, Any] = {"ok": False, "layers": []}
    try:
        _run(request, report)
    except SystemExit as exc:
        report.update(ok=False, error=f"the code called sys.exit({exc.code!r}); its result, if any, is discarded")
    except BaseException as exc:  # everything the code does must come back as data
        report.update(ok=False, error=f"{type(exc).__name__}: {exc}", traceback=_generated_traceback(exc))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    report.setdefault("cpu_seconds", usage.ru_utime + usage.ru_stime)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    try:
        _write(fd, report, int(request["limits"]["result_bytes"]))
    except OSError:
        pass  # the code closed the result pipe: the parent reports a run without a result
    except Exception as exc:
        try:
            _write(
                fd,
                {"ok": False, "error": f"the result could not be encoded: {exc}", "layers": report["layers"]},
                1 << 20,
            )
        except OSError:
            pass
    os._exit(0)


def _forked(fds: list[int], request_path: str, keep_closed: list[int]) -> None:
    """In a fresh fork of the warm interpreter: become a session of its own, take the pipes."""
    import signal

    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for fd in keep_closed:
        os.close(fd)
    os.setsid()
    out_fd, err_fd, *rest = fds
    null = os.open(os.devnull, os.O_RDONLY)
    for source, target in ((null, 0), (out_fd, 1), (err_fd, 2)):
        os.dup2(source, target)
        os.close(source)
    try:
        run_request(Path(request_path), rest)
    finally:
        os._exit(70)


def _preload() -> None:
    """Import what generated code most often uses, so each fork finds it ready (matplotlib's
    font list included, which otherwise costs seconds per run)."""
    import numpy  # noqa: F401
    import pandas  # noqa: F401

    for name in ("scipy.stats", "matplotlib.pyplot"):
        try:
            importlib.import_module(name)
        except Exception:  # an optional library that is missing or broken: runs import it lazily
            continue
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:  # draw once: loads the fonts and the PNG writer
        import io

        fig, ax = plt.subplots()
        ax.plot([0, 1], [0, 1])
        ax.set_title("warm")
        fig.savefig(io.BytesIO(), format="png", dpi=100)
        plt.close("all")


def serve(sock_fd: int) -> None:
    """The warm template: import the scientific stack once, then fork a fresh child per request.

    It never runs generated code itself; each run starts from this pristine state, so nothing
    passes from one run to the next. Messages on the control socket: the parent sends a request
    path with the pipes and dataset descriptors; the template answers ``pid N`` and, when the
    child ends, ``exit N STATUS CPU``. It exits when the parent closes the socket.
    """
    import select
    import signal
    import socket

    _preload()
    sock = socket.socket(fileno=sock_fd)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    sock.send(b"ready")
    while True:
        try:
            ready, _, _ = select.select([sock_fd, wake_r], [], [])
        except InterruptedError:
            continue
        if wake_r in ready:
            os.read(wake_r, 4096)
        _reap(sock)
        if sock_fd not in ready:
            continue
        message, fds, _, _ = socket.recv_fds(sock, 4096, 64)
        if not message:
            os._exit(0)
        pid = os.fork()
        if pid == 0:
            _forked(fds, message.decode(), [sock.detach(), wake_r, wake_w])
        for fd in fds:
            os.close(fd)
        sock.send(f"pid {pid}".encode())


def _reap(sock: Any) -> None:
    while True:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        sock.send(f"exit {pid} {status} {usage.ru_utime + usage.ru_stime:.4f}".encode())


if __name__ == "__main__":
    main(sys.argv)
