# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""A roll-over gives its memory back: the sidecar's RSS returns towards its idle size after a load.

Under a saturating load the sidecar's memory grew at its roll-overs and stayed there when idle.
Three causes, each held here in a fresh process (``rollover_driver.py``; this test
process imported pandas long ago):

* pyarrow imports pandas on the first Python value it converts to Arrow, and `rows.partitioned`
  converted some: about 30 MB kept for good (modules are never unloaded);
* Arrow's pool (mimalloc) kept what the roll-over freed, about the size of the segment's tables;
* reading the segment made a tuple and a memoryview per frame (150,000 frames a minute under
  saturating proxy load): Python's small-object arenas grew by their size, and under load the event
  loop's own objects, allocated beside them, kept those arenas from being freed.

20,000 proposals and 20,000 outcomes (one segment), published: before the fixes the process grew by
87 MB, its arenas' high-water mark by 21 MiB, and pandas was imported; after them 11 MB and 0 arenas.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

DRIVER = Path(__file__).with_name("rollover_driver.py")
MIB = 1024 * 1024
GROWTH_LIMIT = 40 * MIB
"""Generous: 11 MB measured after the fixes (the Parquet writer's code pages, first use only), 87 before."""
ARENA_LIMIT = 3
"""Arenas (1 MiB each) a roll-over may add to the high-water mark: 0 measured, 7 with per-frame objects."""


def test_a_rollover_gives_its_memory_back_and_never_imports_pandas(tmp_path: Path) -> None:
    """Publishing 40,000 rows grows a fresh process by under 40 MB, adds no arenas, imports no pandas."""
    out = subprocess.run([sys.executable, str(DRIVER), str(tmp_path / "root"), str(tmp_path / "spool"),  # noqa: S603  (our own driver)
                          "20000"], capture_output=True, text=True, timeout=300, check=True).stdout
    result = json.loads(out)
    assert result["files"] == 2, result
    assert result["pandas"] is False, "the roll-over imported pandas (a Python value converted to Arrow)"
    arenas = result["arenas_published"] - result["arenas_written"]
    assert arenas <= ARENA_LIMIT, f"the roll-over took {arenas} more arenas (per-frame objects?)"
    growth = result["rss_published"] - result["rss_written"]
    assert growth < GROWTH_LIMIT, f"the roll-over kept {growth / MIB:.0f} MB (limit {GROWTH_LIMIT / MIB:.0f})"
