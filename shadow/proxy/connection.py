"""One client connection of the relay and the upstream connection paired with it.

`Connection` writes bytes on as they arrive, frames a copy of each direction (`shadow.proxy.framing`)
to pair every request with its response, and reports answered exchanges to the server's hooks. The two
`asyncio.Protocol` sides (`shadow.proxy.sides`) only forward events to it. What it holds for mirroring
is charged to the relay's budget (`shadow.proxy.held`) and given back whichever way it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections import deque
from typing import TYPE_CHECKING
from urllib.parse import unquote

from shadow.errors import BadGateway, GatewayTimeout, RequestError
from shadow.proxy.framing import Framer, Message
from shadow.proxy.held import Kept
from shadow.proxy.sides import UpstreamSide

if TYPE_CHECKING:
    from shadow.proxy.relay import ProxyServer

KEPT_PER_CONNECTION = 4  # requests awaiting an answer whose bodies are copied; pipelined beyond: not


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
    """One client connection and the upstream connection paired with it."""

    def __init__(self, server: ProxyServer) -> None:
        self.server = server
        keep = server.config.keep_bytes
        self.client: asyncio.Transport | None = None
        self.upstream: asyncio.Transport | None = None
        self.connecting: asyncio.Task[None] | None = None
        self.held: list[bytes] = []  # client bytes while connecting; reading pauses past the budget
        self.paused = False
        self.kept = Kept(server.held)  # what this connection charged to the relay's held-bytes budget
        self.eof_from_client = False
        self.requests: deque[Message] = deque()
        self.answering = False  # part of the current response already went to the client
        self.relayed = False  # an upstream byte went to the client: from then on only its bytes do
        self.closing = False
        self.requests_framer = Framer("request", keep, on_head=self._request_head)
        self.responses_framer = Framer("response", keep, request_method=self._answered_method,
                                       on_head=self._response_head, on_message=self._answered)
        self.last_io = self.waiting_since = asyncio.get_running_loop().time()
        self.timer: asyncio.TimerHandle | None = None
        self.loop = asyncio.get_running_loop()
        self.unframed_requests: list[bytes] = []
        self.unframed_responses: list[bytes] = []
        self.gone = False  # waiting_since: when the last answer went (or the connection was made)

    def _answered_method(self) -> str | None:
        return self.requests[0].method if self.requests else None

    def _request_head(self, request: Message) -> None:
        """Pair it; copy its body only for a claimed route, a few pipelined at once, within the budget."""
        self.requests.append(request)
        keep = self.server.config.keep_bytes
        copy = self.server.claimed(request) and len(self.requests) <= KEPT_PER_CONNECTION
        self.requests_framer.keep = keep if copy and self.kept.request(request, keep) else 0

    def _response_head(self, response: Message) -> None:
        request, keep = (self.requests[0] if self.requests else None), self.server.config.keep_bytes
        copy = request is not None and self.server.claimed(request) and id(request) not in self.kept.starved
        self.responses_framer.keep = keep if copy and self.kept.response_for(request, response, keep) else 0

    # client side -------------------------------------------------------------------------------------

    def client_connected(self, transport: asyncio.Transport) -> None:
        """Pair the client's transport with this connection (or refuse it, over the connection cap)."""
        self.client = transport
        if len(self.server.connections) >= self.server.config.max_connections:
            transport.abort()
            self.server.hooks.refused("connection_cap")
            return
        self.server.connections.add(self)
        _nodelay(transport)

    def client_data(self, data: bytes) -> None:
        """Relay client bytes upstream (held while connecting); frame a copy."""
        if self.upstream is not None:
            self.upstream.write(data)
        else:
            self.held.append(data)
            if self.connecting is None:
                self.connecting = self.loop.create_task(self._connect())
            if not self.kept.hold_connect(len(data)) and self.client is not None:
                self.paused = True  # held anyway (it was read), uncharged: one read at most
                self.client.pause_reading()
        self.last_io = self.loop.time()
        if not self.unframed_requests:  # framed on the next turn: the bytes go out first
            self.loop.call_soon(self._frame_requests)
        self.unframed_requests.append(data)

    def _frame_requests(self) -> None:
        chunks, self.unframed_requests = self.unframed_requests, []
        if self.gone:  # the client left before this turn: nothing to pair or time out
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
                    self.kept.release(request)
        if len(self.requests) > before and self.timer is None:
            self._arm(self.server.config.read_timeout_s)

    def client_eof(self) -> None:
        """The client half-closed: pass the EOF on, or close now if it never sent a byte."""
        self.eof_from_client = True
        if self.upstream is not None and self.upstream.can_write_eof():
            self.upstream.write_eof()
        elif self.connecting is None and self.client is not None:  # nothing sent, nothing to answer
            self.client.close()

    def client_lost(self) -> None:
        """The client is gone: close the upstream side."""
        self._frame_requests()  # what was relayed before the client left is still paired and mirrored
        self._frame_responses()
        self.gone = True
        self.server.connections.discard(self)
        if not self.server.connections:
            self.server.all_closed.set()
        if self.requests:
            self._unmirrored("client_gone")
        self.held.clear()
        self.kept.release_all()
        if self.connecting is not None:
            self.connecting.cancel()
        if self.upstream is not None:
            self.upstream.abort()
        self._disarm()

    # upstream side -----------------------------------------------------------------------------------

    async def _connect(self) -> None:
        config, up = self.server.config, self.server.config.upstream
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(config.connect_timeout_s):
                transport, _ = await loop.create_connection(
                    lambda: UpstreamSide(self), up.host, up.port, ssl=self.server.ssl,
                    server_hostname=up.host if up.tls else None)
        except TimeoutError:
            self._fail(GatewayTimeout(f"upstream {up.host}:{up.port} did not accept in "
                                      f"{config.connect_timeout_s:g} s"))
            return
        except OSError as exc:
            self._fail(BadGateway(f"upstream {up.host}:{up.port}: {exc.strerror or exc}"))
            return
        if self.client is None or self.client.is_closing():
            transport.abort()
            return
        self.upstream = transport
        _nodelay(self.upstream)
        self.upstream.writelines(self.held)
        self.held.clear()
        self.kept.release_connect()
        if self.paused:
            self.paused = False
            self.client.resume_reading()
        if self.eof_from_client and self.upstream.can_write_eof():
            self.upstream.write_eof()

    def upstream_data(self, data: bytes) -> None:
        """Relay upstream bytes to the client; frame a copy."""
        client = self.client
        if client is None:
            return
        client.write(data)
        self.answering = self.relayed = True
        self.last_io = self.loop.time()
        if not self.unframed_responses:  # framed (and mirrored) on the next turn: the bytes go out first
            self.loop.call_soon(self._frame_responses)
        self.unframed_responses.append(data)

    def _frame_responses(self) -> None:
        chunks, self.unframed_responses = self.unframed_responses, []
        framer = self.responses_framer
        for data in chunks:
            framer.feed(data)  # each completed response goes to `_answered` before the next is framed
        self.answering = not framer.idle
        if framer.off is not None and (self.requests or self.kept.response):
            self._unmirrored(framer.off)

    def upstream_lost(self) -> None:
        """The upstream is gone: fail or close the client side."""
        self._frame_requests()
        self._frame_responses()
        self.responses_framer.eof()
        if self.requests:  # closed without answering them: the client sees the close, as it would directly
            self._unmirrored("upstream_closed")
        self.upstream = None
        if self.client is not None:
            self.client.close()  # after what is buffered for it has been written

    def _answered(self, response: Message) -> None:
        hooks = self.server.hooks
        hooks.answered(response.status)
        if not self.requests:
            return
        request = self.requests.popleft()
        starved = self.kept.release(request)
        self.kept.release_response()
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
            if self.closing:
                self.close()

    def _unmirrored(self, reason: str) -> None:
        claimed = sum(map(self.server.claimed, self.requests))
        if claimed:
            self.server.hooks.unmirrored(reason, claimed)
        for request in self.requests:
            self.kept.release(request)
        self.kept.release_response()
        self.requests.clear()
        self._disarm()

    # failures, timeouts, shutdown --------------------------------------------------------------------

    def _fail(self, error: RequestError) -> None:
        """No upstream answer will come: answer 502/504 if nothing was sent yet, else close."""
        client = self.client
        self._disarm()
        if client is None or client.is_closing():
            return
        if not self.relayed:  # after a relayed response a 502/504 could be read as the next answer
            client.write(_error_response(error))
            self.server.hooks.answered(error.status)
        self._unmirrored("upstream_failed")
        client.close()
        if self.upstream is not None:
            self.upstream.abort()

    def _arm(self, delay: float) -> None:
        self.timer = asyncio.get_running_loop().call_later(delay, self._check_timeout)

    def _disarm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _check_timeout(self) -> None:
        self.timer = None
        if not self.requests:
            return
        limit = self.server.config.read_timeout_s
        idle = asyncio.get_running_loop().time() - self.last_io
        if idle < limit:
            self._arm(limit - idle)
            return
        self._fail(GatewayTimeout(f"upstream sent nothing for {limit:g} s"))

    def close(self) -> None:
        """Close both sides after pending writes."""
        if self.client is not None:
            self.client.close()

    def abort(self) -> None:
        """Close both sides now."""
        if self.client is not None:
            self.client.abort()
        if self.upstream is not None:
            self.upstream.abort()


def _nodelay(transport: asyncio.BaseTransport) -> None:
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
