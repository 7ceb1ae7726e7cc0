"""release_unused_memory hands freed heap memory back to the system (what the runner calls between agents)."""

from __future__ import annotations

import gc
import sys

import pytest

from agents.base.data import release_unused_memory


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

    from agents.base.data import hand_over, read_table

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
