"""Plain helpers of the audit tests, imported where used (no test module imports another).

`conftest.py` beside it keeps the fixtures.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from contracts.records import SOURCE_AUDIT
from shadow.records.layout import open_dataset
from shadow.records.settings import RecordSettings

if TYPE_CHECKING:
    from pathlib import Path


def audit_rows(root: Path, spool: Path) -> list[dict[str, object]]:
    """Every audit outcome under ``root``, oldest first."""
    settings = RecordSettings(root=str(root), spool_dir=spool)
    rows = open_dataset(settings, "outcomes").to_table().to_pylist()
    return sorted((r for r in rows if r["source"] == SOURCE_AUDIT), key=lambda r: r["outcome_at"])
