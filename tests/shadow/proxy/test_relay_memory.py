"""The relay's held bytes stay within ``SHADOW_PROXY_HELD_BYTES`` whatever the connection count.

A real relay (in process, its own counters read directly) in front of a real upstream on loopback that
holds every claimed request until all of them have arrived, so every body copy is wanted at once. Each
client first sends an unclaimed request (its upstream connection is then open: no connect buffer), then
a large claimed POST. The budget fits three of the five bodies: those three are handed over, the other
two are relayed byte for byte and counted ``relay_memory``. A sixth client leaves while its request is
held: its bytes come back. Fails when a release point is removed (docs/development.md lists those
tried). With no budget at all, each claimed exchange reaches the records' ``drops`` as ``relay_memory``
(both relay modes), as ``handoff_full`` does (``test_handoff_drops.py``, whose client this reuses).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import socket
import struct
from typing import TYPE_CHECKING

import pytest

from shadow.intake.supervisor import running_proxy, running_proxy_process
from shadow.keys import METRICS
from shadow.proxy.relay import ProxyConfig, ProxyServer, Upstream
from tests.shadow.harness import read_rows, running_sidecar, settings_for, ticket_type, write_catalog
from tests.shadow.proxy.harness import N, claimed_client, threaded_upstream

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from shadow.proxy.framing import Message

BODY = 300 * 1024
BUDGET = 1024 * 1024  # three 300 KiB copies fit, a fourth does not
CLIENTS = 5
WAIT_S = 30.0  # a safety net only: every wait below ends on an event


class Recording:
    """`ProxyHooks` that keep what the relay reports."""

    def __init__(self) -> None:
        self.exchanges: list[tuple[Message, Message]] = []
        self.counts: dict[str, int] = {}
        self.drops: list[tuple[str, str]] = []

    def answered(self, status: int) -> None:
        """Not needed here."""

    def exchange(self, request: Message, response: Message) -> None:
        """Keep it."""
        self.exchanges.append((request, response))

    def unmirrored(self, reason: str, n: int = 1) -> None:
        """Count it."""
        self.counts[reason] = self.counts.get(reason, 0) + n

    def refused(self, reason: str) -> None:
        """Not needed here."""

    def dropped(self, reason: str, request: Message) -> None:
        """Keep it, and count it as unmirrored (as the real hooks do)."""
        self.drops.append((reason, request.start[1]))
        self.unmirrored(reason)


class SlowUpstream:
    """Answers ``/warm`` at once; holds each claimed POST until ``expected`` arrived, then answers it."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.arrived = 0
        self.all_arrived = asyncio.Event()
        self.one_arrived = asyncio.Event()
        self.sent: dict[str, bytes] = {}

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One connection: requests in order."""
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                fields = dict(line.split(": ", 1) for line in lines[1:] if line)
                body = await reader.readexactly(int(fields.get("Content-Length", "0")))
                if lines[0].startswith("GET /warm"):
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                    continue
                self.arrived += 1
                self.one_arrived.set()
                if self.arrived >= self.expected:
                    self.all_arrived.set()
                await self.all_arrived.wait()
                answer = json.dumps({"id": fields["X-Id"], "bytes": len(body),
                                     "sha256": hashlib.sha256(body).hexdigest()}).encode()
                raw = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                       b"Content-Length: %d\r\n\r\n" % len(answer)) + answer
                self.sent[fields["X-Id"]] = raw
                writer.write(raw)
                await writer.drain()
        writer.close()  # the relay's half-close arrived (or the connection failed): close ours


async def _client(port: int, ident: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A client whose upstream connection is open: one unclaimed request answered."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /warm HTTP/1.1\r\nHost: router\r\n\r\n")
    assert await reader.readexactly(40) == b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    body = bytes([ord(ident[-1])]) * BODY
    writer.write(b"POST /tickets HTTP/1.1\r\nHost: router\r\nX-Id: %s\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % (ident.encode(), len(body)) + body)
    return reader, writer


async def _until(condition: Callable[[], bool]) -> None:
    """Wait (polling the relay's counters, which have no event) until ``condition()`` holds."""
    async with asyncio.timeout(WAIT_S):
        while not condition():  # noqa: ASYNC110  (no event to wait on: the relay's counters are plain ints)
            await asyncio.sleep(0.01)


async def test_held_bytes_stay_in_the_budget_and_come_back() -> None:
    """Large claimed bodies on several connections to a slow upstream: bounded, relayed, counted, freed."""
    upstream = SlowUpstream(expected=CLIENTS + 1)  # the leaver's request is held until it left
    up_server = await asyncio.start_server(upstream.handle, "127.0.0.1", 0)
    up_port = up_server.sockets[0].getsockname()[1]
    hooks = Recording()
    config = ProxyConfig(Upstream("127.0.0.1", up_port, tls=False), 5.0, WAIT_S, BUDGET,
                         frozenset({("POST", "/tickets")}), held_bytes=BUDGET)
    relay = ProxyServer(config, hooks)
    port = await relay.start()
    try:
        # a client that leaves while its copy is held: its bytes come back
        _, leaver = await _client(port, "leaver")
        async with asyncio.timeout(WAIT_S):
            await upstream.one_arrived.wait()
        await _until(lambda: relay.held.held == BODY)
        sock = leaver.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        leaver.transport.abort()  # a reset: gone, not half-closed (a half-close still waits for its answer)
        await _until(lambda: len(relay.connections) == 0)
        assert relay.held.held == 0
        assert hooks.counts == {"client_gone": 1}

        # five at once, the upstream answering none until all arrived (the leaver's counts: six)
        clients = [await _client(port, f"c{i}") for i in range(CLIENTS)]
        async with asyncio.timeout(WAIT_S):
            await upstream.all_arrived.wait()
            answers = [await r.readexactly(len(upstream.sent[f"c{i}"])) for i, (r, _) in enumerate(clients)]
        assert answers == [upstream.sent[f"c{i}"] for i in range(CLIENTS)]  # byte for byte, each its own
        assert relay.held.peak <= BUDGET
        assert relay.held.peak >= 3 * BODY
        assert len(hooks.exchanges) == 3
        assert all(req.body is not None and len(req.body) == BODY for req, _ in hooks.exchanges)
        assert hooks.drops == [("relay_memory", "/tickets")] * 2
        assert hooks.counts == {"client_gone": 1, "relay_memory": 2}
        assert relay.held.held == 0  # all answered
        for _, writer in clients:
            writer.close()
        await _until(lambda: len(relay.connections) == 0)
        assert relay.held.held == 0
    finally:
        await relay.close(0.1)
        up_server.close()


@pytest.mark.parametrize("mode", ["process", "in_process"])
async def test_relay_memory_drops_reach_the_records(mode: str, scorer_url: str, tmp_path: Path) -> None:
    """No budget at all (0 bytes): every claimed exchange is answered, none mirrored, each in ``drops``."""
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url)})
    statuses: list[int] = []
    running = running_proxy_process if mode == "process" else running_proxy
    with threaded_upstream() as upstream_url:
        settings = settings_for(tmp_path, catalog, upstream_url=upstream_url, proxy_port=0,
                                proxy_held_bytes=0)
        async with running_sidecar(settings) as (_api, core), running(settings, core) as url:
            await asyncio.to_thread(claimed_client, int(url.rsplit(":", 1)[1]), statuses)
            offered = core[METRICS].offered.labels("tickets", "default")
            await _until(lambda: offered._value.get() >= N)  # the relay's next counters frame
    assert statuses == [200] * N
    assert read_rows(tmp_path / "records", "proposals") == []
    counted = read_rows(tmp_path / "records", "drops")
    assert sum(r["dropped"] for r in counted if r["reason"] == "relay_memory") == N
    assert offered._value.get() == N


async def test_connect_bytes_past_the_budget_pause_reading_and_come_back() -> None:
    """An upstream that never accepts: the client's bytes fill the budget, reading pauses, all come back.

    The upstream listens with a full accept queue (backlog 0 and one connection never accepted): the
    relay's connect hangs until ``connect_timeout_s``, then it answers 504 and closes, and the bytes held
    for the client are given back.
    """
    stalled = socket.socket()
    stalled.bind(("127.0.0.1", 0))
    stalled.listen(0)
    filler = socket.create_connection(stalled.getsockname())
    hooks = Recording()
    config = ProxyConfig(Upstream("127.0.0.1", stalled.getsockname()[1], tls=False), 1.0, WAIT_S, BUDGET,
                         frozenset({("POST", "/tickets")}), held_bytes=BUDGET // 2)
    relay = ProxyServer(config, hooks)
    port = await relay.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        body = b"x" * (4 * BUDGET)
        head = b"POST /tickets HTTP/1.1\r\nHost: router\r\nContent-Length: %d\r\n\r\n" % len(body)
        writer.write(head + body)
        await _until(lambda: any(c.state.paused for c in relay.connections))
        assert 0 < relay.held.held <= BUDGET // 2
        async with asyncio.timeout(WAIT_S):  # the 504, or a reset: the relay closes with bytes unread
            with contextlib.suppress(ConnectionResetError):
                assert (await reader.read()).startswith(b"HTTP/1.1 504 Gateway Timeout\r\n")
        await _until(lambda: len(relay.connections) == 0)
        assert relay.held.held == 0
        assert relay.held.peak <= BUDGET // 2
        writer.close()
    finally:
        await relay.close(0.1)
        filler.close()
        stalled.close()


async def test_a_copy_stops_being_held_when_framing_stops() -> None:
    """A claimed chunked body cut by a chunk line the framer cannot read: its copy is given back at once.

    The request is still relayed and still awaits its answer (the upstream reads and never answers).
    """
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while await reader.read(65536):
                pass
        writer.close()

    upstream = await asyncio.start_server(silent, "127.0.0.1", 0)
    config = ProxyConfig(Upstream("127.0.0.1", upstream.sockets[0].getsockname()[1], tls=False), 5.0, WAIT_S,
                         BUDGET, frozenset({("POST", "/tickets")}), held_bytes=2 * BUDGET)
    relay = ProxyServer(config, Recording())
    port = await relay.start()
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST /tickets HTTP/1.1\r\nHost: router\r\nTransfer-Encoding: chunked\r\n\r\n"
                     b"4\r\nabcd\r\n")
        await _until(lambda: relay.held.held == BUDGET)  # chunked: the cap (connect bytes given back)
        writer.write(b"zz\r\n")  # not a chunk size: framing stops, the bytes flow on
        await _until(lambda: any(c.requests_framer.off for c in relay.connections))
        assert relay.held.held == 0
        assert [len(c.requests) for c in relay.connections] == [1]  # still awaiting its answer
        writer.close()
    finally:
        await relay.close(0.1)
        upstream.close()
