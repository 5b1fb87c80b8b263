"""Attacks on the proxy, each bounded in count, and the normal clients that must be served meanwhile.

Shared by ``test_proxy_soak.py`` (each attack beside normal clients: every normal request answered
with the upstream's bytes and mirrored, nothing of the attacker's recorded, no connection left behind)
and ``bench/proxy_soak.py`` (the normal clients' latency under each attack against none, in one run).

Every attack runs until it has done its count of work, or until ``stop`` is set for the ones that
hold connections (idle, slowloris): the caller sets it once the normal clients are done.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import aiohttp

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

NORMAL_TIMEOUT_S = 10.0
"""A normal request's whole allowance: a sanity bound only a hang breaks (latency is the bench's)."""


def _host_port(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").split(":")
    return host, int(port)


async def _close(writer: asyncio.StreamWriter) -> None:
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()


async def fin_without_data(url: str, _stop: asyncio.Event, n: int = 300) -> None:
    """Connect and close at once, ``n`` times (what a TCP health check does)."""
    for _ in range(n):
        _, writer = await asyncio.open_connection(*_host_port(url))
        await _close(writer)


async def idle(url: str, stop: asyncio.Event, n: int = 300) -> None:
    """Hold ``n`` connections that never send a byte, until ``stop``."""
    writers = [(await asyncio.open_connection(*_host_port(url)))[1] for _ in range(n)]
    await stop.wait()
    for writer in writers:
        await _close(writer)


async def slowloris(url: str, stop: asyncio.Event, n: int = 100) -> None:
    """``n`` connections trickling one header byte every 50 ms, never ending the head, until ``stop``."""
    writers = [(await asyncio.open_connection(*_host_port(url)))[1] for _ in range(n)]
    for writer in writers:
        writer.write(b"POST /route HTTP/1.1\r\nHost: prod\r\nX-Slow: ")
    while not stop.is_set():
        for writer in writers:
            if not writer.is_closing():
                writer.write(b"a")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.05)
    for writer in writers:
        await _close(writer)


async def byte_at_a_time_head(url: str, _stop: asyncio.Event, size: int = 60_000) -> None:
    """A head of ``size`` bytes written one byte per write (the quadratic-framing probe), then ended."""
    reader, writer = await asyncio.open_connection(*_host_port(url))
    head = b"GET /empty HTTP/1.1\r\nHost: prod\r\nX-Big: " + b"x" * size + b"\r\n\r\n"
    with contextlib.suppress(OSError, TimeoutError, asyncio.IncompleteReadError):
        for i in range(len(head)):  # the upstream may refuse the head (and close) before its end
            writer.write(head[i:i + 1])
            if i % 64 == 0:
                await writer.drain()
                await asyncio.sleep(0)
        async with asyncio.timeout(NORMAL_TIMEOUT_S):
            await reader.readuntil(b"\r\n\r\n")
    await _close(writer)


async def pipelined_unclaimed(url: str, _stop: asyncio.Event, n: int = 200) -> None:
    """``n`` pipelined 64 KiB bodies to a route no catalog type claims, in one write."""
    reader, writer = await asyncio.open_connection(*_host_port(url))
    body = b"z" * 65536
    one = b"POST /echo HTTP/1.1\r\nHost: prod\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    writer.write(one * n)
    with contextlib.suppress(OSError, TimeoutError, asyncio.IncompleteReadError):
        async with asyncio.timeout(NORMAL_TIMEOUT_S * 3):
            for _ in range(n):  # each answer: a head, then Content-Length bytes
                head = await reader.readuntil(b"\r\n\r\n")
                length = re.search(rb"(?i)\r\ncontent-length: *([0-9]+)", head)
                await reader.readexactly(int(length[1]) if length else 0)
    await _close(writer)


async def bare_lf_smuggling(url: str, _stop: asyncio.Event, n: int = 50) -> None:
    """``n`` connections each sending a bare-LF request with an attacker's decision, then a CRLF one."""
    for i in range(n):
        evil = json.dumps({"ticket_id": f"evil-{i}", "ticket": {"subject": "x"}}).encode()
        real = json.dumps({"ticket_id": f"evil-crlf-{i}", "ticket": {"subject": "x"}}).encode()
        reader, writer = await asyncio.open_connection(*_host_port(url))
        writer.write(b"POST /route HTTP/1.1\nHost: u\nContent-Type: application/json\n"
                     b"Content-Length: %d\n\n%s" % (len(evil), evil))
        writer.write(b"POST /route HTTP/1.1\r\nHost: u\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n%s" % (len(real), real))
        with contextlib.suppress(OSError, TimeoutError):
            async with asyncio.timeout(1.0):
                await reader.read(65536)
        await _close(writer)


ATTACKS: dict[str, Callable[[str, asyncio.Event], Awaitable[None]]] = {
    "fin_without_data": fin_without_data,
    "idle": idle,
    "slowloris": slowloris,
    "byte_at_a_time_head": byte_at_a_time_head,
    "pipelined_unclaimed": pipelined_unclaimed,
    "bare_lf_smuggling": bare_lf_smuggling,
}


@dataclass
class NormalResult:
    """What the normal clients saw."""

    latencies_ms: list[float] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)
    ticket_ids: list[str] = field(default_factory=list)


async def normal_clients(url: str, clients: int = 4, requests: int = 25, pace_s: float = 0.01,
                         prefix: str = "n") -> NormalResult:
    """``clients`` keep-alive clients, each posting ``requests`` decisions to ``/route``, paced."""
    result = NormalResult()
    timeout = aiohttp.ClientTimeout(total=NORMAL_TIMEOUT_S)

    async def one(c: int) -> None:
        async with aiohttp.ClientSession(timeout=timeout) as session:
            for i in range(requests):
                ticket = f"{prefix}-{c}-{i}"
                start = time.perf_counter()
                async with session.post(f"{url}/route",
                                        json={"ticket_id": ticket, "ticket": {"subject": "charged twice"}}
                                        ) as resp:
                    body = await resp.json()
                result.latencies_ms.append((time.perf_counter() - start) * 1000)
                result.ticket_ids.append(ticket)
                if resp.status != 200 or body.get("ticket_id") != ticket:
                    result.wrong.append(f"{ticket}: {resp.status} {body}")
                await asyncio.sleep(pace_s)

    await asyncio.gather(*(one(c) for c in range(clients)))
    return result


async def under_attack(url: str, attack: str | None, **normal: float | str) -> NormalResult:
    """Run the normal clients while ``attack`` (or none) runs; stop and await the attack after."""
    stop = asyncio.Event()
    task = asyncio.create_task(ATTACKS[attack](url, stop)) if attack else None
    try:
        await asyncio.sleep(0.2 if attack else 0)  # let the attack get going
        return await normal_clients(url, **normal)  # type: ignore[arg-type]
    finally:
        stop.set()
        if task is not None:
            await task
