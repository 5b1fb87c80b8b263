"""A relay connection's state: its phase, the facts that steer its decisions, the events, the moves.

As in h11's ``_state.py``, the moves are a table (`TRANSITIONS`) and one object owns every change
(`ConnectionState.process`): it writes the phase and the facts beside it, and it refuses an event the
table does not list for the phase (`shadow.errors.IllegalEvent`), since only a bug in the relay can
deliver one. The moves::

    NEW --client_data--> CONNECTING --upstream_open--> OPEN --upstream_data--> RELAYED
     |                       |                          |                         |
     +-- client_eof (NEW only), close, abort, upstream_failed, upstream_lost -----+--> CLOSING
    any phase but CLOSED --client_lost--> CLOSED

plus the events that leave the phase as it is (listed too: more client bytes, a drain, a close asked
twice, an upstream that goes after the client did). `shadow.proxy.connection.Connection` delivers each
event from its method of the same name. Nothing here touches a socket; the table is data, and
``tests/shadow/proxy/test_connection_states.py`` feeds it every phase x event.
"""

from __future__ import annotations

from enum import Enum

from shadow.errors import IllegalEvent


class Phase(Enum):
    """Where a connection stands (the module docstring draws the moves)."""

    NEW = "new"
    """The client connected; no byte from it yet, no upstream."""
    CONNECTING = "connecting"
    """Client bytes arrived; the upstream connection opens and they wait as pending bytes."""
    OPEN = "open"
    """Both connected, no upstream byte relayed yet: a failure is answered with a 502 or 504."""
    RELAYED = "relayed"
    """An upstream byte went to the client: from then on only upstream bytes do (a failure closes)."""
    CLOSING = "closing"
    """The client's transport is closed after its buffered bytes (failed, upstream gone, expired, drained);
    a closed transport reads nothing more, so no client event but its loss arrives."""
    CLOSED = "closed"
    """The client is gone and its upstream aborted: only the upstream's loss may still arrive."""


class Event(Enum):
    """What moves a connection; each is delivered by the `Connection` method of the same name."""

    CLIENT_DATA = "client_data"
    CLIENT_EOF = "client_eof"
    CLIENT_LOST = "client_lost"
    PAUSE = "pause"
    """The pending bytes went over the relay's budget: the client is not read until the upstream opens."""
    UPSTREAM_OPEN = "upstream_open"
    UPSTREAM_DATA = "upstream_data"
    UPSTREAM_LOST = "upstream_lost"
    UPSTREAM_FAILED = "upstream_failed"
    """The upstream could not be reached, or sent nothing for the read timeout."""
    DRAIN = "drain"
    """The server is closing: close once no request awaits an answer."""
    CLOSE = "close"
    """Close the client after its buffered bytes (expired, drained)."""
    ABORT = "abort"
    """Close both sides now (the server's grace is over)."""


_ENDS = {Event.CLIENT_LOST: Phase.CLOSED, Event.CLOSE: Phase.CLOSING, Event.ABORT: Phase.CLOSING}
_UPSTREAM_ENDS = {Event.UPSTREAM_LOST: Phase.CLOSING, Event.UPSTREAM_FAILED: Phase.CLOSING}


def _stay(phase: Phase, *events: Event) -> dict[Event, Phase]:
    return dict.fromkeys(events, phase)


TRANSITIONS: dict[Phase, dict[Event, Phase]] = {
    Phase.NEW: {Event.CLIENT_DATA: Phase.CONNECTING, Event.CLIENT_EOF: Phase.CLOSING,
                **_stay(Phase.NEW, Event.DRAIN), **_ENDS},
    Phase.CONNECTING: {Event.UPSTREAM_OPEN: Phase.OPEN, **_UPSTREAM_ENDS, **_ENDS,
                       **_stay(Phase.CONNECTING, Event.CLIENT_DATA, Event.CLIENT_EOF, Event.PAUSE,
                               Event.DRAIN)},
    Phase.OPEN: {Event.UPSTREAM_DATA: Phase.RELAYED, **_UPSTREAM_ENDS, **_ENDS,
                 **_stay(Phase.OPEN, Event.CLIENT_DATA, Event.CLIENT_EOF, Event.DRAIN)},
    Phase.RELAYED: {**_UPSTREAM_ENDS, **_ENDS,
                    **_stay(Phase.RELAYED, Event.CLIENT_DATA, Event.CLIENT_EOF, Event.UPSTREAM_DATA,
                            Event.DRAIN)},
    Phase.CLOSING: {Event.CLIENT_LOST: Phase.CLOSED,
                    **_stay(Phase.CLOSING, Event.UPSTREAM_DATA, Event.UPSTREAM_LOST, Event.UPSTREAM_FAILED,
                            Event.DRAIN, Event.CLOSE, Event.ABORT)},
    Phase.CLOSED: _stay(Phase.CLOSED, Event.UPSTREAM_LOST),
}
"""Phase -> event -> next phase, for every event that can reach a connection in that phase; an event not
listed raises `IllegalEvent`. Why some cannot: there is no upstream before CONNECTING (and one opening
attempt only), the client is not read once CLOSING begins, and a CLOSED connection has left the server
(no drain, close or abort) with its upstream aborted."""


def next_phase(phase: Phase, event: Event) -> Phase:
    """The phase ``event`` moves a connection in ``phase`` to (`TRANSITIONS`); `IllegalEvent` if unlisted."""
    moves = TRANSITIONS[phase]
    if event not in moves:
        raise IllegalEvent(phase, event)
    return moves[event]


class ConnectionState:
    """A connection's phase and the facts that steer what it does; `process` is their only writer."""

    __slots__ = ("draining", "half_closed", "paused", "phase")

    def __init__(self, phase: Phase = Phase.NEW) -> None:
        self.phase = phase
        self.draining = False
        """The server is closing: close once no request awaits an answer (set by DRAIN)."""
        self.half_closed = False
        """The client sent its EOF: pass it on once the upstream is open (set by CLIENT_EOF)."""
        self.paused = False
        """The client is not read: its pending bytes went over the budget (set by PAUSE, cleared by
        UPSTREAM_OPEN, which writes them out)."""

    def process(self, event: Event) -> Phase:
        """Take ``event``'s transition and set the facts it implies; return the phase it left.

        Raises `IllegalEvent` (and changes nothing) when the table lists no move for ``event`` here.
        """
        before = self.phase
        self.phase = next_phase(before, event)
        if event is Event.CLIENT_EOF:
            self.half_closed = True
        elif event is Event.DRAIN:
            self.draining = True
        elif event is Event.PAUSE:
            self.paused = True
        elif event is Event.UPSTREAM_OPEN:
            self.paused = False
        return before
