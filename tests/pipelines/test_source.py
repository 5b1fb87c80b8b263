"""The raw relations' files: which decision type's join is built first."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import duckdb
import pyarrow.parquet as pq

from pipelines.source import register_window
from pipelines.storage import open_root
from pipelines.weeks import window
from tests.pipelines.conftest import AS_OF, FIRST, LAST

if TYPE_CHECKING:
    from pathlib import Path


def test_the_type_with_the_most_proposals_is_joined_first(records_root: Path) -> None:
    """Types are ordered by their proposals' bytes, not by file count or name.

    The generated types have one file per day each, so a file count ties and the name would put
    `priority` first; `ticket_routing` holds more decisions and must come first (its join then runs
    while the decision table is empty, which lowers the job's peak memory).
    """
    span = window(FIRST, LAST, 4, AS_OF, dt.timedelta(0))
    con = duckdb.connect()
    files = register_window(con, open_root(str(records_root)), span.read_start, span.read_end, span.as_of)
    rows = {
        t: sum(pq.ParquetFile(f).metadata.num_rows for f in paths) for t, paths in files.proposals.items()
    }
    assert len({len(paths) for paths in files.proposals.values()}) == 1  # same number of files per type
    order = files.types_largest_first()
    assert order == sorted(rows, key=lambda t: -rows[t])
    assert order[0] == "ticket_routing"
    assert rows[order[0]] > rows[order[-1]]
