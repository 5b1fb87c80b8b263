"""The relay: listens for production traffic and relays it byte for byte to the upstream.

Each client connection is paired with one upstream connection (`shadow.proxy.connection`). Bytes are
written on as they arrive, in both directions, before anything looks at them, so status, headers, body,
chunking, streaming, 100-continue, pipelining and protocol upgrades (WebSocket, CONNECT) pass through
unchanged. A `Framer` per direction follows the same bytes to find each request and its response; only
when a response is complete, and after its last byte was written to the client, is the pair handed to
the `ProxyHooks`. Nothing comes back: there is no code path from a proposal to a response.

Where no upstream answer exists, the client gets what a reverse proxy sends: a JSON 502 when the upstream
cannot be reached, a JSON 504 when it does not answer within ``SHADOW_UPSTREAM_READ_TIMEOUT_S`` (or the
connection is closed once any upstream byte was relayed on it: the proxy never writes a byte the upstream
did not send on a connection that has relayed a response).

This module runs in the relay process: it imports framing and errors, never the catalog, the mirror or
the record store. It sees each connection through `Relayed` only (expiry, drain, close, abort); the
connection sees it through `connection.Server`.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from contracts.tasks import stop_tasks
from shadow.errors import BadGateway, GatewayTimeout, ShadowError
from shadow.proxy.connection import Connection
from shadow.proxy.held import HeldBytes
from shadow.proxy.hooks import ProxyHooks, Relayed, request_path
from shadow.proxy.sides import ClientSide

if TYPE_CHECKING:
    import socket
    from collections.abc import Callable

    from shadow.proxy.framing import Message


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


@dataclass(frozen=True, slots=True)
class ProxyConfig:
    """What the relay needs (no secrets, no catalog: it runs in its own process in production)."""

    upstream: Upstream
    connect_timeout_s: float
    read_timeout_s: float
    keep_bytes: int
    routes: frozenset[tuple[str, str]]
    """(METHOD, path) pairs the catalog claims; only their exchanges are handed to the mirror."""
    idle_timeout_s: float = 60.0
    """A connection with no request awaiting an answer this long is closed (idle, or a head trickling)."""
    max_connections: int = 4096
    """Client connections at once; beyond, a new one is closed at once."""
    held_bytes: int = 64 * 1024 * 1024
    """Bytes held for mirroring, relay-wide (`shadow.proxy.held`); beyond, copies are not made."""


__all__ = ["ProxyConfig", "ProxyHooks", "ProxyServer", "Relayed", "Upstream"]


class ProxyServer:
    """Listens for the production traffic and relays it; reports to ``hooks``."""

    def __init__(self, config: ProxyConfig, hooks: ProxyHooks) -> None:
        self.config = config
        self.hooks = hooks
        self.ssl = ssl.create_default_context() if config.upstream.tls else None
        self.connections: set[Relayed] = set()
        self.held = HeldBytes(config.held_bytes)
        """Bytes every connection holds for mirroring, against ``config.held_bytes``."""
        self.all_closed = asyncio.Event()
        self._server: asyncio.Server | None = None
        self._sweeper: asyncio.Task[None] | None = None

    async def start(self, host: str = "127.0.0.1", port: int = 0, sock: socket.socket | None = None) -> int:
        """Start listening (on ``host:port``, or on an already bound ``sock``); return the port."""
        loop = asyncio.get_running_loop()
        if sock is not None:
            self._server = await loop.create_server(lambda: ClientSide(Connection(self)), sock=sock,
                                                    backlog=1024)
        else:
            self._server = await loop.create_server(lambda: ClientSide(Connection(self)), host, port,
                                                    backlog=1024, reuse_address=True)
        self._sweeper = asyncio.create_task(self._sweep(), name="shadow-proxy-sweep")
        return int(self._server.sockets[0].getsockname()[1])

    async def _sweep(self) -> None:
        """Close expired connections (idle, or a head that never completes) a few times per timeout."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(min(1.0, self.config.idle_timeout_s / 4))
            now = loop.time()
            for conn in [c for c in self.connections if self._expired(c, now)]:
                conn.close()

    def _expired(self, conn: Relayed, now: float) -> bool:
        """No request awaiting an answer for the idle timeout (a head trickling in does not count)."""
        since = conn.idle_since()
        return since is not None and now - since > self.config.idle_timeout_s

    async def close(self, grace_s: float) -> None:
        """Stop accepting; close idle connections now and busy ones when done (or after ``grace_s``)."""
        if self._server is not None:
            self._server.close()
        await stop_tasks(self._sweeper)
        for conn in list(self.connections):
            conn.drain()
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

    def admit(self, conn: Relayed) -> bool:
        """Count a new client connection in; False over ``max_connections``."""
        if len(self.connections) >= self.config.max_connections:
            return False
        self.connections.add(conn)
        return True

    def release(self, conn: Relayed) -> None:
        """Count a client connection out (``all_closed`` once none is left)."""
        self.connections.discard(conn)
        if not self.connections:
            self.all_closed.set()

    async def open_upstream(self, side: Callable[[], asyncio.Protocol]) -> asyncio.Transport:
        """A new connection to the upstream; `BadGateway` or `GatewayTimeout` when it cannot be had."""
        up, limit = self.config.upstream, self.config.connect_timeout_s
        try:
            async with asyncio.timeout(limit):
                transport, _ = await asyncio.get_running_loop().create_connection(
                    side, up.host, up.port, ssl=self.ssl, server_hostname=up.host if up.tls else None)
        except TimeoutError as exc:
            raise GatewayTimeout(f"upstream {up.host}:{up.port} did not accept in {limit:g} s") from exc
        except OSError as exc:
            raise BadGateway(f"upstream {up.host}:{up.port}: {exc.strerror or exc}") from exc
        return transport


