"""Which decisions are scored: a deterministic sample, a per-type rate cap and a spend guard.

The sample depends only on ``decision_id`` (and the catalog's optional salt): every sidecar and every
week picks the same decisions, so weeks compare like for like and replicas agree without talking.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field

_SCALE = float(1 << 64)


def sample_point(decision_id: str, salt: str = "") -> float:
    """A stable point in [0, 1) for a decision id (first 8 bytes of sha256(salt + id))."""
    digest = hashlib.sha256(f"{salt}{decision_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / _SCALE


def is_sampled(decision_id: str, rate: float, salt: str = "") -> bool:
    """Whether the decision is in the sample (monotone: a higher rate keeps all of a lower one)."""
    if rate >= 1.0:
        return True
    return sample_point(decision_id, salt) < rate


@dataclass(slots=True)
class RateCap:
    """A token bucket: at most ``per_second`` on average, bursts up to one second's worth."""

    per_second: float
    tokens: float = 0.0
    stamp: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.tokens = max(1.0, self.per_second)

    def allow(self, now: float | None = None) -> bool:
        """Take one token if there is one."""
        now = time.monotonic() if now is None else now
        capacity = max(1.0, self.per_second)
        self.tokens = min(capacity, self.tokens + (now - self.stamp) * self.per_second)
        self.stamp = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


@dataclass(slots=True)
class SpendGuard:
    """Scorer calls and tokens spent in the current clock hour, against the type's budget."""

    calls_per_hour: int | None
    tokens_per_hour: int | None
    hour: int = -1
    calls: int = 0
    tokens: int = 0

    def _roll(self, now: float) -> None:
        hour = int(now // 3600)
        if hour != self.hour:
            self.hour, self.calls, self.tokens = hour, 0, 0

    def allow_call(self, now: float | None = None) -> bool:
        """Whether one more call fits this hour's budget; counts it if so."""
        self._roll(time.time() if now is None else now)
        if self.calls_per_hour is not None and self.calls >= self.calls_per_hour:
            return False
        if self.tokens_per_hour is not None and self.tokens >= self.tokens_per_hour:
            return False
        self.calls += 1
        return True

    def spend_tokens(self, tokens: int, now: float | None = None) -> None:
        """Count the tokens a call used."""
        self._roll(time.time() if now is None else now)
        self.tokens += tokens
