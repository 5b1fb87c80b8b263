"""Proxy mode: a byte-for-byte relay in front of the production router; the mirror watches from the side.

Each client connection is paired with one upstream connection. Bytes are written on as they arrive, in
both directions, before anything looks at them, so status, headers, body, chunking, streaming, 100-continue,
pipelining and protocol upgrades (WebSocket, CONNECT) pass through unchanged. A `Framer` per direction
follows the same bytes to find each request and its response; only when a response is complete, and
after its last byte was written to the client, is the pair offered to the mirror. The mirror returns
nothing: there is no code path from a proposal (which exists only later, in a worker) to a response.

Where no upstream answer exists, the client gets what a reverse proxy sends: a JSON 502 when the upstream
cannot be reached, a JSON 504 when it does not answer within ``SHADOW_UPSTREAM_READ_TIMEOUT_S`` (or
the connection is closed when part of the answer was already sent).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import ssl
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, cast
from urllib.parse import unquote, urlsplit

from multidict import CIMultiDict

from shadow.errors import BadGateway, GatewayTimeout, RequestError, ShadowError
from shadow.http1 import Framer, Message
from shadow.keys import METRICS, RUNTIMES
from shadow.proxy_mirror import Exchange, mirror_exchange

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from aiohttp import web

    from shadow.metrics import Metrics
    from shadow.settings import ShadowSettings

log = logging.getLogger(__name__)

CONNECT_BUFFER = 1024 * 1024
"""Client bytes held while the upstream connection opens; reading pauses beyond this."""


@dataclass(frozen=True, slots=True)
class Upstream:
    """Where proxy mode forwards to: ``http://host:port`` or ``https://host:port``."""

    host: str
    port: int
    tls: bool

    @classmethod
    def parse(cls, url: str | None) -> Upstream:
        """Read ``SHADOW_UPSTREAM_URL``; a path is refused, since request targets are forwarded unchanged."""
        if not url:
            raise ShadowError("proxy mode needs SHADOW_UPSTREAM_URL (e.g. http://127.0.0.1:8000)")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ShadowError(f"SHADOW_UPSTREAM_URL: expected http://host:port or https://host:port, "
                              f"got {url!r}")
        if parts.path not in ("", "/") or parts.query or parts.fragment:
            raise ShadowError(f"SHADOW_UPSTREAM_URL: proxy mode forwards request targets unchanged, so the "
                              f"URL takes no path or query (got {url!r})")
        tls = parts.scheme == "https"
        return cls(parts.hostname, parts.port or (443 if tls else 80), tls)


def _error_response(error: RequestError) -> bytes:
    """A complete response carrying ``error``'s JSON wire form; it closes the connection."""
    body = json.dumps(error.to_json()).encode()
    reason = {502: "Bad Gateway", 504: "Gateway Timeout"}[error.status]
    head = (f"HTTP/1.1 {error.status} {reason}\r\nContent-Type: application/json; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n")
    return head.encode("latin-1") + body


@dataclass(frozen=True, slots=True)
class ProxyConfig:
    """What the relay needs (no secrets, no catalog: it runs in its own process in production)."""

    upstream: Upstream
    connect_timeout_s: float
    read_timeout_s: float
    keep_bytes: int
    routes: frozenset[tuple[str, str]]
    """(METHOD, path) pairs the catalog claims; only their exchanges are handed to the mirror."""

    @classmethod
    def from_settings(cls, settings: ShadowSettings, routes: frozenset[tuple[str, str]]) -> ProxyConfig:
        """The relay's part of the sidecar settings."""
        return cls(Upstream.parse(settings.upstream_url), settings.upstream_connect_timeout_s,
                   settings.upstream_read_timeout_s, settings.mirror_max_bytes, routes)


def catalog_routes(core: web.Application) -> frozenset[tuple[str, str]]:
    """The (METHOD, path) routes the catalog's decision types claim in proxy mode."""
    return frozenset((t.dtype.proxy.method.upper(), t.dtype.proxy.path)
                     for t in core[RUNTIMES].types.values() if t.dtype.proxy is not None)


class ProxyHooks(Protocol):
    """Where the relay reports: answered requests, exchanges to mirror, exchanges it could not mirror."""

    def answered(self, status: int) -> None:
        """One response went to the client (or a 502/504 in place of one)."""

    def exchange(self, request: Message, response: Message) -> None:
        """A finished exchange on a claimed route, after its response's bytes were written."""

    def unmirrored(self, reason: str, n: int = 1) -> None:
        """Requests on a claimed route that will not be mirrored, and why."""


class MirrorHooks:
    """The hooks of an in-process relay: the sidecar's own metrics and mirror, on its own loop."""

    def __init__(self, core: web.Application) -> None:
        self.core = core
        self.metrics: Metrics = core[METRICS]
        self._classes = {c: self.metrics.proxy_requests.labels(f"{c}xx") for c in range(1, 6)}

    def answered(self, status: int) -> None:
        """Count it in ``shadow_proxy_requests_total``."""
        counter = self._classes.get(status // 100)
        if counter is not None:
            counter.inc()

    def exchange(self, request: Message, response: Message) -> None:
        """Mirror it on the next loop turn, after the response's bytes were flushed."""
        asyncio.get_running_loop().call_soon(mirror_messages, self.core, request, response)

    def unmirrored(self, reason: str, n: int = 1) -> None:
        """Count them in ``shadow_proxy_unmirrored_total``."""
        self.metrics.proxy_unmirrored.labels(reason).inc(n)


def mirror_messages(core: web.Application, request: Message, response: Message) -> None:
    """Offer a finished exchange to the mirror; nothing it does can reach the (already sent) response."""
    method, target, _ = request.start
    path = request_path(target)
    exchange = Exchange(method, path, CIMultiDict(request.headers), request.body, response.status,
                        CIMultiDict(response.headers), response.body)
    try:
        mirror_exchange(core, exchange)
    except Exception:
        log.exception("mirroring %s %s failed", method, path)
        core[METRICS].proxy_unmirrored.labels("internal_error").inc()


def request_path(target: str) -> str:
    """The decoded path of a request target (``/a%20b?x=1`` -> ``/a b``)."""
    path = target.split("?", 1)[0]
    return unquote(path) if "%" in path else path


class ProxyServer:
    """Listens for the production traffic and relays it; reports to ``hooks``."""

    def __init__(self, config: ProxyConfig, hooks: ProxyHooks) -> None:
        self.config = config
        self.hooks = hooks
        self.ssl = ssl.create_default_context() if config.upstream.tls else None
        self.connections: set[_Connection] = set()
        self.all_closed = asyncio.Event()
        self._server: asyncio.Server | None = None

    async def start(self, host: str = "127.0.0.1", port: int = 0, sock: socket.socket | None = None) -> int:
        """Start listening (on ``host:port``, or on an already bound ``sock``); return the port."""
        loop = asyncio.get_running_loop()
        if sock is not None:
            self._server = await loop.create_server(lambda: _ClientSide(_Connection(self)), sock=sock,
                                                    backlog=1024)
        else:
            self._server = await loop.create_server(lambda: _ClientSide(_Connection(self)), host, port,
                                                    backlog=1024, reuse_address=True)
        return int(self._server.sockets[0].getsockname()[1])

    async def close(self, grace_s: float) -> None:
        """Stop accepting; close idle connections now and busy ones when done (or after ``grace_s``)."""
        if self._server is not None:
            self._server.close()
        for conn in list(self.connections):
            conn.closing = True
            if not conn.requests:
                conn.close()
        if self.connections:
            self.all_closed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.all_closed.wait(), grace_s)
        for conn in list(self.connections):
            conn.abort()
        if self._server is not None:
            await self._server.wait_closed()

    def claimed(self, request: Message) -> bool:
        """Whether a catalog route claims this request."""
        return (request.method.upper(), request_path(request.start[1])) in self.config.routes


class _Connection:
    """One client connection and the upstream connection paired with it."""

    def __init__(self, server: ProxyServer) -> None:
        self.server = server
        keep = server.config.keep_bytes
        self.client: asyncio.Transport | None = None
        self.upstream: asyncio.Transport | None = None
        self.connecting: asyncio.Task[None] | None = None
        self.held: list[bytes] = []
        self.held_bytes = 0
        self.eof_from_client = False
        self.requests: deque[Message] = deque()
        self.answering = False  # part of the current response already went to the client
        self.closing = False
        self.requests_framer = Framer("request", keep, on_head=self.requests.append)
        self.responses_framer = Framer("response", keep, request_method=self._answered_method,
                                       on_message=self._answered)
        self.last_io = 0.0
        self.timer: asyncio.TimerHandle | None = None
        self.loop = asyncio.get_running_loop()
        self.unframed_requests: list[bytes] = []
        self.unframed_responses: list[bytes] = []
        self.gone = False

    def _answered_method(self) -> str | None:
        return self.requests[0].method if self.requests else None

    # client side -------------------------------------------------------------------------------------

    def client_connected(self, transport: asyncio.Transport) -> None:
        self.client = transport
        self.server.connections.add(self)
        _nodelay(transport)

    def client_data(self, data: bytes) -> None:
        if self.upstream is not None:
            self.upstream.write(data)
        else:
            self.held.append(data)
            self.held_bytes += len(data)
            if self.connecting is None:
                self.connecting = self.loop.create_task(self._connect())
            if self.held_bytes > CONNECT_BUFFER and self.client is not None:
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
        if len(self.requests) > before and self.timer is None:
            self._arm(self.server.config.read_timeout_s)

    def client_eof(self) -> None:
        self.eof_from_client = True
        if self.upstream is not None and self.upstream.can_write_eof():
            self.upstream.write_eof()

    def client_lost(self) -> None:
        self._frame_requests()  # what was relayed before the client left is still paired and mirrored
        self._frame_responses()
        self.gone = True
        self.server.connections.discard(self)
        if not self.server.connections:
            self.server.all_closed.set()
        if self.requests:
            self._unmirrored("client_gone")
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
                    lambda: _UpstreamSide(self), up.host, up.port, ssl=self.server.ssl,
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
        if self.held_bytes > CONNECT_BUFFER:
            self.client.resume_reading()
        self.held_bytes = 0
        if self.eof_from_client and self.upstream.can_write_eof():
            self.upstream.write_eof()

    def upstream_data(self, data: bytes) -> None:
        client = self.client
        if client is None:
            return
        client.write(data)
        self.answering = True
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
        if framer.off is not None and self.requests:
            self._unmirrored(framer.off)

    def upstream_lost(self) -> None:
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
        if not self.server.claimed(request):
            pass
        elif not request.complete:  # answered before its body was all sent (e.g. a 413)
            hooks.unmirrored("answered_early")
        else:
            hooks.exchange(request, response)
        if not self.requests:
            self._disarm()
            if self.closing:
                self.close()

    def _unmirrored(self, reason: str) -> None:
        claimed = sum(map(self.server.claimed, self.requests))
        if claimed:
            self.server.hooks.unmirrored(reason, claimed)
        self.requests.clear()
        self._disarm()

    # failures, timeouts, shutdown --------------------------------------------------------------------

    def _fail(self, error: RequestError) -> None:
        """No upstream answer will come: answer 502/504 if nothing was sent yet, else close."""
        client = self.client
        self._disarm()
        if client is None or client.is_closing():
            return
        if not self.answering:
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
        if self.client is not None:
            self.client.close()

    def abort(self) -> None:
        if self.client is not None:
            self.client.abort()
        if self.upstream is not None:
            self.upstream.abort()


def _nodelay(transport: asyncio.BaseTransport) -> None:
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _Side(asyncio.Protocol):
    """One of the pair's two connections; when its writes back up, the other side stops reading."""

    def __init__(self, conn: _Connection) -> None:
        self.conn = conn

    def peer(self) -> asyncio.Transport | None:
        """The transport whose data this side writes out."""
        raise NotImplementedError

    def pause_writing(self) -> None:
        peer = self.peer()
        if peer is not None:
            peer.pause_reading()

    def resume_writing(self) -> None:
        peer = self.peer()
        if peer is not None:
            peer.resume_reading()


class _ClientSide(_Side):
    """The production client's connection."""

    def peer(self) -> asyncio.Transport | None:
        """The upstream: its answers are written to the client."""
        return self.conn.upstream

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.conn.client_connected(cast("asyncio.Transport", transport))

    def data_received(self, data: bytes) -> None:
        self.conn.client_data(data)

    def eof_received(self) -> bool:
        self.conn.client_eof()
        return True  # keep the connection open to send the answers

    def connection_lost(self, exc: Exception | None) -> None:  # noqa: ARG002  (asyncio's signature)
        self.conn.client_lost()


class _UpstreamSide(_Side):
    """The paired connection to the production router."""

    def peer(self) -> asyncio.Transport | None:
        """The client: its requests are written to the upstream."""
        return self.conn.client

    def data_received(self, data: bytes) -> None:
        self.conn.upstream_data(data)

    def eof_received(self) -> bool:
        return False  # close: the client connection is closed after its buffered bytes

    def connection_lost(self, exc: Exception | None) -> None:  # noqa: ARG002  (asyncio's signature)
        self.conn.upstream_lost()


@contextlib.asynccontextmanager
async def running_proxy(settings: ShadowSettings, core: web.Application,
                        port: int | None = None) -> AsyncIterator[str]:
    """Run the relay in this process, on this loop (tests; ``SHADOW_PROXY_PROCESS=false``); yield its URL."""
    server = ProxyServer(ProxyConfig.from_settings(settings, catalog_routes(core)), MirrorHooks(core))
    bound = await server.start(settings.host, port if port is not None else settings.proxy_port or 0)
    try:
        yield f"http://{settings.host}:{bound}"
    finally:
        await server.close(settings.shutdown_grace_s)

