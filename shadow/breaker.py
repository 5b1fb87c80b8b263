"""A circuit breaker per scorer endpoint.

closed     calls go through; ``failure_threshold`` consecutive failures open it
open       calls are refused (rows: ``dropped`` / ``circuit_open``) until ``reset_after_s`` has passed
half_open  one trial call goes through: success closes the breaker, failure opens it again
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from enum import IntEnum


class State(IntEnum):
    """Breaker states; the value is what the ``shadow_breaker_state`` gauge shows."""

    CLOSED = 0
    HALF_OPEN = 1
    OPEN = 2


@dataclass(slots=True)
class CircuitBreaker:
    """Consecutive-failure breaker with a single half-open trial."""

    failure_threshold: int
    reset_after_s: float
    state: State = State.CLOSED
    failures: int = 0
    opened_at: float = 0.0
    trial_in_flight: bool = False
    last_success: float = float("-inf")
    """When (monotonic) a call last succeeded (`shadow.cpupressure` asks whether it answers lately)."""

    def allow(self, now: float | None = None) -> bool:
        """Whether a call may go out now (in half-open, only the one trial)."""
        now = time.monotonic() if now is None else now
        if self.state is State.OPEN and now - self.opened_at >= self.reset_after_s:
            self.state, self.trial_in_flight = State.HALF_OPEN, False
        if self.state is State.CLOSED:
            return True
        if self.state is State.HALF_OPEN and not self.trial_in_flight:
            self.trial_in_flight = True
            return True
        return False

    def success(self) -> None:
        """A call succeeded: close."""
        self.state, self.failures, self.trial_in_flight = State.CLOSED, 0, False
        self.last_success = time.monotonic()

    def failure(self, now: float | None = None) -> None:
        """A call failed: count it, and open at the threshold (or at once from half-open)."""
        self.failures += 1
        if self.state is State.HALF_OPEN or self.failures >= self.failure_threshold:
            self.state = State.OPEN
            self.opened_at = time.monotonic() if now is None else now
            self.trial_in_flight = False
