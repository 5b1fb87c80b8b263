"""The demo's simulated time: a sidecar that lives in a past week, at a faster pace.

The sidecar stamps ``received_at`` (``shadow.mirror``) and the proxy's outcomes' ``outcome_at``
(``shadow.proxy.extract``) from the wall clock, and offers no clock to inject: a real sidecar must
never be told what time it is. The demo needs its records in several past ISO weeks, so it starts the
real ``semif-shadow sidecar run`` through this module, which replaces the clock of those two modules only:

    simulated = start + (wall - anchor) * speed

Everything else (timeouts, monotonic deadlines, file names, the API's check that an ``outcome_at`` is
not in the future) keeps the wall clock. Outcomes sent through the API carry their own ``outcome_at``.

``python -m semif_shadow.demo.clock START ANCHOR SPEED -- sidecar run ...`` (epoch seconds).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any


@dataclass(frozen=True)
class SimClock:
    """Maps the wall clock onto a simulated one."""

    start: float
    anchor: float
    speed: float

    def at(self, wall: float) -> float:
        """The simulated epoch seconds at wall-clock ``wall``."""
        return self.start + (wall - self.anchor) * self.speed

    def now(self) -> float:
        """The simulated epoch seconds now."""
        return self.at(time.time())

    def argv(self) -> list[str]:
        """This clock as the launcher's arguments."""
        return [repr(self.start), repr(self.anchor), repr(self.speed)]


class _ShiftedTime:
    """The ``time`` module, but ``time()`` is simulated."""

    def __init__(self, clock: SimClock) -> None:
        self._clock = clock

    def time(self) -> float:
        return self._clock.now()

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def _shifted_datetime(clock: SimClock) -> type[datetime]:
    class ShiftedDatetime(datetime):
        """``datetime`` whose ``now`` is simulated."""

        @classmethod
        def now(cls, tz: tzinfo | None = None) -> ShiftedDatetime:
            stamp = datetime.fromtimestamp(clock.now(), tz or UTC)
            return cls.fromisoformat(stamp.isoformat())

    return ShiftedDatetime


def install(clock: SimClock) -> None:
    """Give the sidecar's two time-stamping modules the simulated clock."""
    import shadow.mirror  # noqa: PLC0415  (imported to be patched)
    import shadow.proxy.extract  # noqa: PLC0415

    mirror: Any = shadow.mirror
    extract: Any = shadow.proxy.extract
    mirror.time = _ShiftedTime(clock)
    extract.datetime = _shifted_datetime(clock)


def main(argv: list[str] | None = None) -> None:
    """Install the clock, then run the ``semif-shadow`` command line with the remaining arguments."""
    args = sys.argv[1:] if argv is None else argv
    start, anchor, speed, sep, *rest = args
    if sep != "--":
        raise SystemExit("usage: python -m semif_shadow.demo.clock START ANCHOR SPEED -- COMMAND...")
    install(SimClock(float(start), float(anchor), float(speed)))
    from semif_shadow.cli import main as cli  # noqa: PLC0415

    cli(rest)


if __name__ == "__main__":
    main()
