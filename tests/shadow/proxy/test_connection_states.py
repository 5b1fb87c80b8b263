"""The relay connection's state machine, phase x event: every pair, on the table and through the methods.

The grids below (written out here, not read from `shadow.proxy.states`) give, for each phase and event,
the phase the event moves a connection to, or ``-`` where the event is refused (`IllegalEvent`). The
table is fed every pair; then real `Connection`s are walked to each phase through their own event
methods and handed each event. The transports and the server are stand-ins that record what is done to
them: the moves are tested without sockets here; the bytes on real sockets are pinned by
``test_proxy_bytes.py``, ``test_proxy.py`` and ``test_proxy_security.py``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pytest

from shadow.errors import BadGateway, IllegalEvent
from shadow.proxy.connection import Connection
from shadow.proxy.held import HeldBytes
from shadow.proxy.states import TRANSITIONS, ConnectionState, Event, Phase, next_phase

if TYPE_CHECKING:
    from collections.abc import Callable

    from shadow.proxy.framing import Message

GRIDS = ("""
            client_data  client_eof  client_lost  pause
new         connecting   closing     closed       -
connecting  connecting   connecting  closed       connecting
open        open         open        closed       -
relayed     relayed      relayed     closed       -
closing     -            -           closed       -
closed      -            -           -            -
""", """
            upstream_open  upstream_data  upstream_lost  upstream_failed
new         -              -              -              -
connecting  open           -              closing        closing
open        -              relayed        closing        closing
relayed     -              relayed        closing        closing
closing     -              closing        closing        closing
closed      -              -              closed         -
""", """
            drain       close    abort
new         new         closing  closing
connecting  connecting  closing  closing
open        open        closing  closing
relayed     relayed     closing  closing
closing     closing     closing  closing
closed      -           -        -
""")
"""Row: the phase before; column: the event; cell: the phase after, or ``-``: refused (the client's
events, the upstream's, the server's)."""

REQUEST = b"POST /tickets HTTP/1.1\r\nHost: router\r\nContent-Length: 4\r\n\r\n"


def _grid() -> dict[tuple[Phase, Event], Phase | None]:
    cells: dict[tuple[Phase, Event], Phase | None] = {}
    for grid in GRIDS:
        header, *rows = grid.strip().splitlines()
        events = [Event(name) for name in header.split()]
        cells.update({(Phase(row.split()[0]), event): None if cell == "-" else Phase(cell)
                      for row in rows for event, cell in zip(events, row.split()[1:], strict=True)})
    return cells


EXPECTED = _grid()
PAIRS = sorted(EXPECTED, key=lambda k: (list(Phase).index(k[0]), list(Event).index(k[1])))


class StandInTransport(asyncio.Transport):
    """Records writes and closes (a stand-in for a socket transport; no bytes leave the process)."""

    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.closing = self.aborted = self.paused = self.eof = False

    def write(self, data: bytes | bytearray | memoryview) -> None:  # noqa: D102
        self.written += data

    def writelines(self, list_of_data: object) -> None:  # noqa: D102
        for data in list_of_data:  # type: ignore[attr-defined]
            self.write(data)

    def close(self) -> None:  # noqa: D102
        self.closing = True

    def abort(self) -> None:  # noqa: D102
        self.closing = self.aborted = True

    def is_closing(self) -> bool:  # noqa: D102
        return self.closing

    def can_write_eof(self) -> bool:  # noqa: D102
        return True

    def write_eof(self) -> None:  # noqa: D102
        self.eof = True

    def pause_reading(self) -> None:  # noqa: D102
        self.paused = True

    def resume_reading(self) -> None:  # noqa: D102
        self.paused = False

    def get_extra_info(self, name: str, default: object = None) -> object:  # noqa: D102, ARG002
        return default


@dataclass
class Limits:
    """The two settings a connection reads."""

    keep_bytes: int = 1024
    read_timeout_s: float = 60.0


class RecordingHooks:
    """The relay's hooks, keeping the statuses answered."""

    def __init__(self) -> None:
        self.statuses: list[int] = []

    def answered(self, status: int) -> None:  # noqa: D102
        self.statuses.append(status)

    def exchange(self, request: Message, response: Message) -> None:  # noqa: D102
        pass

    def unmirrored(self, reason: str, n: int = 1) -> None:  # noqa: D102
        pass

    def refused(self, reason: str) -> None:  # noqa: D102
        pass

    def dropped(self, reason: str, request: Message) -> None:  # noqa: D102
        pass


@dataclass
class StandInServer:
    """What a connection needs of its server; the upstream opens only when the test says so."""

    config: Limits = field(default_factory=Limits)
    hooks: RecordingHooks = field(default_factory=RecordingHooks)
    held: HeldBytes = field(default_factory=lambda: HeldBytes(1 << 20))
    admitted: set[object] = field(default_factory=set)

    def claimed(self, request: Message) -> bool:  # noqa: ARG002, D102
        return True

    def admit(self, conn: object) -> bool:  # noqa: D102
        self.admitted.add(conn)
        return True

    def release(self, conn: object) -> None:  # noqa: D102
        self.admitted.discard(conn)

    async def open_upstream(self, side: Callable[[], asyncio.Protocol]) -> asyncio.Transport:  # noqa: ARG002, D102
        await asyncio.Event().wait()  # never: the test delivers `upstream_open` itself
        raise AssertionError


PATHS: dict[Phase, list[Event]] = {
    Phase.NEW: [],
    Phase.CONNECTING: [Event.CLIENT_DATA],
    Phase.OPEN: [Event.CLIENT_DATA, Event.UPSTREAM_OPEN],
    Phase.RELAYED: [Event.CLIENT_DATA, Event.UPSTREAM_OPEN, Event.UPSTREAM_DATA],
    Phase.CLOSING: [Event.CLIENT_DATA, Event.UPSTREAM_OPEN, Event.UPSTREAM_LOST],
    Phase.CLOSED: [Event.CLIENT_LOST],
}
"""How a new connection reaches each phase through its own events."""


def deliver(conn: Connection, event: Event) -> StandInTransport | None:
    """Call the method that owns ``event``; return the upstream transport it was handed, if any."""
    if event is Event.UPSTREAM_OPEN:
        upstream = StandInTransport()
        conn.upstream_open(upstream)
        return upstream
    if event is Event.CLIENT_LOST:
        conn.client.close()  # as asyncio: a transport is closed before its connection_lost
    {
        Event.CLIENT_DATA: lambda: conn.client_data(REQUEST),
        Event.CLIENT_EOF: conn.client_eof,
        Event.CLIENT_LOST: conn.client_lost,
        Event.UPSTREAM_DATA: lambda: conn.upstream_data(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"),
        Event.UPSTREAM_LOST: conn.upstream_lost,
        Event.UPSTREAM_FAILED: lambda: conn.upstream_failed(BadGateway("upstream 127.0.0.1:9: refused")),
        Event.DRAIN: conn.drain,
        Event.CLOSE: conn.close,
        Event.ABORT: conn.abort,
    }[event]()
    return None


async def connection_in(phase: Phase) -> tuple[Connection, StandInServer, StandInTransport]:
    """A connection walked to ``phase`` (asserted), its server and its client transport."""
    server, client = StandInServer(), StandInTransport()
    conn = Connection(server)
    conn.client_connected(client)
    for event in PATHS[phase]:
        deliver(conn, event)
        await asyncio.sleep(0)  # the deferred framing runs, as on a real loop
    assert conn.state.phase is phase
    return conn, server, client


def _close(conn: Connection) -> None:
    if conn.connecting is not None:
        conn.connecting.cancel()
    if conn.state.phase is not Phase.CLOSED:
        conn.client_lost()


@pytest.mark.parametrize(("phase", "event"), PAIRS, ids=lambda v: v.value)
def test_the_machine_moves_on_each_listed_event_and_refuses_the_rest(phase: Phase, event: Event) -> None:
    """Every phase x event: a listed event moves the state as the grid says; the rest raise, naming both.

    A refused event leaves the state as it was.
    """
    state = ConnectionState(phase)
    expected = EXPECTED[phase, event]
    if expected is None:
        with pytest.raises(IllegalEvent, match=f"event {event.value!r} in phase {phase.value!r}") as refused:
            state.process(event)
        assert (refused.value.phase, refused.value.event) == (phase, event)
        assert state.phase is phase
        with pytest.raises(IllegalEvent):
            next_phase(phase, event)
    else:
        assert state.process(event) is phase
        assert state.phase is expected
        assert next_phase(phase, event) is expected


def test_the_grid_is_the_table() -> None:
    """The grid names every phase and event, and the table lists exactly the grid's moves."""
    assert {p for p, _ in EXPECTED} == set(Phase)
    assert {e for _, e in EXPECTED} == set(Event)
    assert len(EXPECTED) == len(Phase) * len(Event)
    listed = {(p, e): to for p, moves in TRANSITIONS.items() for e, to in moves.items()}
    assert listed == {key: to for key, to in EXPECTED.items() if to is not None}


def test_the_facts_are_set_by_their_events() -> None:
    """CLIENT_EOF sets ``half_closed``, DRAIN ``draining``, PAUSE ``paused``; UPSTREAM_OPEN clears it."""
    state = ConnectionState()
    assert (state.half_closed, state.draining, state.paused) == (False, False, False)
    for event in (Event.CLIENT_DATA, Event.CLIENT_EOF, Event.DRAIN, Event.PAUSE):
        state.process(event)
    facts = (state.half_closed, state.draining, state.paused)
    assert (state.phase, facts) == (Phase.CONNECTING, (True, True, True))
    state.process(Event.UPSTREAM_OPEN)
    assert (state.phase, state.half_closed, state.draining, state.paused) == (Phase.OPEN, True, True, False)


BY_METHOD = {
    (Phase.NEW, Event.DRAIN): Phase.CLOSING,  # nothing awaits an answer: `drain` closes at once
    (Phase.CLOSING, Event.UPSTREAM_OPEN): Phase.CLOSING,  # the client is closing: the upstream is aborted
    (Phase.CLOSED, Event.UPSTREAM_OPEN): Phase.CLOSED,  # (the method does it before any event)
}
"""Where a method's outcome differs from its event's cell, and why."""


@pytest.mark.parametrize(("phase", "event"), [pair for pair in PAIRS if pair[1] is not Event.PAUSE],
                         ids=lambda v: v.value)
async def test_each_method_moves_a_real_connection_as_the_grid_says(phase: Phase, event: Event) -> None:
    """One event in one phase through its method: the connection lands as the grid says, or it raises.

    PAUSE has no method of its own: `client_data` takes it (see the budget test below).
    """
    conn, _server, _client = await connection_in(phase)
    expected = BY_METHOD.get((phase, event), EXPECTED[phase, event])
    if expected is None:
        with pytest.raises(IllegalEvent):
            deliver(conn, event)
        assert conn.state.phase is phase
    else:
        deliver(conn, event)
        assert conn.state.phase is expected
    _close(conn)


@pytest.mark.parametrize("phase", [Phase.CONNECTING, Phase.OPEN, Phase.RELAYED, Phase.CLOSING],
                         ids=lambda p: p.value)
async def test_a_failure_is_answered_only_before_an_upstream_byte(phase: Phase) -> None:
    """`upstream_failed` writes a 502 in CONNECTING and OPEN only; after a relayed byte it closes quietly."""
    conn, server, client = await connection_in(phase)
    before = bytes(client.written)
    deliver(conn, Event.UPSTREAM_FAILED)
    answered = phase in (Phase.CONNECTING, Phase.OPEN)
    assert bytes(client.written[len(before):]).startswith(b"HTTP/1.1 502 Bad Gateway\r\n") is answered
    assert server.hooks.statuses == ([502] if answered else [])
    assert client.closing
    _close(conn)


@pytest.mark.parametrize("phase", [Phase.CONNECTING, Phase.CLOSING, Phase.CLOSED], ids=lambda p: p.value)
async def test_an_upstream_opened_late_is_taken_only_while_connecting(phase: Phase) -> None:
    """An upstream that opens once the client is closing or gone is aborted at once (no event)."""
    conn, _server, client = await connection_in(phase)
    upstream = deliver(conn, Event.UPSTREAM_OPEN)
    assert upstream is not None
    assert upstream.aborted is (phase is not Phase.CONNECTING)
    if phase is Phase.CONNECTING:
        assert bytes(upstream.written) == REQUEST  # the pending bytes went out first
        assert client.written == b""
    _close(conn)


async def test_an_upstream_opened_after_the_client_was_reset_is_aborted() -> None:
    """A client the loop closed while CONNECTING (a reset, its loss on the way): the upstream is aborted.

    The phase stays CONNECTING until the client's loss arrives.
    """
    conn, _server, client = await connection_in(Phase.CONNECTING)
    client.abort()
    upstream = deliver(conn, Event.UPSTREAM_OPEN)
    assert upstream is not None
    assert upstream.aborted
    assert conn.state.phase is Phase.CONNECTING
    _close(conn)


async def test_pending_bytes_over_the_budget_pause_the_client_until_the_upstream_opens() -> None:
    """Client bytes over the relay's budget while the upstream opens pause reading; its opening resumes it.

    The pending bytes are written to the upstream first.
    """
    server = StandInServer(held=HeldBytes(8))
    client = StandInTransport()
    conn = Connection(server)
    conn.client_connected(client)
    deliver(conn, Event.CLIENT_DATA)
    assert (conn.state.phase, conn.state.paused, client.paused) == (Phase.CONNECTING, True, True)
    upstream = deliver(conn, Event.UPSTREAM_OPEN)
    assert upstream is not None
    assert bytes(upstream.written) == REQUEST
    assert (conn.state.phase, conn.state.paused, client.paused) == (Phase.OPEN, False, False)
    _close(conn)


async def test_draining_closes_after_the_last_answer() -> None:
    """`drain` with a request awaiting its answer keeps the phase; the answer then closes the client."""
    conn, _server, client = await connection_in(Phase.OPEN)
    conn.drain()
    assert (conn.state.phase, client.closing) == (Phase.OPEN, False)
    conn.upstream_data(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    await asyncio.sleep(0)
    assert (conn.state.phase, client.closing) == (Phase.CLOSING, True)
    _close(conn)
