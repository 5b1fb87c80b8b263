"""One client connection of the relay and the upstream connection paired with it, as a state machine.

`Connection` writes bytes on as they arrive, frames a copy of each direction (`shadow.proxy.framing`)
to pair every request with its response, and reports answered exchanges to its server's hooks. The two
`asyncio.Protocol` sides (`shadow.proxy.sides`) only forward events to it. What it holds for mirroring
is charged to the relay's budget (`shadow.proxy.held`) and given back whichever way it ends.

Its `Phase` moves only through `shadow.proxy.states.TRANSITIONS`, one `Event` at a time, and each event
has one method here that owns its transition (`_move` is the only writer of ``phase``)::

    NEW --client_data--> CONNECTING --upstream_open--> OPEN --upstream_data--> RELAYED
     |                       |                          |                         |
     +-- client_eof, close, abort, upstream_failed, upstream_lost (as listed) ----+--> CLOSING
    any phase --client_lost--> CLOSED

Two facts stay beside the phase, since a connection in any live phase may carry them: ``draining``
(the server is closing: close once no request awaits an answer) and ``half_closed`` (the client sent
its EOF: it is passed on once the upstream is open). Reading pauses while the pending bytes
are over the budget (``paused``).

It stays one file (past the house's ~350 lines): the event methods share the attributes grouped in
``__init__`` and each owns its whole transition, so split they would be read across files.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections import deque
from typing import TYPE_CHECKING, Protocol
from urllib.parse import unquote

from shadow.errors import GatewayTimeout, RequestError
from shadow.proxy.framing import Framer, Message
from shadow.proxy.held import Charges
from shadow.proxy.sides import UpstreamSide
from shadow.proxy.states import Event, Phase, next_phase

if TYPE_CHECKING:
    from collections.abc import Callable

    from shadow.proxy.held import HeldBytes

COPIED_PER_CONNECTION = 4  # requests awaiting an answer whose bodies are copied; pipelined beyond: not


class ConnectionLimits(Protocol):
    """The settings a connection reads (`shadow.proxy.relay.ProxyConfig` has them)."""

    @property
    def keep_bytes(self) -> int: ...  # noqa: D102

    @property
    def read_timeout_s(self) -> float: ...  # noqa: D102


class ProxyHooks(Protocol):
    """Where the relay reports: answered requests, exchanges to mirror or not, connections refused."""

    def answered(self, status: int) -> None:
        """One response went to the client (or a 502/504 in place of one)."""

    def exchange(self, request: Message, response: Message) -> None:
        """A finished exchange on a claimed route, after its response's bytes were written."""

    def unmirrored(self, reason: str, n: int = 1) -> None:
        """Requests on a claimed route that will not be mirrored, and why."""

    def refused(self, reason: str) -> None:
        """A client connection closed on arrival, unserved (``connection_cap``)."""

    def dropped(self, reason: str, request: Message) -> None:
        """An exchange on a claimed route the relay had no room for: counted per route (``drops``)."""


class Server(Protocol):
    """What a connection needs of the server that accepted it (`shadow.proxy.relay.ProxyServer`)."""

    @property
    def config(self) -> ConnectionLimits: ...  # noqa: D102

    @property
    def hooks(self) -> ProxyHooks: ...  # noqa: D102

    @property
    def held(self) -> HeldBytes: ...  # noqa: D102

    def claimed(self, request: Message) -> bool:
        """Whether a catalog route claims this request."""

    def admit(self, conn: Connection) -> bool:
        """Count the connection in; False over the connection cap."""

    def release(self, conn: Connection) -> None:
        """Count the connection out."""

    async def open_upstream(self, side: Callable[[], asyncio.Protocol]) -> asyncio.Transport:
        """A new upstream connection; raises `RequestError` (502/504) when it cannot be had."""


def _error_response(error: RequestError) -> bytes:
    """A complete response carrying ``error``'s JSON wire form; it closes the connection."""
    body = json.dumps(error.to_json()).encode()
    reason = {502: "Bad Gateway", 504: "Gateway Timeout"}[error.status]
    head = (f"HTTP/1.1 {error.status} {reason}\r\nContent-Type: application/json; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n")
    return head.encode("latin-1") + body


def request_path(target: str) -> str:
    """The decoded path of a request target (``/a%20b?x=1`` -> ``/a b``)."""
    path = target.split("?", 1)[0]
    return unquote(path) if "%" in path else path


class Connection:
    """One client connection and the upstream connection paired with it (see the module docstring)."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.loop = asyncio.get_running_loop()
        # where it stands: only `_move` writes the phase
        self.phase = Phase.NEW
        self.draining = False  # the server is closing: close once no request awaits an answer
        self.half_closed = False  # the client sent EOF: pass it on once the upstream is open
        # the two transports, and the task opening the upstream
        self.client: asyncio.Transport | None = None
        self.upstream: asyncio.Transport | None = None
        self.connecting: asyncio.Task[None] | None = None
        # pending bytes: read from the client before the upstream opened
        self.pending: list[bytes] = []
        self.paused = False  # reading paused: the pending bytes did not fit in the budget
        # pairing requests with responses, and what is charged for their copies
        keep = server.config.keep_bytes
        self.requests: deque[Message] = deque()  # framed requests awaiting their response, in order
        self.requests_framer = Framer("request", keep, on_head=self._request_head)
        self.responses_framer = Framer("response", keep, request_method=self._answered_method,
                                       on_head=self._response_head, on_message=self._answered)
        self.unframed_requests: list[bytes] = []  # relayed this turn, framed on the next
        self.unframed_responses: list[bytes] = []
        self.charges = Charges(server.held)  # this connection's share of the relay's held bytes
        # clocks: the read timeout's timer, and the idle timeout's marks (`idle_since`)
        self.timer: asyncio.TimerHandle | None = None
        self.last_io = self.loop.time()  # when a byte last went either way
        self.waiting_since = self.last_io  # when the last answer went (or the connection was made)

    def _move(self, event: Event) -> Phase:
        """Take ``event``'s transition (`TRANSITIONS`); return the phase it left."""
        before = self.phase
        self.phase = next_phase(before, event)
        return before

    # client side -------------------------------------------------------------------------------------

    def client_connected(self, transport: asyncio.Transport) -> None:
        """Pair the client's transport with this connection (or refuse it, over the connection cap)."""
        self.client = transport
        if not self.server.admit(self):
            transport.abort()
            self.server.hooks.refused("connection_cap")
            return
        _nodelay(transport)

    def client_data(self, data: bytes) -> None:
        """Relay client bytes upstream (pending while it opens); frame a copy."""
        before = self._move(Event.CLIENT_DATA)
        if self.upstream is not None:
            self.upstream.write(data)
        elif self.phase is Phase.CONNECTING:
            self.pending.append(data)
            if before is Phase.NEW:
                self.connecting = self.loop.create_task(self._connect())
            if not self.charges.charge_pending(len(data)) and self.client is not None:
                self.paused = True  # pending anyway (it was read), uncharged: one read at most
                self.client.pause_reading()
        self.last_io = self.loop.time()
        if not self.unframed_requests:  # framed on the next turn: the bytes go out first
            self.loop.call_soon(self._frame_requests)
        self.unframed_requests.append(data)

    def client_eof(self) -> None:
        """The client half-closed: pass the EOF on, or close now if it never sent a byte."""
        self.half_closed = True
        if self._move(Event.CLIENT_EOF) is Phase.NEW and self.client is not None:  # nothing to answer
            self.client.close()
        elif self.upstream is not None and self.upstream.can_write_eof():
            self.upstream.write_eof()

    def client_lost(self) -> None:
        """The client is gone: close the upstream side."""
        self._frame_requests()  # what was relayed before the client left is still paired and mirrored
        self._frame_responses()
        self._move(Event.CLIENT_LOST)
        self.server.release(self)
        if self.requests:
            self._unmirrored("client_gone")
        self.pending.clear()
        self.charges.release_all()
        if self.connecting is not None:
            self.connecting.cancel()
        if self.upstream is not None:
            self.upstream.abort()
        self._disarm()

    # upstream side -----------------------------------------------------------------------------------

    async def _connect(self) -> None:
        try:
            transport = await self.server.open_upstream(lambda: UpstreamSide(self))
        except RequestError as exc:
            self.upstream_failed(exc)
            return
        self.upstream_open(transport)

    def upstream_open(self, transport: asyncio.Transport) -> None:
        """The upstream accepted: write the pending bytes (and the client's EOF) to it."""
        client = self.client
        if self.phase is not Phase.CONNECTING or client is None or client.is_closing():
            transport.abort()  # the client went, or is being closed, meanwhile
            return
        self._move(Event.UPSTREAM_OPEN)
        self.upstream = transport
        _nodelay(transport)
        transport.writelines(self.pending)
        self.pending.clear()
        self.charges.release_pending()
        if self.paused:
            self.paused = False
            client.resume_reading()
        if self.half_closed and transport.can_write_eof():
            transport.write_eof()

    def upstream_data(self, data: bytes) -> None:
        """Relay upstream bytes to the client; frame a copy."""
        client = self.client
        if client is None:
            return
        self._move(Event.UPSTREAM_DATA)
        client.write(data)
        self.last_io = self.loop.time()
        if not self.unframed_responses:  # framed (and mirrored) on the next turn: the bytes go out first
            self.loop.call_soon(self._frame_responses)
        self.unframed_responses.append(data)

    def upstream_lost(self) -> None:
        """The upstream is gone: close the client side after what is buffered for it."""
        self._frame_requests()
        self._frame_responses()
        self.responses_framer.eof()
        if self.requests:  # closed without answering them: the client sees the close, as it would directly
            self._unmirrored("upstream_closed")
        self._move(Event.UPSTREAM_LOST)
        self.upstream = None
        if self.client is not None:
            self.client.close()

    def upstream_failed(self, error: RequestError) -> None:
        """No upstream answer will come: answer 502/504 if nothing was relayed yet, else close."""
        self._disarm()
        before = self._move(Event.UPSTREAM_FAILED)
        client = self.client
        live = before in (Phase.CONNECTING, Phase.OPEN, Phase.RELAYED)
        if not live or client is None or client.is_closing():
            return  # already closing
        if before is not Phase.RELAYED:  # after a relayed byte a 502/504 could be read as the next answer
            client.write(_error_response(error))
            self.server.hooks.answered(error.status)
        self._unmirrored("upstream_failed")
        client.close()
        if self.upstream is not None:
            self.upstream.abort()

    # the server's side: expiry, shutdown -------------------------------------------------------------

    def idle_since(self) -> float | None:
        """Since when nothing awaits an answer (a head trickling in does not count); None while one does."""
        if self.requests:
            return None  # the upstream's read timeout applies
        return self.last_io if self.requests_framer.off is not None else self.waiting_since

    def drain(self) -> None:
        """The server is closing: close now if no request awaits an answer, else after the last one."""
        self.draining = True
        if not self.requests:
            self.close()

    def close(self) -> None:
        """Close the client after its pending writes (the upstream follows)."""
        self._move(Event.CLOSE)
        if self.client is not None:
            self.client.close()

    def abort(self) -> None:
        """Close both sides now."""
        self._move(Event.ABORT)
        if self.client is not None:
            self.client.abort()
        if self.upstream is not None:
            self.upstream.abort()

    # framing: pairing requests with responses, copies for the mirror ---------------------------------

    def _answered_method(self) -> str | None:
        return self.requests[0].method if self.requests else None

    def _request_head(self, request: Message) -> None:
        """Pair it; copy its body only for a claimed route, a few pipelined at once, within the budget."""
        self.requests.append(request)
        keep = self.server.config.keep_bytes
        copy = self.server.claimed(request) and len(self.requests) <= COPIED_PER_CONNECTION
        self.requests_framer.keep = keep if copy and self.charges.request(request, keep) else 0

    def _response_head(self, response: Message) -> None:
        request, keep = (self.requests[0] if self.requests else None), self.server.config.keep_bytes
        charges = self.charges
        copy = request is not None and self.server.claimed(request) and id(request) not in charges.starved
        self.responses_framer.keep = keep if copy and charges.response_for(request, response, keep) else 0

    def _frame_requests(self) -> None:
        chunks, self.unframed_requests = self.unframed_requests, []
        if self.phase is Phase.CLOSED:  # the client left before this turn: nothing to pair or time out
            return
        before, framer = len(self.requests), self.requests_framer
        for data in chunks:
            if framer.off is not None:
                break
            framer.feed(data)
            if framer.off is not None and framer.off != "upgrade":
                self.server.hooks.unmirrored(framer.off)
        if framer.off is not None:  # the copy of a body still arriving was dropped with the framer
            for request in self.requests:
                if not request.complete:
                    self.charges.release(request)
        if len(self.requests) > before and self.timer is None:
            self._arm(self.server.config.read_timeout_s)

    def _frame_responses(self) -> None:
        chunks, self.unframed_responses = self.unframed_responses, []
        framer = self.responses_framer
        for data in chunks:
            framer.feed(data)  # each completed response goes to `_answered` before the next is framed
        if framer.off is not None and (self.requests or self.charges.response):
            self._unmirrored(framer.off)

    def _answered(self, response: Message) -> None:
        hooks = self.server.hooks
        hooks.answered(response.status)
        if not self.requests:
            return
        request = self.requests.popleft()
        starved = self.charges.release(request)
        self.charges.release_response()
        if not self.server.claimed(request):
            pass
        elif starved:  # no room in the relay's budget for a copy: relayed, not mirrored
            hooks.dropped("relay_memory", request)
        elif not request.complete:  # answered before its body was all sent (e.g. a 413)
            hooks.unmirrored("answered_early")
        else:
            hooks.exchange(request, response)
        if not self.requests:
            self._disarm()
            self.waiting_since = self.loop.time()
            if self.draining:
                self.close()

    def _unmirrored(self, reason: str) -> None:
        claimed = sum(map(self.server.claimed, self.requests))
        if claimed:
            self.server.hooks.unmirrored(reason, claimed)
        for request in self.requests:
            self.charges.release(request)
        self.charges.release_response()
        self.requests.clear()
        self._disarm()

    # the read timeout --------------------------------------------------------------------------------

    def _arm(self, delay: float) -> None:
        self.timer = self.loop.call_later(delay, self._check_timeout)

    def _disarm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _check_timeout(self) -> None:
        self.timer = None
        if not self.requests:
            return
        limit = self.server.config.read_timeout_s
        idle = self.loop.time() - self.last_io
        if idle < limit:
            self._arm(limit - idle)
            return
        self.upstream_failed(GatewayTimeout(f"upstream sent nothing for {limit:g} s"))


def _nodelay(transport: asyncio.BaseTransport) -> None:
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
