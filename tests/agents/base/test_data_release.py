"""release_unused_memory hands freed heap memory back to the system (what the runner calls between agents)."""

from __future__ import annotations

import gc
import sys

import pytest

from whyflow.runtime.data import release_unused_memory


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim; elsewhere a no-op")
def test_freed_heap_memory_leaves_the_process() -> None:
    psutil = pytest.importorskip("psutil")
    proc = psutil.Process()
    blocks = [bytes(1000 + i % 7) for i in range(200_000)]  # ~200 MB from glibc's heap, not mmap
    keep = blocks[::64]  # a few survivors pin the heap, so freeing alone does not shrink it
    del blocks
    gc.collect()
    held = proc.memory_info().rss
    release_unused_memory()
    released = held - proc.memory_info().rss
    assert len(keep) == 3125
    assert released > 100 * 2**20, f"only {released / 2**20:.0f} MB released"


def test_a_handed_over_frame_is_read_once_and_only_while_the_file_is_unchanged(tmp_path) -> None:  # noqa: ANN001
    """What `whyflow run` parsed to check the file is the first step's read: once, of that file's content."""
    import os

    import pandas as pd

    from whyflow.runtime.data import hand_over, read_table

    path = tmp_path / "data.csv"
    path.write_text("t,y\n1,2.5\n0,?\n")
    checked = read_table(path)
    hand_over(path, checked)
    assert read_table(path) is checked  # taken, not parsed again
    again = read_table(path)  # the hand-over is used once
    assert again is not checked and again.equals(checked) and again.attrs == checked.attrs

    hand_over(path, checked)
    path.write_text("t,y\n1,2.5\n0,3.0\n1,4.0\n")  # the file changed: read it
    os.utime(path, ns=(1, 1))
    assert len(read_table(path)) == 3

    handed = pd.read_csv(path)
    hand_over(path, handed)
    release_unused_memory()  # the runner's call after a step: nothing is kept past the first step
    assert read_table(path) is not handed


def test_garbage_in_cycles_is_collected_and_survivors_frozen_only_for_the_run() -> None:
    """Between agents a cycle an agent left (GE's context and its metrics) is freed, not kept to the next full collection."""
    import weakref

    import numpy as np

    from whyflow.runtime.data import long_lived_frozen

    class Node:
        pass

    with long_lived_frozen():
        at_start = gc.get_freeze_count()
        assert at_start > 0  # what existed when the run started is out of the collections
        node = Node()
        node.self, node.data = node, np.ones(10)  # a cycle holding data
        dead = weakref.ref(node)
        survivor = Node()
        survivor.self = survivor
        del node
        gc.disable()  # no automatic collection may do the work
        try:
            release_unused_memory()
        finally:
            gc.enable()
        assert dead() is None
        assert gc.get_freeze_count() > at_start  # the survivors made since are frozen in turn
        assert survivor.self is survivor
    assert gc.get_freeze_count() == 0  # unfrozen when the run ends: a process running many jobs loses nothing


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mmap threshold; elsewhere a no-op")
def test_large_freed_arrays_leave_the_process_at_once() -> None:
    """On large data freed 8 MB arrays (a column of a million floats) are unmapped at once, not kept in a heap."""
    import os
    import subprocess

    pytest.importorskip("psutil")
    code = """
import gc, sys, numpy as np, psutil
from whyflow.runtime.data import unmap_large_blocks
unmap_large_blocks({"plain": 0, "small": 2_000_000, "large": 20_000_000}[sys.argv[1]])
proc = psutil.Process()
first = np.ones(16 * 2**20 // 8); del first  # glibc raises its threshold above 8 MB when a 16 MB block is freed
pins, arrays = [], []
for _ in range(30):
    arrays.append(np.ones(2**20))  # 8 MB each, written
    pins.append(bytearray(64 * 1024))  # a small block after each pins the heap below it
before = proc.memory_info().rss
del arrays
gc.collect()
print((before - proc.memory_info().rss) / 2**20)
"""
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_MMAP_THRESHOLD_"}
    freed = {}
    for mode in ("plain", "small", "large"):
        out = subprocess.run([sys.executable, "-c", code, mode], capture_output=True, text=True, env=env, check=True)
        freed[mode] = float(out.stdout.strip())
    assert freed["large"] > 200, freed  # 240 MB of arrays: nearly all given back
    assert freed["plain"] < 100 and freed["small"] < 100, freed  # glibc's default keeps them (small data: kept)
