"""``whyflow doctor``: which sandbox layers this machine gives generated code, checked by a real run."""

from __future__ import annotations

import sys
from typing import TextIO

__all__ = ["doctor"]

_NAMESPACE_LAYERS = {"bwrap", "unshare"}
_KERNEL_LAYERS = {"landlock", "seccomp"}


def _report_warm(out: TextIO) -> None:
    from whyflow.runtime.sandbox.run import run_code

    run_code("result = 1", warm=True)  # starts the warm template
    warm = run_code("result = 1 + 1", warm=True)
    if "warm-fork" in warm.layers and warm.ok:
        print(f"  warm run: ok ({warm.overhead_seconds * 1000:.0f} ms overhead, forked from a template)", file=out)
    else:
        print(
            f"  warm run: not available here ({warm.error or 'no way to kill every process of a forked run'})", file=out
        )


def _yes(flag: bool, detail: str = "") -> str:
    return ("yes" if flag else "no") + (f"  ({detail})" if detail and flag else "")


def doctor(out: TextIO | None = None, warm_check: bool = True) -> int:
    """Print the probed layers and the layers of a trivial run; warn when only limits are left.

    Returns 0 when a sandboxed run works (with a warning if it is limits only), 1 when it fails.
    """
    from whyflow.runtime.sandbox.probe import probe
    from whyflow.runtime.sandbox.run import run_code

    out = out or sys.stdout
    caps = probe()
    print("whyflow doctor: the sandbox for generated code", file=out)
    rows = [
        ("bubblewrap", _yes(caps.bwrap, "no network, read-only system and data, private /tmp")),
        ("unshare", _yes(caps.unshare, "no network, own pid namespace")),
        ("Landlock", f"ABI {caps.landlock_abi}" if caps.landlock_abi else "no"),
        ("seccomp", _yes(caps.seccomp, "deny-list filter, x86-64")),
        ("uid drop", _yes(caps.root and (caps.bwrap or caps.uid_drop_outside_namespaces), "a throw-away uid per run")),
        ("pids cgroup", _yes(caps.cgroup_pids)),
    ]
    for name, value in rows:
        print(f"  {name:<12} {value}", file=out)
    for note in caps.notes:
        print(f"  note: {note}", file=out)
    result = run_code("result = 1 + 1", warm=False)
    print(f"  active layers: {', '.join(result.layers)}", file=out)
    print(
        f"  trial run: {'ok' if result.ok and result.result == 2 else 'FAILED: ' + str(result.error)}"
        f" ({result.overhead_seconds:.2f} s overhead from a fresh interpreter)",
        file=out,
    )
    if warm_check:
        _report_warm(out)
    if not (set(result.layers) & (_NAMESPACE_LAYERS | _KERNEL_LAYERS)):
        print(
            "whyflow doctor: warning: generated code runs with limits only (no namespaces, Landlock or seccomp); "
            "install bubblewrap (apt-get install bubblewrap) or use a kernel with Landlock",
            file=out,
        )
    elif not set(result.layers) & _NAMESPACE_LAYERS:
        print(
            "whyflow doctor: note: no namespace layer (bubblewrap/unshare); Landlock and seccomp isolate instead",
            file=out,
        )
    return 0 if result.ok and result.result == 2 else 1
