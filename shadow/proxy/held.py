"""The bytes the relay holds for mirroring, charged to one relay-wide budget (``SHADOW_PROXY_HELD_BYTES``).

Two things grow with load in the relay: copies of the bodies of claimed exchanges (until the exchange
is handed over) and pending client bytes (read while the upstream connection opens). Both are charged to
one `HeldBytes` shared by every connection, so the relay's memory is bounded by a setting whatever the
connection count. A body copy that does not fit is not made: its request is still relayed byte for byte,
and counted unmirrored as ``relay_memory``. Pending bytes that do not fit pause the client's reading.

`Charges` is one connection's share: what it charged, per request and for the response being framed,
and for its pending bytes. Every way a copy ends (answered, queue cleared, client lost, framer stopped)
gives its bytes back through it.

Words, one per concept: *keep* is the framer's cap on one body copy (``keep_bytes``); *held* bytes are
those charged to the relay-wide budget (`HeldBytes`); a connection's *charges* are its share of them
(`Charges`); *pending* bytes are client bytes read before the upstream connection opened.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shadow.proxy.framing import Message

READ_CHUNK = 256 * 1024
"""The most one read hands over (asyncio's and uvloop's read buffer): pending bytes beyond the budget."""


class HeldBytes:
    """The relay-wide budget: bytes held now, the most ever held, and the limit."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0
        self.peak = 0

    def take(self, n: int) -> bool:
        """Charge ``n`` bytes if they fit; whether they did."""
        if self.held + n > self.limit:
            return False
        self.held += n
        self.peak = max(self.peak, self.held)
        return True

    def give(self, n: int) -> None:
        """Return ``n`` charged bytes."""
        self.held -= n


def body_bound(message: Message, keep: int) -> int:
    """The most a copy of this message's body may hold: its Content-Length, else the cap."""
    for name, value in message.headers:
        if name.lower() == "content-length":
            return min(int(value), keep)  # the framer checked it is digits, and only one
    return keep


class Charges:
    """One connection's held bytes: body copies per request (by identity), the response, pending bytes."""

    def __init__(self, budget: HeldBytes) -> None:
        self.budget = budget
        self.requests: dict[int, int] = {}
        self.starved: set[int] = set()
        """Claimed requests whose copy did not fit (or whose response's did not): ``relay_memory``."""
        self.response = 0
        self.pending = 0

    def request(self, request: Message, keep: int) -> bool:
        """Charge a copy of ``request``'s body; False (and starved) when it does not fit."""
        size = body_bound(request, keep)
        if not self.budget.take(size):
            self.starved.add(id(request))
            return False
        self.requests[id(request)] = size
        return True

    def response_for(self, request: Message | None, response: Message, keep: int) -> bool:
        """Charge a copy of the response's body; False when it does not fit (its request is starved)."""
        self.release_response()
        size = body_bound(response, keep)
        if self.budget.take(size):
            self.response = size
            return True
        if request is not None:
            self.starved.add(id(request))
        return False

    def release(self, request: Message) -> bool:
        """The request is done with (answered or dropped): give its bytes back; whether it was starved."""
        self.budget.give(self.requests.pop(id(request), 0))
        starved = id(request) in self.starved
        self.starved.discard(id(request))
        return starved

    def release_response(self) -> None:
        """The response's copy was handed over or dropped."""
        self.budget.give(self.response)
        self.response = 0

    def charge_pending(self, n: int) -> bool:
        """Charge ``n`` client bytes read while the upstream opens; False: over the budget (pause reading)."""
        if self.budget.take(n):
            self.pending += n
            return True
        return False

    def release_pending(self) -> None:
        """The pending bytes were written upstream or dropped."""
        self.budget.give(self.pending)
        self.pending = 0

    def release_all(self) -> None:
        """The connection is gone: give everything back."""
        self.budget.give(sum(self.requests.values()))
        self.requests.clear()
        self.starved.clear()
        self.release_response()
        self.release_pending()
