# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""A fresh process's memory around one roll-over, for ``test_rollover_memory.py``.

Run as ``python rollover_driver.py ROOT SPOOL ROWS``: it imports what the sidecar imports, starts a
record store, journals ``ROWS`` proposals rows (one segment: no roll-over happens while writing), reads
its RSS, closes the store (the segment is published to Parquet in the store's roll-over thread, as in
the sidecar) and reads its RSS again. It prints one JSON object: ``rss_written`` and ``rss_published``
(bytes), ``pandas`` (whether the roll-over imported pandas) and ``files`` (Parquet files written).
"""

from __future__ import annotations

import asyncio
import gc
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

import shadow.app  # noqa: F401  (the sidecar's own imports: the idle size the roll-over is measured against)
from shadow.records.settings import RecordSettings
from shadow.records.store import RecordStore
from tests.shadow.records.factories import proposal_row

BATCH = 1000


def rss() -> int:
    """This process's resident set, bytes."""
    text = Path("/proc/self/status").read_text()
    match = re.search(r"^VmRSS:\s+(\d+) kB", text, re.MULTILINE)
    assert match is not None
    return int(match.group(1)) * 1024


async def main(root: str, spool: str, rows: int) -> dict[str, object]:
    """Journal ``rows`` rows, then publish them; the memory before and after."""
    settings = RecordSettings(root=root, spool_dir=Path(spool), writer_id="mem", roll_seconds=3600,
                              roll_bytes=1 << 30, fsync="none")
    store = RecordStore(settings)
    await store.start()
    for start in range(0, rows, BATCH):
        for i in range(start, min(rows, start + BATCH)):
            await store.proposal(proposal_row(f"d{i:08d}", status="dropped", reason="shed"))
    gc.collect()
    written = rss()
    await store.close()
    gc.collect()
    return {"rss_written": written, "rss_published": rss(), "pandas": "pandas" in sys.modules,
            "files": store.stats.files_published}


if __name__ == "__main__":
    sys.stdout.write(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))) + "\n")
