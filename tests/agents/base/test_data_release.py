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
