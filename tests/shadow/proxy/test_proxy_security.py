"""Proxy mode against an outsider: refused requests record nothing, no byte is invented.

And a connection that brings nothing is closed.
"""

from __future__ import annotations

import asyncio
import json
import resource
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.shadow.harness import read_rows
from tests.shadow.proxy.harness import proxy_stack, raw_exchange, relay_stack, route_request


def _host_port(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").split(":")
    return host, int(port)


async def test_a_request_production_refused_records_no_decision(scorer_url: str, tmp_path: Path) -> None:
    """A 401 from production (the default allow list is 2xx): no decision row, no outcome row."""
    body = json.dumps({"ticket_id": "t-denied", "ticket": {"subject": "x"}}).encode()
    denied = (b"POST /route HTTP/1.1\r\nHost: prod\r\nAuthorization: Bearer wrong\r\n"
              b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    async with proxy_stack(tmp_path, scorer_url, "in_process") as (_up, proxy, _api):
        got = await raw_exchange(proxy, denied + route_request("t-ok", "charged twice"), b'"t-ok"')
    assert got.startswith(b"HTTP/1.1 401")
    assert {r["decision_id"] for r in read_rows(tmp_path / "records", "proposals")} == {"t-ok"}


async def test_a_bare_lf_request_cannot_borrow_the_next_requests_answer(
        scorer_url: str, tmp_path: Path) -> None:
    """A bare-LF head followed by a CRLF request on one connection records no decision at all."""
    evil = json.dumps({"ticket_id": "evil", "ticket": {"subject": "x"}}).encode()
    stream = (b"POST /route HTTP/1.1\nHost: u\nContent-Type: application/json\nContent-Length: %d\n\n%s"
              % (len(evil), evil)) + route_request("real-a", "charged twice")
    async with proxy_stack(tmp_path, scorer_url, "in_process") as (_up, proxy, _api):
        await raw_exchange(proxy, stream, b"never", timeout_s=2.0)
    assert read_rows(tmp_path / "records", "proposals") == []


async def test_no_504_is_written_on_a_connection_that_relayed_a_response(
        scorer_url: str, tmp_path: Path) -> None:
    """After one relayed response, a silent upstream closes the connection: no invented 504 follows."""
    first = b"GET /empty HTTP/1.1\r\nHost: prod\r\n\r\n"
    second = b"GET /sleep?s=3 HTTP/1.1\r\nHost: prod\r\n\r\n"
    stack = proxy_stack(tmp_path, scorer_url, "in_process", upstream_read_timeout_s=0.3)
    async with stack as (_up, proxy, _api):
        reader, writer = await asyncio.open_connection(*_host_port(proxy))
        writer.write(first)
        head = await reader.readuntil(b"\r\n\r\n")
        writer.write(second)
        async with asyncio.timeout(10):
            rest = await reader.read()  # until the relay closes the connection
        writer.close()
    assert head.startswith(b"HTTP/1.1 204")
    assert rest == b""


@pytest.mark.parametrize("mode", ["process", "in_process"])
async def test_a_client_that_connects_and_closes_is_closed(
        mode: str, scorer_url: str, tmp_path: Path) -> None:
    """Connect, send FIN without a byte: the relay closes its side (no socket left in CLOSE-WAIT)."""
    async with proxy_stack(tmp_path, scorer_url, mode) as (_up, proxy, _api):
        reader, writer = await asyncio.open_connection(*_host_port(proxy))
        writer.write_eof()
        async with asyncio.timeout(10):
            assert await reader.read() == b""  # EOF: the relay closed the connection
        writer.close()


async def test_a_lone_surrogate_ticket_id_is_counted_not_a_traceback(
        scorer_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A ``ticket_id`` of half a UTF-16 pair: relayed, counted as ``lone_surrogate``, nothing logged."""
    body = b'{"ticket_id": "t-\\ud800", "ticket": {"subject": "x"}}'
    request = (b"POST /route HTTP/1.1\r\nHost: prod\r\nContent-Type: application/json\r\n"
               b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    async with proxy_stack(tmp_path, scorer_url, "in_process") as (_up, proxy, api):
        got = await raw_exchange(proxy, request + route_request("t-ok", "x"), b'"t-ok"')
        async with aiohttp.ClientSession() as session, session.get(api + "/metrics") as resp:
            text = await resp.text()
    assert got.startswith(b"HTTP/1.1 200")
    assert 'shadow_proxy_unmirrored_total{reason="lone_surrogate"} 1.0' in text
    assert [r for r in caplog.records if r.exc_info] == []
    assert {r["decision_id"] for r in read_rows(tmp_path / "records", "proposals")} == {"t-ok"}


@pytest.mark.parametrize("ticket", [["x@y.example", "charged twice"], "x@y.example charged twice"])
async def test_a_state_that_is_not_an_object_skips_no_redaction(
        ticket: object, scorer_url: str, tmp_path: Path) -> None:
    """A list or string where the type's rules expect an object (email removed): counted, never stored."""
    body = json.dumps({"ticket_id": "t-list", "ticket": ticket}).encode()
    request = (b"POST /route HTTP/1.1\r\nHost: prod\r\nContent-Type: application/json\r\n"
               b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    async with proxy_stack(tmp_path, scorer_url, "in_process") as (_up, proxy, api):
        await raw_exchange(proxy, request + route_request("t-ok", "x"), b'"t-ok"')
        async with aiohttp.ClientSession() as session, session.get(api + "/metrics") as resp:
            text = await resp.text()
    assert 'shadow_proxy_unmirrored_total{reason="state_not_an_object"} 1.0' in text
    assert {r["decision_id"] for r in read_rows(tmp_path / "records", "proposals")} == {"t-ok"}
    assert _files_holding(tmp_path, b"x@y.example") == []


def _files_holding(folder: Path, needle: bytes) -> list[Path]:
    """Files under ``folder`` (journal, Parquet; not the catalog) whose bytes contain ``needle``."""
    files = [f for f in folder.rglob("*") if f.is_file() and f.name != "catalog.yaml"]
    return [f for f in files if needle in f.read_bytes()]


@pytest.mark.parametrize("mode", ["process", "in_process"])
async def test_the_proxy_and_the_api_bind_separately(mode: str, scorer_url: str, tmp_path: Path) -> None:
    """``SHADOW_PROXY_HOST`` moves the proxy alone: the API (with /metrics) stays on ``SHADOW_HOST``."""
    async with proxy_stack(tmp_path, scorer_url, mode, host="127.0.0.1", proxy_host="127.0.0.2") as (
            _up, proxy, api):
        got = await raw_exchange(proxy, route_request("t-b", "x"), b'"t-b"')
    assert proxy.startswith("http://127.0.0.2:")
    assert api.startswith("http://127.0.0.1:")
    assert got.startswith(b"HTTP/1.1 200")


@pytest.mark.parametrize("mode", ["process", "in_process"])
async def test_a_head_that_never_completes_is_closed(mode: str, scorer_url: str, tmp_path: Path) -> None:
    """Slowloris: part of a head, then silence: the relay closes the connection after the idle timeout."""
    async with proxy_stack(tmp_path, scorer_url, mode, proxy_idle_timeout_s=0.3) as (_up, proxy, _api):
        reader, writer = await asyncio.open_connection(*_host_port(proxy))
        writer.write(b"POST /route HTTP/1.1\r\nHost: prod\r\nX-Slow: ")
        async with asyncio.timeout(10):
            assert await reader.read() == b""
        writer.close()


@pytest.mark.parametrize("mode", ["process", "in_process"])
async def test_connections_over_the_cap_are_closed_at_once_and_counted(
        mode: str, scorer_url: str, tmp_path: Path) -> None:
    """With a cap of 2, three more clients are closed on arrival; the two before them are still served.

    Each refusal is counted in ``shadow_proxy_connections_refused_total{reason="connection_cap"}``
    (from the relay process, it arrives with the next counters frame: polled, not slept on).
    """
    async with proxy_stack(tmp_path, scorer_url, mode, proxy_max_connections=2) as (_up, proxy, api):
        held = [await asyncio.open_connection(*_host_port(proxy)) for _ in range(2)]
        extras = [await _refused(proxy) for _ in range(3)]
        first_reader, first_writer = held[0]
        first_writer.write(b"GET /empty HTTP/1.1\r\nHost: prod\r\n\r\n")
        head = await first_reader.readuntil(b"\r\n\r\n")
        for _, w in held:
            w.close()
        counted = 'shadow_proxy_connections_refused_total{reason="connection_cap"} 3.0'
        text = ""
        async with aiohttp.ClientSession() as session:
            for _ in range(200):
                async with session.get(api + "/metrics") as resp:
                    text = await resp.text()
                if counted in text:
                    break
                await asyncio.sleep(0.05)
    assert extras == [b"", b"", b""]
    assert head.startswith(b"HTTP/1.1 204")
    assert counted in text


async def _refused(proxy: str) -> bytes:
    """Connect and read to the end: what a client over the cap gets (nothing)."""
    reader, writer = await asyncio.open_connection(*_host_port(proxy))
    async with asyncio.timeout(10):
        try:
            extra = await reader.read()
        except ConnectionResetError:
            extra = b""
    writer.close()
    return extra


async def test_the_relay_raises_its_soft_descriptor_limit(scorer_url: str, tmp_path: Path) -> None:
    """Started with a soft RLIMIT_NOFILE of 256, the relay runs with its soft limit at the hard one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(256, hard), hard))  # the relay inherits it
    try:
        async with relay_stack(tmp_path, scorer_url) as (_proxy, process):
            assert process.proc is not None
            limits = _read_limits(process.proc.pid)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert limits == (hard, hard)


def _read_limits(pid: int) -> tuple[int, int]:
    """(soft, hard) open files of a process, from /proc."""
    for line in Path(f"/proc/{pid}/limits").read_text(encoding="utf-8").splitlines():
        if line.startswith("Max open files"):
            soft, hard = line.split()[3:5]
            return int(soft), int(hard)
    raise AssertionError(line)


async def test_healthz_reports_the_relays_health(scorer_url: str, tmp_path: Path) -> None:
    """/healthz carries the relay's connections, descriptors (and their limit) and restarts."""
    async with proxy_stack(tmp_path, scorer_url) as (_up, proxy, api), aiohttp.ClientSession() as session:
        _reader, writer = await asyncio.open_connection(*_host_port(proxy))
        health: dict[str, Any] = {}
        for _ in range(100):  # the relay reports every 0.5 s
            async with session.get(api + "/healthz") as resp:
                health = await resp.json()
            if health.get("relay", {}).get("connections") == 1:
                break
            await asyncio.sleep(0.1)
        writer.close()
    assert health["status"] == "ok"
    relay = health["relay"]
    assert relay["connections"] == 1
    assert relay["restarts"] == 0
    assert 0 < relay["fds"] < relay["fd_limit"]
