"""Proxy claims no test showed before: ``100-continue``, a body too large, an early answer, ``CONNECT``.

Both relay modes. A request sent with ``Expect: 100-continue`` gets the upstream's interim ``100
Continue``, then its answer, and is mirrored like any other; a claimed request whose body is over
``SHADOW_MIRROR_MAX_BYTES`` is answered unchanged and counted as ``request_too_large``, never recorded.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING

import aiohttp
import pytest

from shadow.intake.supervisor import running_proxy, running_proxy_process
from tests.shadow.harness import read_rows, running_sidecar, settings_for, ticket_type, write_catalog
from tests.shadow.proxy.harness import proxy_stack, raw_exchange

if TYPE_CHECKING:
    from pathlib import Path


async def _counted(api: str, line: str) -> bool:
    """Whether ``/metrics`` shows ``line`` within 10 s (the relay process reports every 0.5 s)."""
    async with aiohttp.ClientSession() as session:
        for _ in range(100):
            async with session.get(api + "/metrics") as metrics:
                if line in await metrics.text():
                    return True
            await asyncio.sleep(0.1)
    return False


@pytest.mark.parametrize("mode", ["process", "in_process"])
async def test_expect_100_continue_gets_the_interim_answer_and_is_mirrored(
        mode: str, scorer_url: str, tmp_path: Path) -> None:
    """The head alone first; the body only after ``100 Continue``; then the answer; the decision recorded."""
    body = json.dumps({"ticket_id": "c-1", "ticket": {"subject": "charged twice"}}).encode()
    head = (b"POST /route HTTP/1.1\r\nHost: prod\r\nContent-Type: application/json\r\n"
            b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(body))
    async with proxy_stack(tmp_path, scorer_url, mode) as (_upstream, proxy, _api):
        host, port = proxy.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            writer.write(head)
            interim = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            assert interim.startswith(b"HTTP/1.1 100 Continue\r\n")
            writer.write(body)
            final = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            assert final.startswith(b"HTTP/1.1 200 ")
        finally:
            writer.close()
    assert [r["decision_id"] for r in read_rows(tmp_path / "records", "proposals")] == ["c-1"]


@pytest.mark.parametrize("mode", ["process", "in_process"])
async def test_a_claimed_body_over_the_mirror_cap_is_answered_and_counted(
        mode: str, scorer_url: str, tmp_path: Path) -> None:
    """4 KiB of state against a 1 KiB cap: production's answer unchanged, ``request_too_large``, no row."""
    data = {"ticket_id": "big-1", "ticket": {"subject": "x" * 4096}}
    async with proxy_stack(tmp_path, scorer_url, mode, mirror_max_bytes=1024) as (upstream, proxy, api), \
            aiohttp.ClientSession() as session:
        async with session.post(upstream + "/route", json=data) as direct:
            expected = (direct.status, await direct.read())
        async with session.post(proxy + "/route", json=data) as proxied:
            assert (proxied.status, await proxied.read()) == expected
        assert await _counted(api, 'shadow_proxy_unmirrored_total{reason="request_too_large"} 1.0')
    assert read_rows(tmp_path / "records", "proposals") == []


async def _early_upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Reads a request's head only, answers 413 at once and closes (as a server refusing a body does)."""
    await reader.readuntil(b"\r\n\r\n")
    writer.write(b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    await writer.drain()
    writer.close()


@pytest.mark.parametrize("mode", ["process", "in_process"])
async def test_an_answer_before_the_body_is_passed_on_and_counted_answered_early(
        mode: str, scorer_url: str, tmp_path: Path) -> None:
    """The upstream answers 413 after the head: the client gets it; ``answered_early``, no row."""
    server = await asyncio.start_server(_early_upstream, "127.0.0.1", 0)
    upstream = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url)})
    settings = settings_for(tmp_path, catalog, upstream_url=upstream, proxy_port=0)
    head = (b"POST /route HTTP/1.1\r\nHost: prod\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100000\r\n\r\n" + b'{"ticket_id": "e-1", "ticket": {"subject": "')
    try:
        async with running_sidecar(settings) as (api, core):
            run = running_proxy_process if mode == "process" else running_proxy
            async with run(settings, core) as proxy:
                answer = await raw_exchange(proxy, head, b"\r\n\r\n")
                assert answer.startswith(b"HTTP/1.1 413 Payload Too Large\r\n")
                assert await _counted(api, 'shadow_proxy_unmirrored_total{reason="answered_early"} 1.0')
    finally:
        server.close()
    assert read_rows(tmp_path / "records", "proposals") == []


async def _tunnel_upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answers CONNECT with 200, then echoes every byte back upper-cased (another protocol)."""
    head = await reader.readuntil(b"\r\n\r\n")
    if not head.startswith(b"CONNECT "):
        writer.close()
        return
    writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
    while chunk := await reader.read(65536):
        writer.write(chunk.upper())
        await writer.drain()
    writer.close()


@pytest.mark.parametrize("mode", ["process", "in_process"])
async def test_connect_tunnels_bytes_both_ways(mode: str, scorer_url: str, tmp_path: Path) -> None:
    """CONNECT through the proxy: the 200, then raw bytes both ways (not HTTP) on the same connection."""
    server = await asyncio.start_server(_tunnel_upstream, "127.0.0.1", 0)
    upstream = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url)})
    settings = settings_for(tmp_path, catalog, upstream_url=upstream, proxy_port=0)
    try:
        async with running_sidecar(settings) as (_api, core):
            run = running_proxy_process if mode == "process" else running_proxy
            async with run(settings, core) as proxy:
                host, port = proxy.removeprefix("http://").split(":")
                reader, writer = await asyncio.open_connection(host, int(port))
                try:
                    writer.write(b"CONNECT db.internal:5432 HTTP/1.1\r\nHost: db.internal:5432\r\n\r\n")
                    answer = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
                    assert answer == b"HTTP/1.1 200 Connection Established\r\n\r\n"
                    for payload in (b"\x00binary\xff hello\r\n", b"GET / HTTP/1.1\r\n\r\n"):
                        writer.write(payload)
                        assert await asyncio.wait_for(reader.readexactly(len(payload)), 10) == payload.upper()
                finally:
                    writer.close()
    finally:
        server.close()
