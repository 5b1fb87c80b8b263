# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""The narrow interface between the sidecar and the record store.

The sidecar (``shadow/``) calls exactly these coroutines; the store (``shadow/records/store.py``)
implements them. Rows are plain dicts keyed by the records v1.1 column names (``contracts.records``);
the store fills ``record_version`` and ``writer_id``. The promises (``docs/records.md``):

* ``accept`` returns once the decision is durably noted as accepted for one candidate (group-committed
  journal): if the process dies before that candidate's proposals row is written, recovery writes a
  ``lost`` / ``crash_recovery`` row for it. A row completes the mark with the same decision type,
  decision id and ``candidate``.
  It raises ``SinkFull`` when the local disk bound is reached (the caller drops with ``disk_full``).
* ``proposal`` completes an accepted decision (or records a dropped one: every offered decision gets
  exactly one proposals row). It may return before the row is fsynced; the pending mark covers it.
* ``drops`` writes drop summary rows: decisions dropped before they were accepted, counted per
  (decision type, candidate, minute, reason) instead of one proposals row each. No fsync of its own.
* ``outcome`` returns only once the outcome is durable (the mirror API acknowledges after it).
"""

from __future__ import annotations

from typing import Any, Protocol

from contracts.records import DEFAULT_CANDIDATE


class SinkFull(Exception):
    """The store's local disk bound is reached; new decisions must be dropped (``disk_full``)."""


class RecordSink(Protocol):
    """Where finished records go."""

    async def accept(self, decision_id: str, decision_type: str, received_at_us: int,
                     option_ids: list[str], candidate: str = DEFAULT_CANDIDATE) -> None:
        """Durably note a decision accepted for one candidate, before that candidate scores it."""

    async def proposal(self, row: dict[str, Any]) -> None:
        """Write one proposals row (scored, or with its status and reason)."""

    async def drops(self, rows: list[dict[str, Any]]) -> None:
        """Write drop summary rows (``contracts.records.DROPS`` columns; the store fills the rest)."""

    async def outcome(self, row: dict[str, Any]) -> None:
        """Write one outcomes row; return only when it is durable."""

    async def close(self) -> None:
        """Flush everything and roll open files over to Parquet."""
