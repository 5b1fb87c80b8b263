"""Drop summaries: decisions dropped before they were accepted, counted instead of written one row each.

Under overload a row per dropped decision costs as much as the decision itself, so a decision the
sidecar never accepted is counted per (decision type, candidate, minute, reason) and flushed as
``drops`` rows (records v1.1, ``contracts.records.DROPS``) about once a second. A flush writes what
grew since the previous one, so one (writer, type, candidate, minute, reason) may have several rows:
readers sum ``dropped``. Memory is one small dict entry per key between two flushes.
"""

from __future__ import annotations

from typing import Any

from shadow import clock

_MINUTE_US = 60_000_000
Key = tuple[str, str, int, str]


class DropCounter:
    """Counts per (decision type, candidate, minute, reason) until `take` hands them over."""

    def __init__(self) -> None:
        self._counts: dict[Key, int] = {}
        self.total = 0
        """Every decision counted so far (written or not)."""

    def count(self, decision_type: str, candidate: str, reason: str, n: int = 1,
              received_us: int | None = None) -> None:
        """Count ``n`` decisions dropped for ``reason`` (in the minute of ``received_us``, default now)."""
        if n <= 0:
            return
        at = int(clock.now() * 1e6) if received_us is None else received_us
        key = (decision_type, candidate, at - at % _MINUTE_US, reason)
        self._counts[key] = self._counts.get(key, 0) + n
        self.total += n

    def take(self) -> list[dict[str, Any]]:
        """The counts as ``drops`` rows (without ``writer_id`` / ``record_version``), and forget them."""
        counts, self._counts = self._counts, {}
        return [{"decision_type": t, "candidate": c, "minute": m, "reason": r, "dropped": n}
                for (t, c, m, r), n in counts.items()]

    def restore(self, rows: list[dict[str, Any]]) -> None:
        """Put back rows a failed write did not keep (they go out with the next flush)."""
        for row in rows:
            key = (row["decision_type"], row["candidate"], row["minute"], row["reason"])
            self._counts[key] = self._counts.get(key, 0) + row["dropped"]

    @property
    def keys(self) -> int:
        """Entries waiting for the next flush."""
        return len(self._counts)
