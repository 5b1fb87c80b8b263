"""One client connection of the relay and the upstream connection paired with it, as a state machine.

`Connection` writes bytes on as they arrive, frames a copy of each direction (`shadow.proxy.framing`)
to pair every request with its response, and reports answered exchanges to its server's hooks
(`shadow.proxy.hooks`). The two `asyncio.Protocol` sides (`shadow.proxy.sides`) only forward events to
it. What it holds for mirroring is charged to the relay's budget (`shadow.proxy.held`) and given back
whichever way it ends.

Its state is a `shadow.proxy.states.ConnectionState`: the phase and the facts that steer what an event
does (``draining``, ``half_closed``, ``paused``), changed only by ``state.process(event)``, which
refuses an event its phase does not list (`shadow.errors.IllegalEvent`); `states` draws the moves.
Each event has one method here that delivers it first and then does what the move means, choosing by
the phase it left or entered; the transports are only the resources those choices act on.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections import deque
from typing import TYPE_CHECKING

from shadow.errors import GatewayTimeout, RequestError
from shadow.proxy.framing import Framer, Message
from shadow.proxy.held import Charges
from shadow.proxy.sides import UpstreamSide
from shadow.proxy.states import ConnectionState, Event, Phase

if TYPE_CHECKING:
    from shadow.proxy.hooks import Server

COPIED_PER_CONNECTION = 4  # requests awaiting an answer whose bodies are copied; pipelined beyond: not


def _error_response(error: RequestError) -> bytes:
    """A complete response carrying ``error``'s JSON wire form; it closes the connection."""
    body = json.dumps(error.to_json()).encode()
    reason = {502: "Bad Gateway", 504: "Gateway Timeout"}[error.status]
    head = (f"HTTP/1.1 {error.status} {reason}\r\nContent-Type: application/json; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n")
    return head.encode("latin-1") + body


class Connection:
    """One client connection and the upstream connection paired with it (see the module docstring)."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.loop = asyncio.get_running_loop()
        self.state = ConnectionState()  # the phase and the facts beside it: only `state.process` writes them
        # the two transports, and the task opening the upstream
        self.client: asyncio.Transport  # set by `client_connected`, asyncio's first call
        self.upstream: asyncio.Transport | None = None  # from upstream_open until upstream_lost
        self.connecting: asyncio.Task[None] | None = None
        self.pending: list[bytes] = []  # read from the client before the upstream opened
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
        before = self.state.process(Event.CLIENT_DATA)
        if self.state.phase is Phase.CONNECTING:
            self.pending.append(data)
            if before is Phase.NEW:
                self.connecting = self.loop.create_task(self._connect())
            if not self.charges.charge_pending(len(data)):
                self.state.process(Event.PAUSE)  # pending anyway (it was read), uncharged: one read at most
                self.client.pause_reading()
        elif self.upstream is not None:  # OPEN or RELAYED: the upstream is there
            self.upstream.write(data)
        self.last_io = self.loop.time()
        if not self.unframed_requests:  # framed on the next turn: the bytes go out first
            self.loop.call_soon(self._frame_requests)
        self.unframed_requests.append(data)

    def client_eof(self) -> None:
        """The client half-closed: pass the EOF on (when the upstream opens), or close if it sent nothing."""
        if self.state.process(Event.CLIENT_EOF) is Phase.NEW:  # nothing to answer
            self.client.close()
        elif self.upstream is not None and self.upstream.can_write_eof():  # OPEN or RELAYED
            self.upstream.write_eof()

    def client_lost(self) -> None:
        """The client is gone: close the upstream side."""
        self._frame_requests()  # what was relayed before the client left is still paired and mirrored
        self._frame_responses()
        self.state.process(Event.CLIENT_LOST)
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
        if self.client.is_closing():  # CLOSING, or the loop closed the client and its loss is on the way
            transport.abort()
            return
        resume = self.state.paused
        self.state.process(Event.UPSTREAM_OPEN)
        self.upstream = transport
        _nodelay(transport)
        transport.writelines(self.pending)
        self.pending.clear()
        self.charges.release_pending()
        if resume:
            self.client.resume_reading()
        if self.state.half_closed and transport.can_write_eof():
            transport.write_eof()

    def upstream_data(self, data: bytes) -> None:
        """Relay upstream bytes to the client; frame a copy."""
        self.state.process(Event.UPSTREAM_DATA)
        self.client.write(data)
        self.last_io = self.loop.time()
        if not self.unframed_responses:  # framed (and mirrored) on the next turn: the bytes go out first
            self.loop.call_soon(self._frame_responses)
        self.unframed_responses.append(data)

    def upstream_lost(self) -> None:
        """The upstream is gone: close the client side after what is buffered for it."""
        self.state.process(Event.UPSTREAM_LOST)
        self._frame_requests()
        self._frame_responses()
        self.responses_framer.eof()
        if self.requests:  # closed without answering them: the client sees the close, as it would directly
            self._unmirrored("upstream_closed")
        self.upstream = None
        self.client.close()

    def upstream_failed(self, error: RequestError) -> None:
        """No upstream answer will come: answer 502/504 if nothing was relayed yet, else close."""
        self._disarm()
        before = self.state.process(Event.UPSTREAM_FAILED)
        if before is Phase.CLOSING or self.client.is_closing():
            return  # already closing
        if before is not Phase.RELAYED:  # after a relayed byte a 502/504 could be read as the next answer
            self.client.write(_error_response(error))
            self.server.hooks.answered(error.status)
        self._unmirrored("upstream_failed")
        self.client.close()
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
        self.state.process(Event.DRAIN)
        if not self.requests:
            self.close()

    def close(self) -> None:
        """Close the client after its pending writes (the upstream follows)."""
        self.state.process(Event.CLOSE)
        self.client.close()

    def abort(self) -> None:
        """Close both sides now."""
        self.state.process(Event.ABORT)
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
        if self.state.phase is Phase.CLOSED:  # the client left before this turn: nothing to pair or time out
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
            if self.state.draining:
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
