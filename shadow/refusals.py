"""Scorer refusals, told once: a scorer that refuses every call must neither flood the log nor stay silent.

A refusal (`ScorerRejected`: a 4xx, or a chat server refusing the catalog's ``answer_mode``) is the
request's fault, not the endpoint's, so it neither opens the breaker nor is retried; every decision of the
candidate then ends ``error / scorer_rejected``. Each one is counted in
``shadow_scorer_refused_total{endpoint, candidate, cause}``; the first of each candidate and cause is
logged as a warning with the scorer's own message (which says the fix where the backend knows it, e.g.
``set the scorer's answer_mode to ...``), and it is logged again at most once per ``repeat_s`` with the
number refused since.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shadow.errors import ScorerRejected
    from shadow.metrics import Metrics

log = logging.getLogger("shadow.scorer")
DEFAULT_REPEAT_S = 3600.0
"""A refusal that goes on is logged again after this long, with its count."""


@dataclass(slots=True)
class _Told:
    """When a (candidate, cause) was last logged and how many refusals came since."""

    at: float
    since: int = 0


@dataclass(slots=True)
class RefusalLog:
    """Counts every refusal; logs the first of each candidate and cause, then once per ``repeat_s``."""

    metrics: Metrics
    repeat_s: float = DEFAULT_REPEAT_S
    _told: dict[tuple[str, str], _Told] = field(default_factory=dict)

    def report(self, candidate: str, endpoint: str, exc: ScorerRejected, now: float | None = None) -> None:
        """Count one refusal of ``candidate``'s call; log it if this candidate and cause are news."""
        cause = type(exc).__name__
        self.metrics.scorer_refused.labels(endpoint, candidate, cause).inc()
        now = time.monotonic() if now is None else now
        told = self._told.get((candidate, cause))
        if told is None:
            self._told[(candidate, cause)] = _Told(now)
            log.warning("scorer refused candidate %s: %s", candidate, exc,
                        extra={"fields": {"candidate": candidate, "endpoint": endpoint, "cause": cause}})
            return
        told.since += 1
        if now - told.at >= self.repeat_s:
            log.warning("scorer still refusing candidate %s (%d more since): %s", candidate, told.since, exc,
                        extra={"fields": {"candidate": candidate, "endpoint": endpoint, "cause": cause,
                                          "refused_since": told.since}})
            told.at, told.since = now, 0
