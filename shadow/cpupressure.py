"""Whether the machine's CPU was contended during a scorer call: Linux PSI, read by the loop-lag sampler.

``/proc/pressure/cpu``'s ``some total`` counts the microseconds during which at least one runnable task
waited for a CPU. The loop-lag sampler (`shadow.looplag`) notes it every 50 ms; `share_since` is the
share of the time since a call began during which some task waited. A timeout is the machine's fault,
not the scorer's, when that share is at least ``CONTENDED_SHARE`` and the scorer answered a call within
the last ``ALIVE_S`` (a scorer that never answers opens its breaker however busy the machine is).

Limits: PSI says *some* task waited, not which one: a slow scorer on a busy machine is excused as well
(errors and a scorer silent for ``ALIVE_S`` still open the breaker). It is the whole machine's (or, in
a container, usually the host's) pressure, so it speaks for a scorer on the same machine only; for a
scorer on another host it says nothing (only the sidecar's own lag does). Without PSI (kernels before
4.20, ``psi=0``, some sandboxes) the reader returns None and only the loop's lag excuses a timeout.
"""

from __future__ import annotations

import time
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

PSI_CPU = Path("/proc/pressure/cpu")
CONTENDED_SHARE = 0.5
"""A call was contended when some task waited for a CPU at least this share of its time ..."""
ALIVE_S = 30.0
"""... and its scorer answered a call within this many seconds."""
WINDOW = 600
"""Samples kept: about 30 s at one per loop-lag sample."""


def read_psi_cpu(path: Path = PSI_CPU) -> int | None:
    """``some total`` of a PSI file in microseconds; None where there is no PSI."""
    try:
        line = path.read_text(encoding="ascii").splitlines()[0]
        return int(line.rsplit("total=", 1)[1])
    except (OSError, IndexError, ValueError):
        return None


class CpuPressure:
    """Samples of the CPU stall counter (`sample`), and the stall share of a call (`share_since`)."""

    def __init__(self, read: Callable[[], int | None] = read_psi_cpu) -> None:
        self.read = read
        """The counter's reader (tests inject one, named as such)."""
        self.samples: deque[tuple[float, int]] = deque(maxlen=WINDOW)
        """(monotonic time, stall microseconds)."""

    def sample(self) -> None:
        """Note the counter now (a no-op where there is no PSI)."""
        total = self.read()
        if total is not None:
            self.samples.append((time.monotonic(), total))

    def share_since(self, since: float) -> float | None:
        """Share of the time from the last sample at or before ``since`` until now that some task waited.

        None without PSI or without a sample from before ``since``.
        """
        base = None
        for at, total in reversed(self.samples):
            if at <= since:
                base = (at, total)
                break
        now_total, now = self.read(), time.monotonic()
        if base is None or now_total is None or now <= base[0]:
            return None
        return (now_total - base[1]) / 1e6 / (now - base[0])

    def contended(self, since: float) -> bool:
        """Whether the machine's CPU was contended during a call that began at ``since``.

        The dispatcher asks only for a scorer that answered within ``ALIVE_S``.
        """
        share = self.share_since(since)
        return share is not None and share >= CONTENDED_SHARE
