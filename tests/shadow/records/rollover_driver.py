# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""A fresh process's memory around one roll-over, for ``test_rollover_memory.py``.

Run as ``python rollover_driver.py ROOT SPOOL ROWS``: it imports what the sidecar imports, starts a
record store, journals ``ROWS`` proposals rows and ``ROWS`` outcomes rows (one segment: no roll-over
happens while writing), reads its RSS, closes the store (the segment is published to Parquet in the
store's roll-over thread, as in the sidecar) and reads its RSS again. It prints one JSON object:
``rss_written`` and ``rss_published`` (bytes), ``arenas_written`` and ``arenas_published`` (the
high-water mark of Python's small-object arenas, 1 MiB each, from ``sys._debugmallocstats``),
``pandas`` (whether the roll-over imported pandas) and ``files`` (Parquet files written).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

import shadow.app  # noqa: F401  (the sidecar's own imports: the idle size the roll-over is measured against)
from shadow.records.settings import RecordSettings
from shadow.records.store import RecordStore
from tests.shadow.records.factories import outcome_row, proposal_row

BATCH = 1000


def rss() -> int:
    """This process's resident set, bytes."""
    text = Path("/proc/self/status").read_text()
    match = re.search(r"^VmRSS:\s+(\d+) kB", text, re.MULTILINE)
    assert match is not None
    return int(match.group(1)) * 1024


def arenas_highwater() -> int:
    """The most arenas Python's small-object allocator has held at once so far."""
    saved = os.dup(2)
    with tempfile.TemporaryFile() as out:
        os.dup2(out.fileno(), 2)  # sys._debugmallocstats writes to the C stderr
        try:
            sys._debugmallocstats()  # CPython's own allocator statistics
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        text = out.read().decode()
    match = re.search(r"# arenas highwater mark\s+=\s+([\d,]+)", text)
    assert match is not None, text
    return int(match.group(1).replace(",", ""))


async def main(root: str, spool: str, rows: int) -> dict[str, object]:
    """Journal ``rows`` proposals and outcomes, then publish them; the memory before and after."""
    settings = RecordSettings(root=root, spool_dir=Path(spool), writer_id="mem", roll_seconds=3600,
                              roll_bytes=1 << 30, fsync="none")
    store = RecordStore(settings)
    await store.start()
    for start in range(0, rows, BATCH):
        ids = [f"d{i:08d}" for i in range(start, min(rows, start + BATCH))]
        for decision_id in ids:
            await store.proposal(proposal_row(decision_id, status="dropped", reason="shed"))
        await asyncio.gather(*(store.outcome(outcome_row(decision_id)) for decision_id in ids))
    gc.collect()
    written, arenas = rss(), arenas_highwater()
    await store.close()
    gc.collect()
    return {"rss_written": written, "rss_published": rss(), "arenas_written": arenas,
            "arenas_published": arenas_highwater(), "pandas": "pandas" in sys.modules,
            "files": store.stats.files_published}


if __name__ == "__main__":
    sys.stdout.write(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))) + "\n")
