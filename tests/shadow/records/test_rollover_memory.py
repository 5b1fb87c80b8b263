# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""A roll-over gives its memory back: the sidecar's RSS returns towards its idle size after a load.

Issue 24's soak saw the sidecar step from about 127 to 220 MB at its first roll-over under load and
stay there when idle. Two causes, each held here in a fresh process (``rollover_driver.py``; this
test process has imported pandas long ago):

* pyarrow imports pandas on the first Python value it converts, and `rows.partitioned` converted
  some: about 30 MB kept for good (modules cannot be unloaded);
* Arrow's pool (mimalloc) kept what the roll-over freed, about the size of the segment's tables.

A 20,000-row segment (12 MB of journal) grew the process by 83 MB before the fix (pandas imported),
and by 14 MB after it (the Parquet writer's code pages, first use only).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

DRIVER = Path(__file__).with_name("rollover_driver.py")
MIB = 1024 * 1024
GROWTH_LIMIT = 40 * MIB
"""Generous: 14 MB measured after the fix, 83 MB before it."""


def test_a_rollover_gives_its_memory_back_and_never_imports_pandas(tmp_path: Path) -> None:
    """Publishing 20,000 rows grows a fresh process by under 40 MB, and pandas stays unimported."""
    out = subprocess.run([sys.executable, str(DRIVER), str(tmp_path / "root"), str(tmp_path / "spool"),  # noqa: S603  (our own driver)
                          "20000"], capture_output=True, text=True, timeout=300, check=True).stdout
    result = json.loads(out)
    assert result["files"] == 1, result
    assert result["pandas"] is False, "the roll-over imported pandas (a Python value converted to Arrow)"
    growth = result["rss_published"] - result["rss_written"]
    assert growth < GROWTH_LIMIT, f"the roll-over kept {growth / MIB:.0f} MB (limit {GROWTH_LIMIT / MIB:.0f})"
