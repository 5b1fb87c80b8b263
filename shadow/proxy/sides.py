"""The two `asyncio.Protocol` sides of a relay connection: each only forwards events to its connection.

When one side's writes back up, the other side stops reading (and resumes when they drain). What a
side needs of its connection is stated here (`ClientEvents`, `UpstreamEvents`); `Connection`
(`shadow.proxy.connection`) is both.
"""

from __future__ import annotations

import asyncio
from typing import Protocol, cast


class _Peers(Protocol):
    @property
    def client(self) -> asyncio.Transport | None: ...

    @property
    def upstream(self) -> asyncio.Transport | None: ...


class ClientEvents(_Peers, Protocol):
    """What the client's side tells its connection."""

    def client_connected(self, transport: asyncio.Transport) -> None: ...  # noqa: D102
    def client_data(self, data: bytes) -> None: ...  # noqa: D102
    def client_eof(self) -> None: ...  # noqa: D102
    def client_lost(self) -> None: ...  # noqa: D102


class UpstreamEvents(_Peers, Protocol):
    """What the upstream's side tells its connection."""

    def upstream_data(self, data: bytes) -> None: ...  # noqa: D102
    def upstream_lost(self) -> None: ...  # noqa: D102


class _Side(asyncio.Protocol):
    """One of the pair's two connections; when its writes back up, the other side stops reading."""

    def __init__(self, conn: _Peers) -> None:
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


class ClientSide(_Side):
    """The production client's connection."""

    conn: ClientEvents

    def __init__(self, conn: ClientEvents) -> None:
        super().__init__(conn)

    def peer(self) -> asyncio.Transport | None:
        """The upstream: its answers are written to the client."""
        return self.conn.upstream

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """The client connected."""
        self.conn.client_connected(cast("asyncio.Transport", transport))

    def data_received(self, data: bytes) -> None:
        """Client bytes arrived."""
        self.conn.client_data(data)

    def eof_received(self) -> bool:
        """The client half-closed: keep the transport open to send the answers."""
        self.conn.client_eof()
        return True

    def connection_lost(self, exc: Exception | None) -> None:  # noqa: ARG002  (asyncio's signature)
        """The client connection closed."""
        self.conn.client_lost()


class UpstreamSide(_Side):
    """The paired connection to the production router."""

    conn: UpstreamEvents

    def __init__(self, conn: UpstreamEvents) -> None:
        super().__init__(conn)

    def peer(self) -> asyncio.Transport | None:
        """The client: its requests are written to the upstream."""
        return self.conn.client

    def data_received(self, data: bytes) -> None:
        """Upstream bytes arrived."""
        self.conn.upstream_data(data)

    def eof_received(self) -> bool:
        """Close: the client connection is closed after its buffered bytes."""
        return False

    def connection_lost(self, exc: Exception | None) -> None:  # noqa: ARG002  (asyncio's signature)
        """The upstream connection closed."""
        self.conn.upstream_lost()
