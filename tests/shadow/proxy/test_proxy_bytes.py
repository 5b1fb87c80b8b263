"""Proxy mode relays bytes, not messages: raw bytes compared on both sides of the proxy.

A tap (a plain TCP forwarder) sits in front of the stand-in upstream and records, per connection,
every byte the upstream received and every byte it sent. Each request of the table is sent as raw
bytes (``Host``, ``Connection: keep-alive``, ``Keep-Alive``, and for request bodies both
``Content-Length`` and ``Transfer-Encoding: chunked``), pipelined with a second request that asks to
close, and the client reads to EOF, undecoded. Through the proxy, the upstream must receive exactly the
bytes the client sent, and the client must receive exactly the bytes the upstream sent, which are also
the bytes a client talking to the upstream directly receives. Both relay modes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

from shadow.intake.supervisor import running_proxy, running_proxy_process
from tests.shadow.harness import running_sidecar, serve, settings_for, ticket_type, write_catalog
from tests.shadow.proxy.harness import REQUESTS, without_dates
from tests.shadow.upstream import upstream_app

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

READ_TIMEOUT_S = 60.0  # a safety net only: every read ends at EOF
CHUNK = 65_536
CLOSER = b"GET /empty HTTP/1.1\r\nHost: router.internal:8080\r\nConnection: close\r\n\r\n"


@dataclass
class Tapped:
    """One connection through the tap: bytes towards the upstream, and back."""

    sent_up: bytearray = field(default_factory=bytearray)
    sent_down: bytearray = field(default_factory=bytearray)
    done: asyncio.Event = field(default_factory=asyncio.Event)


class Tap:
    """A TCP forwarder in front of ``upstream`` that records each connection's bytes both ways."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.connections: list[Tapped] = []
        self.port = 0

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, seen: bytearray) -> None:
        while data := await reader.read(CHUNK):
            seen += data
            writer.write(data)
            await writer.drain()
        with contextlib.suppress(OSError):
            writer.write_eof()

    async def _handle(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        tapped = Tapped()
        self.connections.append(tapped)
        up_r, up_w = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        try:
            await asyncio.gather(self._pipe(client_r, up_w, tapped.sent_up),
                                 self._pipe(up_r, client_w, tapped.sent_down))
        finally:
            for writer in (up_w, client_w):
                writer.close()
                with contextlib.suppress(OSError):
                    await writer.wait_closed()
            tapped.done.set()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[str]:
        """Serve on a loopback port; yields the tap's URL."""
        server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        async with server:
            yield f"http://127.0.0.1:{self.port}"


def raw_request(method: str, path: str, kwargs: dict[str, Any], *, chunked: bool) -> bytes:
    """The table's request as the bytes a client writes (hop-by-hop headers included)."""
    head = [f"{method} {path} HTTP/1.1", "Host: router.internal:8080", "User-Agent: raw-client/1",
            "Connection: keep-alive", "Keep-Alive: timeout=30, max=10"]
    head += [f"{k}: {v}" for k, v in kwargs.get("headers", {}).items()]
    body = json.dumps(kwargs["json"]).encode() if "json" in kwargs else kwargs.get("data")
    if "json" in kwargs:
        head.append("Content-Type: application/json")
    if body is None:
        return "\r\n".join(head).encode() + b"\r\n\r\n"
    if not chunked:
        return "\r\n".join([*head, f"Content-Length: {len(body)}"]).encode() + b"\r\n\r\n" + body
    pieces = [body[i:i + CHUNK] for i in range(0, len(body), CHUNK)]
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces)
    return "\r\n".join([*head, "Transfer-Encoding: chunked"]).encode() + b"\r\n\r\n" + chunks + b"0\r\n\r\n"


async def exchange(port: int, data: bytes) -> bytes:
    """Write ``data`` on a fresh connection and read every byte until the server closes it."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        await writer.drain()
        return await asyncio.wait_for(reader.read(), READ_TIMEOUT_S)
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


CASES = [(m, p, kw, chunked) for m, p, kw in REQUESTS
         for chunked in ([False, True] if "json" in kw or "data" in kw else [False])]


@pytest.mark.parametrize("mode", ["process", "in_process"])
async def test_every_request_crosses_the_proxy_byte_for_byte(mode: str, scorer_url: str,
                                                             tmp_path: Path) -> None:
    """Upstream receives the client's exact bytes; the client receives the upstream's exact bytes.

    For every request of the proxy table (bodies sent both with Content-Length and chunked), the
    response through the proxy also equals, byte for byte, the response a direct client receives.
    """
    async with serve(upstream_app()) as upstream:
        tap = Tap(int(upstream.rsplit(":", 1)[1]))
        async with tap.running() as tap_url:
            catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url)})
            settings = settings_for(tmp_path, catalog, upstream_url=tap_url, proxy_port=0)
            async with running_sidecar(settings) as (_api, core):
                run = running_proxy_process if mode == "process" else running_proxy
                async with run(settings, core) as proxy_url:
                    proxy_port = int(proxy_url.rsplit(":", 1)[1])
                    for method, path, kwargs, chunked in CASES:
                        sent = raw_request(method, path, kwargs, chunked=chunked) + CLOSER
                        direct = await exchange(tap.port, sent)
                        await tap.connections[-1].done.wait()
                        proxied = await exchange(proxy_port, sent)
                        seen = tap.connections[-1]
                        await seen.done.wait()
                        where = f"{method} {path} chunked={chunked}"
                        assert bytes(seen.sent_up) == sent, f"{where}: the upstream got other bytes"
                        assert proxied == bytes(seen.sent_down), f"{where}: the client got other bytes"
                        # byte for byte but the Date an error page is stamped with (a second may pass)
                        assert without_dates(proxied) == without_dates(direct), f"{where}: differs"
                        assert proxied.count(b"HTTP/1.1 ") == 2, where  # the answer, then the closer's
