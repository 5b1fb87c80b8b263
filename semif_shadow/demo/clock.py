"""The demo's simulated time: a sidecar that lives in a past week, at a faster pace.

The sidecar stamps ``received_at``, the proxy's outcomes' ``outcome_at`` and the drop summaries' minute
from `shadow.clock.now`, and offers no setting for it: a real sidecar must never be told what time it
is. The demo needs its records in several past ISO weeks, so it starts the real ``semif-shadow sidecar
run`` through this module, which replaces that one function:

    simulated = start + (wall - anchor) * speed

Everything else (timeouts, monotonic deadlines, file names, the API's check that an ``outcome_at`` is
not in the future) keeps the wall clock. Outcomes sent through the API carry their own ``outcome_at``.

``python -m semif_shadow.demo.clock START ANCHOR SPEED -- sidecar run ...`` (epoch seconds).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass


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


def install(clock: SimClock) -> None:
    """Give the sidecar's record clock (`shadow.clock.now`, its one seam) the simulated time."""
    import shadow.clock  # noqa: PLC0415  (imported to be replaced)

    shadow.clock.now = clock.now


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
