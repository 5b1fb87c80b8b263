"""A relay connection's phases, the events that move it, and the table of moves (h11's ``_state.py``).

`shadow.proxy.connection.Connection` takes every transition through `next_phase`, one method per event;
the module docstring there draws the moves. Nothing here touches a socket: the table is data, and
``tests/shadow/proxy/test_connection_states.py`` drives a connection through every phase x event.
"""

from __future__ import annotations

from enum import Enum


class Phase(Enum):
    """Where a connection stands (`shadow.proxy.connection`'s docstring draws the moves)."""

    NEW = "new"
    """The client connected; no byte from it yet, no upstream."""
    CONNECTING = "connecting"
    """Client bytes arrived; the upstream connection opens and they wait as pending bytes."""
    OPEN = "open"
    """Both connected, no upstream byte relayed yet: a failure is answered with a 502 or 504."""
    RELAYED = "relayed"
    """An upstream byte went to the client: from then on only upstream bytes do (a failure closes)."""
    CLOSING = "closing"
    """The client is closed after its buffered bytes (failed, upstream gone, expired or drained)."""
    CLOSED = "closed"
    """The client is gone: nothing more is paired, timed out or relayed."""


class Event(Enum):
    """What moves a connection; each is handled by the method of the same name."""

    CLIENT_DATA = "client_data"
    CLIENT_EOF = "client_eof"
    CLIENT_LOST = "client_lost"
    UPSTREAM_OPEN = "upstream_open"
    UPSTREAM_DATA = "upstream_data"
    UPSTREAM_LOST = "upstream_lost"
    UPSTREAM_FAILED = "upstream_failed"
    """The upstream could not be reached, or sent nothing for the read timeout."""
    CLOSE = "close"
    """Close the client after its buffered bytes (expired, drained)."""
    ABORT = "abort"
    """Close both sides now (the server's grace is over)."""


_ENDS = {Event.UPSTREAM_LOST: Phase.CLOSING, Event.CLOSE: Phase.CLOSING, Event.ABORT: Phase.CLOSING,
         Event.CLIENT_LOST: Phase.CLOSED}
TRANSITIONS: dict[Phase, dict[Event, Phase]] = {
    Phase.NEW: {Event.CLIENT_DATA: Phase.CONNECTING, Event.CLIENT_EOF: Phase.CLOSING, **_ENDS},
    Phase.CONNECTING: {Event.UPSTREAM_OPEN: Phase.OPEN, Event.UPSTREAM_FAILED: Phase.CLOSING, **_ENDS},
    Phase.OPEN: {Event.UPSTREAM_DATA: Phase.RELAYED, Event.UPSTREAM_FAILED: Phase.CLOSING, **_ENDS},
    Phase.RELAYED: {Event.UPSTREAM_FAILED: Phase.CLOSING, **_ENDS},
    Phase.CLOSING: {Event.CLIENT_LOST: Phase.CLOSED},
    Phase.CLOSED: {},
}
"""Phase -> event -> next phase; an event not listed leaves the phase as it is."""


def next_phase(phase: Phase, event: Event) -> Phase:
    """The phase ``event`` moves a connection in ``phase`` to (`TRANSITIONS`; unlisted: stays)."""
    return TRANSITIONS[phase].get(event, phase)
