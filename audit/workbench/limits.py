"""How often sign-in may fail: per client and per decision type, over a sliding window.

A wrong token names no decision type, so each failure counts against the client that sent it and
against every type whose token it was compared with. A client with ``per_client`` failures in the last
``window_s`` seconds, or a type with ``per_type`` (from all clients together), is refused (``429``) until
the oldest of those failures leaves the window; a refused try compares no token and counts nothing.
A locked type's token is not compared at all, so guesses at it stop for every client.

Memory stays small without a cap: only compared tries fail, and while a type is locked nothing is
compared with its token, so a window holds at most ``per_type`` failures per type; keys whose failures
have all left the window are dropped.
"""

from __future__ import annotations

import math
import time
from collections import deque
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

DEFAULT_CLIENT_FAILURES = 10
DEFAULT_TYPE_FAILURES = 50
DEFAULT_WINDOW_S = 60.0
CLIENT, TYPE = "client", "type"
Key = tuple[str, str]
"""``(CLIENT, remote address)`` or ``(TYPE, decision type)``."""


class SignInLimits:
    """The recent failed sign-ins (see the module docstring)."""

    def __init__(self, per_client: int = DEFAULT_CLIENT_FAILURES, per_type: int = DEFAULT_TYPE_FAILURES,
                 window_s: float = DEFAULT_WINDOW_S, clock: Callable[[], float] = time.monotonic) -> None:
        self._limit = {CLIENT: per_client, TYPE: per_type}
        self._window_s = window_s
        self._clock = clock
        self._failures: dict[Key, deque[float]] = {}
        """The times of each key's latest failures, at most its limit of them, oldest first."""

    def retry_after(self, key: Key) -> int:
        """Whole seconds until ``key`` may try again; 0 if it may now."""
        times = self._failures.get(key)
        limit = self._limit[key[0]]
        if times is None or len(times) < limit:
            return 0
        wait = times[0] + self._window_s - self._clock()
        return max(1, math.ceil(wait)) if wait > 0 else 0

    def failed(self, keys: Iterable[Key]) -> int:
        """Count one failure against each key; how many the first key now has in the window."""
        now = self._clock()
        self._forget(now)
        counts = []
        for key in keys:
            times = self._failures.setdefault(key, deque(maxlen=self._limit[key[0]]))
            times.append(now)
            counts.append(len(times))
        return counts[0] if counts else 0

    def _forget(self, now: float) -> None:
        cutoff = now - self._window_s
        for key in [k for k, times in self._failures.items() if times[-1] <= cutoff]:
            del self._failures[key]
        for times in self._failures.values():
            while times[0] <= cutoff:
                times.popleft()

    @property
    def window_s(self) -> float:
        """The window's length in seconds."""
        return self._window_s

    def limit(self, kind: str) -> int:
        """The failures a ``CLIENT`` or a ``TYPE`` may have in the window."""
        return self._limit[kind]
