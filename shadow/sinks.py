"""Choose the record writer: the durable RecordStore (issue 5) when present, else the simple sink."""

from __future__ import annotations

import importlib.util
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from shadow.simple_sink import SimpleParquetSink

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from shadow.records.sink import RecordSink
    from shadow.settings import ShadowSettings


def store_available() -> bool:
    """Whether ``shadow.records.store`` exists in this checkout."""
    return importlib.util.find_spec("shadow.records.store") is not None


@asynccontextmanager
async def open_sink(settings: ShadowSettings, config_sha256: str) -> AsyncIterator[RecordSink]:
    """The sink ``SHADOW_SINK`` names (``auto``: the RecordStore if it exists), opened and closed."""
    use_store = settings.sink == "store" or (settings.sink == "auto" and store_available())
    if use_store:
        from shadow.records.settings import RecordSettings  # noqa: PLC0415  (only when used)
        from shadow.records.store import RecordStore  # noqa: PLC0415

        record_settings = RecordSettings(root=settings.records_root, writer_id=settings.writer_id,
                                         spool_dir=settings.records_spool_dir, config_sha256=config_sha256)
        async with RecordStore(record_settings) as store:
            yield store
        return
    async with SimpleParquetSink(Path(settings.records_root), settings.writer_id, settings.flush_rows,
                                 settings.flush_interval_s) as sink:
        yield sink
