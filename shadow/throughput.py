"""A measured throughput: events per second, a moving average taken about once a second.

Both gates of the door use one: the row backlog (rows the writer wrote, `shadow.backlog`) and each
candidate's lane (decisions its workers finished, `shadow.lanes`). A spell with nothing waiting says
little about how fast the work could go, so it may raise the estimate but never lower it.
"""

from __future__ import annotations

import time

WINDOW_S = 1.0
"""`tick` measures once this much time has passed since the last measurement."""


class Throughput:
    """Counts events (`add`) and turns them into ``rate``, events per second (see the module docstring)."""

    def __init__(self) -> None:
        self.count = 0
        self.rate = 0.0
        """Events per second (moving average); 0.0 until something was measured."""
        self._at = time.monotonic()
        self._count_at = 0

    def add(self, n: int = 1) -> None:
        """Note ``n`` more events."""
        self.count += n

    def measure(self, *, waiting: bool) -> None:
        """Update ``rate`` from the events since the last measurement.

        ``waiting``: work was waiting at the end of the window, so the events counted are what the
        worker could do (the average moves to it); otherwise they are only what arrived, which can raise
        the estimate but not lower it.
        """
        now = time.monotonic()
        elapsed = now - self._at
        if elapsed <= 0:
            return
        current = (self.count - self._count_at) / elapsed
        if waiting:
            self.rate = current if self.rate == 0 else 0.5 * self.rate + 0.5 * current
        elif current > self.rate:
            self.rate = current
        self._at, self._count_at = now, self.count

    def tick(self, *, waiting: bool) -> None:
        """`measure` if a window has passed (cheap enough to call on every event)."""
        if time.monotonic() - self._at >= WINDOW_S:
            self.measure(waiting=waiting)
