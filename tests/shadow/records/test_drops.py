"""The ``drops`` dataset through the store: journal, roll-over, compaction; summed, never lost or doubled."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import pytest

from contracts.records import DROPS
from shadow.records.compact import CompactPolicy, compact_root
from shadow.records.errors import InvalidRow
from shadow.records.layout import filesystem, open_dataset
from shadow.records.store import RecordStore

from .factories import outcome_row

if TYPE_CHECKING:
    from shadow.records.settings import RecordSettings

MINUTE_US = 1_764_460_800_000_000  # 2025-11-30T00:00Z


def drop(reason: str, n: int, minute: int = 0) -> dict[str, object]:
    """One drop summary row as the sidecar hands it over."""
    return {"decision_type": "route", "candidate": "default", "minute": MINUTE_US + minute * 60_000_000,
            "reason": reason, "dropped": n}


def sums(settings: RecordSettings) -> Counter[tuple[str, int]]:
    """``dropped`` summed per (reason, minute) over every visible file."""
    out: Counter[tuple[str, int]] = Counter()
    for row in open_dataset(settings, "drops").to_table().to_pylist():
        out[(row["reason"], int(row["minute"].timestamp()))] += row["dropped"]
    return out


async def test_drop_summaries_survive_roll_over_and_compaction_summed_once(
        local_settings: RecordSettings) -> None:
    """Flushes spread over many segments (one file each), then compacted: every count read once."""
    expected: Counter[tuple[str, int]] = Counter()
    async with RecordStore(local_settings.model_copy(update={"roll_bytes": 4096})) as store:
        for i in range(60):
            rows = [drop("shed", i + 1, minute=i % 3), drop("queue_full", 1, minute=i % 3)]
            await store.drops(rows)
            await store.outcome(outcome_row(f"d{i}"))  # a commit each time: many segments
            for row in rows:
                expected[(str(row["reason"]), (MINUTE_US + (i % 3) * 60_000_000) // 1_000_000)] += int(
                    str(row["dropped"]))
        assert store.stats.drops == sum(expected.values())
    assert sums(local_settings) == expected
    assert open_dataset(local_settings, "drops").schema.names[:len(DROPS.names)] == DROPS.names
    fs, base = filesystem(local_settings)
    done = dict(compact_root(fs, base, CompactPolicy(min_age_s=0.0, grace_s=3600.0)))
    assert done["drops/decision_type=route/date=2025-11-30"].rows == 120
    assert sums(local_settings) == expected


async def test_a_drop_row_without_a_reason_is_refused_naming_it(local_settings: RecordSettings) -> None:
    """The journal never holds a row the Parquet writer would reject."""
    async with RecordStore(local_settings) as store:
        bad = drop("shed", 1)
        del bad["reason"]
        with pytest.raises(InvalidRow) as err:
            await store.drops([bad])
    assert err.value.field == "reason"
