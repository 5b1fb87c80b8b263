"""The mirror API's body budget: bytes of request bodies being read and handled at once, all together.

A request's cost is what it may hold: its ``Content-Length``; ``SHADOW_MAX_BODY_BYTES`` when it has
none (chunked); plus ``SHADOW_MAX_BODY_BYTES`` more when it is encoded (its decoded copy). A request
whose cost does not fit beside those being handled is refused before its body is read (503
``overloaded`` on ``body``, ``Retry-After: 1``, ``shadow_api_refused_total{reason="body_budget"}``);
one request is always let in, so the bytes held never pass the larger of ``SHADOW_API_BODY_BUDGET_BYTES``
and twice ``SHADOW_MAX_BODY_BYTES``, however many requests arrive.
"""

from __future__ import annotations


def body_cost(content_length: int | None, encoding: str, cap: int) -> int:
    """The bytes a request may hold while it is handled (see the module docstring)."""
    raw = cap if content_length is None else min(content_length, cap)
    return raw + cap if encoding.strip().lower() not in {"", "identity"} else raw


class BodyBudget:
    """Bytes held by requests being handled, against a limit."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0
        self.peak = 0
        """The most bytes held at once (tests and the soak read it)."""

    def take(self, cost: int) -> bool:
        """Hold ``cost`` bytes if they fit (or nothing else is held); False: refuse the request."""
        if self.held and self.held + cost > self.limit:
            return False
        self.held += cost
        self.peak = max(self.peak, self.held)
        return True

    def give(self, cost: int) -> None:
        """The request is answered: free its bytes."""
        self.held -= cost
