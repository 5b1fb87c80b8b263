"""What a relay connection and its server see of each other, as small `Protocol`s; the path of a route.

`Server` is the relay server as a connection sees it (`shadow.proxy.relay.ProxyServer` is one): its
limits (`ConnectionLimits`), the hooks it reports to (`ProxyHooks`), the held-bytes budget, claims,
admission and the upstream. `Relayed` is a connection as the server sees it (expiry, drain, close,
abort; `shadow.proxy.connection.Connection` is one). `request_path` decodes a request target to the
path that routes are keyed by, alike in the relay (claims), the channel (drops per route) and the
sidecar (`shadow.intake`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol
from urllib.parse import unquote

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable

    from shadow.proxy.framing import Message
    from shadow.proxy.held import HeldBytes


def request_path(target: str) -> str:
    """The decoded path of a request target (``/a%20b?x=1`` -> ``/a b``)."""
    path = target.split("?", 1)[0]
    return unquote(path) if "%" in path else path


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


class Relayed(Protocol):
    """What the server needs of a connection (`shadow.proxy.connection.Connection` is one)."""

    def idle_since(self) -> float | None:
        """Since when nothing awaits an answer; None while a request does."""

    def drain(self) -> None:
        """Close once no request awaits an answer."""

    def close(self) -> None:
        """Close after pending writes."""

    def abort(self) -> None:
        """Close now."""


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

    def admit(self, conn: Relayed) -> bool:
        """Count the connection in; False over the connection cap."""

    def release(self, conn: Relayed) -> None:
        """Count the connection out."""

    async def open_upstream(self, side: Callable[[], asyncio.Protocol]) -> asyncio.Transport:
        """A new upstream connection; raises `RequestError` (502/504) when it cannot be had."""
