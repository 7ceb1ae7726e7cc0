"""The figure worker: figures drawn in a process of their own, every one on disk once the run settles."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from whyflow.causal.estimation.propensity import plot_overlap
from whyflow.runtime import figures


def _pid_file(path: str) -> None:
    """A 'figure' that records which process drew it."""
    Path(path).write_text(str(os.getpid()))


def _fails_in_the_worker(path: str, parent: int) -> None:
    """Fails anywhere but in the process that asked for it (a worker that cannot draw)."""
    if os.getpid() != parent:
        raise RuntimeError("no renderer here")
    Path(path).write_text("drawn by the parent")


def test_without_a_worker_figures_are_drawn_at_once(tmp_path: Path) -> None:
    figures.draw(_pid_file, str(tmp_path / "now.txt"))
    assert (tmp_path / "now.txt").read_text() == str(os.getpid())


def test_the_worker_draws_and_settle_waits_for_every_figure(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    t = rng.integers(0, 2, 2000)
    ps = np.clip(0.3 + 0.4 * t + rng.normal(0, 0.1, 2000), 0.01, 0.99)
    release = figures.start_worker(("whyflow.causal.estimation.propensity",))
    try:
        figures.draw(_pid_file, str(tmp_path / "worker.txt"))
        figures.draw(plot_overlap, ps, t, [0.1, 0.9], str(tmp_path / "overlap.png"), "overlap")
        figures.draw(_fails_in_the_worker, str(tmp_path / "fallback.txt"), os.getpid())
    finally:
        release()
    assert int((tmp_path / "worker.txt").read_text()) != os.getpid()  # drawn in the worker process
    assert (tmp_path / "overlap.png").read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "fallback.txt").read_text() == "drawn by the parent"  # the worker failed: drawn here
    figures.draw(_pid_file, str(tmp_path / "after.txt"))  # the worker is gone: drawn at once again
    assert (tmp_path / "after.txt").read_text() == str(os.getpid())
