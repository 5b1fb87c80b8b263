"""The relay connection's state machine, phase x event: every cell of the table, through the real methods.

Each case builds a real `Connection`, walks it to a phase through its own event methods, delivers one
event and reads the phase it lands in, against the grid below (written out here, not read from
`shadow.proxy.states`). The transports and the server are stand-ins that record what is done to them:
the moves are tested without sockets here; the bytes on real sockets are pinned by
``test_proxy_bytes.py``, ``test_proxy.py`` and ``test_proxy_security.py``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pytest

from shadow.errors import BadGateway
from shadow.proxy.connection import Connection
from shadow.proxy.held import HeldBytes
from shadow.proxy.states import TRANSITIONS, Event, Phase, next_phase

if TYPE_CHECKING:
    from collections.abc import Callable

    from shadow.proxy.framing import Message

GRIDS = ("""
            client_data  client_eof  client_lost  close    abort
new         connecting   closing     closed       closing  closing
connecting  connecting   connecting  closed       closing  closing
open        open         open        closed       closing  closing
relayed     relayed      relayed     closed       closing  closing
closing     closing      closing     closed       closing  closing
closed      closed       closed      closed       closed   closed
""", """
            upstream_open  upstream_data  upstream_lost  upstream_failed
new         new            new            closing        new
connecting  open           connecting     closing        closing
open        open           relayed        closing        closing
relayed     relayed        relayed        closing        closing
closing     closing        closing        closing        closing
closed      closed         closed         closed         closed
""")
"""Row: the phase before; column: the event; cell: the phase after (the client's and the server's
events, then the upstream's)."""

REQUEST = b"POST /tickets HTTP/1.1\r\nHost: router\r\nContent-Length: 4\r\n\r\n"


def _grid() -> dict[tuple[Phase, Event], Phase]:
    cells = {}
    for grid in GRIDS:
        header, *rows = grid.strip().splitlines()
        events = [Event(name) for name in header.split()]
        cells.update({(Phase(row.split()[0]), event): Phase(cell)
                      for row in rows for event, cell in zip(events, row.split()[1:], strict=True)})
    return cells


EXPECTED = _grid()


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
    {
        Event.CLIENT_DATA: lambda: conn.client_data(REQUEST),
        Event.CLIENT_EOF: conn.client_eof,
        Event.CLIENT_LOST: conn.client_lost,
        Event.UPSTREAM_DATA: lambda: conn.upstream_data(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"),
        Event.UPSTREAM_LOST: conn.upstream_lost,
        Event.UPSTREAM_FAILED: lambda: conn.upstream_failed(BadGateway("upstream 127.0.0.1:9: refused")),
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
    assert conn.phase is phase
    return conn, server, client


def _close(conn: Connection) -> None:
    if conn.connecting is not None:
        conn.connecting.cancel()
    conn.client_lost()


@pytest.mark.parametrize(("phase", "event"), sorted(EXPECTED, key=lambda k: (k[0].name, k[1].name)),
                         ids=lambda v: v.value)
async def test_each_event_moves_each_phase_as_the_grid_says(phase: Phase, event: Event) -> None:
    """Deliver one event in one phase: the connection lands where the grid says, and the table agrees."""
    conn, _server, _client = await connection_in(phase)
    deliver(conn, event)
    assert conn.phase is EXPECTED[phase, event]
    assert next_phase(phase, event) is EXPECTED[phase, event]
    _close(conn)


def test_the_grid_covers_the_table() -> None:
    """The grid names every phase and event, and the table lists no move the grid does not make."""
    assert {p for p, _ in EXPECTED} == set(Phase)
    assert {e for _, e in EXPECTED} == set(Event)
    listed = {(p, e): to for p, moves in TRANSITIONS.items() for e, to in moves.items()}
    assert all(EXPECTED[key] is to for key, to in listed.items())
    assert {key for key, to in EXPECTED.items() if to is not key[0]} <= set(listed)


@pytest.mark.parametrize("phase", list(Phase), ids=lambda p: p.value)
async def test_a_failure_is_answered_only_before_an_upstream_byte(phase: Phase) -> None:
    """`upstream_failed` writes a 502 in CONNECTING and OPEN only; after a relayed byte it closes quietly."""
    conn, server, client = await connection_in(phase)
    before = bytes(client.written)
    deliver(conn, Event.UPSTREAM_FAILED)
    answered = phase in (Phase.CONNECTING, Phase.OPEN)
    assert bytes(client.written[len(before):]).startswith(b"HTTP/1.1 502 Bad Gateway\r\n") is answered
    assert server.hooks.statuses == ([502] if answered else [])
    assert client.closing is (phase not in (Phase.NEW, Phase.CLOSED))  # closed already, or nothing to close
    _close(conn)


@pytest.mark.parametrize("phase", list(Phase), ids=lambda p: p.value)
async def test_an_upstream_opened_late_is_taken_only_while_connecting(phase: Phase) -> None:
    """An upstream that opens in any phase but CONNECTING (client gone or closing) is aborted at once."""
    conn, _server, client = await connection_in(phase)
    upstream = deliver(conn, Event.UPSTREAM_OPEN)
    assert upstream is not None
    assert upstream.aborted is (phase is not Phase.CONNECTING)
    if phase is Phase.CONNECTING:
        assert bytes(upstream.written) == REQUEST  # the pending bytes went out first
        assert client.written == b""
    _close(conn)


async def test_draining_closes_after_the_last_answer() -> None:
    """`drain` with a request awaiting its answer keeps the phase; the answer then closes the client."""
    conn, _server, client = await connection_in(Phase.OPEN)
    conn.drain()
    assert (conn.phase, client.closing) == (Phase.OPEN, False)
    conn.upstream_data(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    await asyncio.sleep(0)
    assert (conn.phase, client.closing) == (Phase.CLOSING, True)
    _close(conn)
