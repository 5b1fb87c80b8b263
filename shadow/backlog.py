"""The row backlog: finished rows waiting for the writer, bounded in items and bytes, and the door's gauge.

Two kinds of items wait here:

* an **accepted** decision's row (its accept mark is in the journal): it always gets room, because
  the door reserved that room when it accepted the decision (`reserve`), so the backlog never loses
  one;
* a row for a decision dropped **before** it was accepted: it is written as a row only while the
  backlog is under half its current limit; past that it is counted in ``drops`` instead (cheap).

The limit adapts: it is about ``TARGET_S`` seconds of the writer's measured throughput, between
``MIN_ITEMS`` and the ``SHADOW_RECORD_BACKLOG`` setting, and the bytes never pass
``SHADOW_RECORD_BACKLOG_BYTES``. The door (`shadow.mirror`) asks `room` before it accepts a decision
and sheds it (reason ``shed``, counted in ``drops``) when there is none: work is never spent on a
decision whose row could not be written in time. A challenger's decision is accepted only while the
backlog stays under half its limits (`room` with ``share``): a slow challenger holds the room its
accepted decisions reserved, and never the half the champion needs.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from shadow.throughput import Throughput

ROW_OVERHEAD = 2048
"""Bytes a queued row takes beyond its decision's state (dict, strings, floats): an upper estimate."""
TARGET_S = 2.0
"""The backlog the door admits is about this many seconds of the writer's measured throughput."""
MIN_ITEMS = 2000
"""The smallest admission limit (a writer not yet measured, or a burst after an idle spell)."""


class Backlog:
    """Items waiting for the writer, with reservations for accepted decisions (see the module docstring)."""

    def __init__(self, max_items: int, max_bytes: int) -> None:
        self.max_items = max_items
        self.max_bytes = max_bytes
        self.items: deque[tuple[Any, int, bool]] = deque()
        self.bytes = 0
        self.reserved = 0
        self.reserved_bytes = 0
        self.written = Throughput()
        """Rows the writer wrote, and per second (updated by `measure`)."""

    @property
    def limit(self) -> int:
        """How many items (queued plus reserved) the door admits now."""
        return min(self.max_items, max(MIN_ITEMS, int(self.written.rate * TARGET_S)))

    def room(self, size: int, share: float = 1.0) -> bool:
        """Whether a decision of ``size`` bytes may be accepted (its row is sure to fit).

        ``share``: the part of the limits the backlog may reach with it (a challenger's: one half).
        """
        used = len(self.items) + self.reserved
        held = self.bytes + self.reserved_bytes + size + ROW_OVERHEAD
        return used < self.limit * share and held <= self.max_bytes * share

    def reserve(self, size: int) -> None:
        """Hold room for an accepted decision's row."""
        self.reserved += 1
        self.reserved_bytes += size + ROW_OVERHEAD

    def release(self, size: int) -> None:
        """The accepted decision's row arrived (or will never come): free its reservation."""
        self.reserved -= 1
        self.reserved_bytes -= size + ROW_OVERHEAD

    def spare(self, size: int) -> bool:
        """Whether a row for a decision dropped before acceptance may be queued (under half the limit)."""
        used = len(self.items) + self.reserved
        held = self.bytes + self.reserved_bytes + size + ROW_OVERHEAD
        return 2 * used < self.limit and 2 * held <= self.max_bytes

    def push(self, item: Any, size: int, *, accepted: bool) -> None:
        """Queue an item (room was checked or reserved by the caller)."""
        self.items.append((item, size, accepted))
        self.bytes += size + ROW_OVERHEAD

    def pop(self) -> tuple[Any, int, bool]:
        """The oldest item."""
        item, size, accepted = self.items.popleft()
        self.bytes -= size + ROW_OVERHEAD
        return item, size, accepted

    def measure(self) -> None:
        """Update the writer's measured rate (called about once a second)."""
        self.written.measure(waiting=bool(self.items))
