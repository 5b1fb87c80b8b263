"""How late the sidecar's own event loop runs: to tell a failing scorer from one the sidecar starved.

A task sleeps ``INTERVAL_S`` again and again and notes how much later than asked it woke up. When the
loop is saturated (or the machine's CPU is, and this process waits for it), every callback runs late,
including the one that would have read the scorer's answer: a call that times out then says nothing
about the scorer. `starved` tells the dispatcher whether the loop lagged during a call; such a timeout
is not held against the breaker (``shadow_breaker_starved_total{reason="loop_lag"}``), while errors
only the scorer can cause (5xx, resets, refusals) always are. The same task samples the machine's CPU
pressure (`shadow.cpupressure`), which excuses a timeout of a scorer the machine starved
(``reason="cpu_pressure"``).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque

from shadow.cpupressure import CpuPressure

INTERVAL_S = 0.05
WINDOW = 600
"""Samples kept: about 30 s at one per ``INTERVAL_S`` (longer than any call timeout worth having)."""
STARVED_FRACTION = 0.05
"""A call is starved when the loop lagged at least this fraction of its duration at once ..."""
STARVED_MIN_S = 0.05
"""... and at least this long."""


class LoopLag:
    """Samples the loop's lag; `run` is the sampling task."""

    def __init__(self, pressure: CpuPressure | None = None) -> None:
        self.samples: deque[tuple[float, float]] = deque(maxlen=WINDOW)
        """(monotonic time of waking, lag in seconds)."""
        self.pressure = pressure if pressure is not None else CpuPressure()
        """The machine's CPU stall counter, sampled at each wake."""

    async def run(self) -> None:
        """Sample until cancelled."""
        while True:
            asked = time.monotonic()
            await asyncio.sleep(INTERVAL_S)
            woke = time.monotonic()
            self.samples.append((woke, max(0.0, woke - asked - INTERVAL_S)))
            self.pressure.sample()

    def worst_since(self, since: float) -> float:
        """The largest lag noted since ``since`` (monotonic), including a sample that is late now."""
        worst = 0.0
        for at, lag in reversed(self.samples):
            if at < since:
                break
            worst = max(worst, lag)
        if self.samples:  # the sampler itself may be overdue right now
            worst = max(worst, time.monotonic() - self.samples[-1][0] - INTERVAL_S)
        return worst

    def recent(self, seconds: float = 1.0) -> float:
        """The largest lag of the last ``seconds``."""
        return self.worst_since(time.monotonic() - seconds)

    def starved(self, started: float) -> bool:
        """Whether the loop lagged enough, during a call that began at ``started``, to explain a timeout."""
        elapsed = time.monotonic() - started
        return self.worst_since(started) >= max(STARVED_MIN_S, STARVED_FRACTION * elapsed)
