"""Proxy mode: byte-identical upstream responses whatever the scorer does, and mirrored decisions."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
from typing import TYPE_CHECKING, Any

import aiohttp
import pytest

from shadow.errors import ShadowError
from shadow.intake.supervisor import ProxyProcess, running_proxy
from shadow.keys import METRICS
from shadow.proxy.relay import Upstream
from tests.harness import free_port
from tests.shadow.harness import (
    read_rows,
    running_sidecar,
    serve,
    settings_for,
    ticket_type,
    write_catalog,
)
from tests.shadow.proxy.harness import (
    REQUESTS,
    fetch,
    proxy_stack,
    raw_exchange,
    route_request,
    without_dates,
)
from tests.shadow.upstream import upstream_app

if TYPE_CHECKING:
    from pathlib import Path

    from tests.shadow.fault_scorer import Faults


@pytest.mark.parametrize("mode", ["process", "in_process"])
@pytest.mark.parametrize("scenario", ["healthy", "slow", "error", "overloaded", "dead"])
async def test_proxy_returns_upstream_bytes_whatever_the_scorer_does(
        scenario: str, mode: str, faults: Faults, scorer_url: str, tmp_path: Path) -> None:
    """Through the proxy every response equals the upstream's own, whatever the scorer does.

    Status, reason, headers and body bytes, for JSON, 500, 418, 3 MB, a chunked stream, gzip, 404,
    HEAD, 204, 304 and an echo of the request (including a 2 MB body), while the scorer is healthy,
    10 s slow, erroring, overloaded or dead; /route decisions are mirrored with their outcomes.
    """
    faults.mode = {"dead": "healthy"}.get(scenario, scenario)
    endpoint = f"http://127.0.0.1:{free_port()}" if scenario == "dead" else scorer_url
    async with proxy_stack(tmp_path, endpoint, mode) as (upstream, proxy, _api), \
            aiohttp.ClientSession(auto_decompress=False) as session:
        for method, path, kwargs in REQUESTS:
            direct = await fetch(session, upstream, method, path, kwargs)
            proxied = await fetch(session, proxy, method, path, kwargs)
            assert proxied == direct, f"{method} {path} differs through the proxy"
        await asyncio.sleep(0.05)
    faults.release.set()
    rows = {r["decision_id"]: r for r in read_rows(tmp_path / "records", "proposals")}
    assert set(rows) == {"t-1", "t-2"}
    want = {"healthy": "scored", "slow": "timeout", "error": "error", "overloaded": "error", "dead": "error"}
    assert {r["status"] for r in rows.values()} == {want[scenario]}
    outcomes = {r["decision_id"]: r["outcome"] for r in read_rows(tmp_path / "records", "outcomes")}
    assert outcomes == {"t-1": "billing", "t-2": "technical"}
    assert rows["t-1"]["state"] == '{"subject":"charged twice"}'  # email removed before storing


async def test_proxy_answers_502_when_upstream_is_down(scorer_url: str, tmp_path: Path) -> None:
    """A dead upstream gives the client a JSON 502 (as a reverse proxy would), and nothing is mirrored."""
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url)})
    settings = settings_for(tmp_path, catalog, upstream_url=f"http://127.0.0.1:{free_port()}")
    async with running_sidecar(settings) as (_url, core), running_proxy(settings, core, 0) as proxy, \
            aiohttp.ClientSession() as session, \
            session.post(proxy + "/route", json={"ticket_id": "t-9", "ticket": {}}) as resp:
        assert resp.status == 502
        assert (await resp.json())["error"]["code"] == "bad_gateway"
    assert read_rows(tmp_path / "records", "proposals") == []


async def test_proxy_mirror_failure_never_reaches_the_response(scorer_url: str, tmp_path: Path) -> None:
    """A claimed request whose decision id cannot be read is forwarded and answered unchanged.

    The sidecar only counts it as unmirrored.
    """
    async with proxy_stack(tmp_path, scorer_url) as (upstream, proxy, api), \
            aiohttp.ClientSession() as session:
        kwargs: dict[str, Any] = {"json": {"ticket": {"subject": "no id"}}}  # production answers 200
        async with session.post(upstream + "/route", **kwargs) as direct:
            expected = (direct.status, await direct.read())
        async with session.post(proxy + "/route", **kwargs) as proxied:
            assert (proxied.status, await proxied.read()) == expected
        counted = 'shadow_proxy_unmirrored_total{reason="missing_ticket_id"} 1.0'
        for _ in range(100):  # the relay process reports its counters every 0.5 s
            async with session.get(api + "/metrics") as metrics:
                text = await metrics.text()
            if counted in text:
                break
            await asyncio.sleep(0.1)
    assert counted in text


@pytest.mark.parametrize("mode", ["process", "in_process"])
async def test_proxy_tunnels_websockets(mode: str, scorer_url: str, tmp_path: Path) -> None:
    """An upgraded connection (WebSocket) passes through both ways; nothing is mirrored from it."""
    async with proxy_stack(tmp_path, scorer_url, mode) as (_upstream, proxy, _api), \
            aiohttp.ClientSession() as session, session.ws_connect(proxy + "/ws") as ws:
        for text in ("hello", "é" * 3000):
            await ws.send_str(text)
            assert (await ws.receive_str()) == f"echo {text}"


async def test_proxy_pipelined_requests_are_answered_in_order_and_mirrored(
        scorer_url: str, tmp_path: Path) -> None:
    """Pipelined requests, chunked bodies and a HEAD among them: same bytes as direct, each mirrored."""
    chunked = json.dumps({"ticket_id": "t-c", "ticket": {"subject": "app crash"}}).encode()
    pipeline = (route_request("t-p1", "charged twice") + b"HEAD /large HTTP/1.1\r\nHost: prod\r\n\r\n"
                + b"POST /route HTTP/1.1\r\nHost: prod\r\nTransfer-Encoding: chunked\r\n\r\n"
                + b"%x;ext=1\r\n%s\r\n%x\r\n%s\r\n0\r\nX-Trailer: 1\r\n\r\n" % (
                    10, chunked[:10], len(chunked) - 10, chunked[10:])
                + route_request("t-p2", "refund please"))
    async with proxy_stack(tmp_path, scorer_url) as (upstream, proxy, _api):
        direct = await raw_exchange(upstream, pipeline, b'"t-p2"')
        proxied = await raw_exchange(proxy, pipeline, b'"t-p2"')
    assert proxied.count(b"HTTP/1.1 200") == direct.count(b"HTTP/1.1 200") == 4
    assert without_dates(proxied) == without_dates(direct)
    outcomes = {r["decision_id"]: r["outcome"] for r in read_rows(tmp_path / "records", "outcomes")}
    assert outcomes == {"t-p1": "billing", "t-c": "technical", "t-p2": "billing"}


async def test_proxy_records_an_outcome_outside_the_options(scorer_url: str, tmp_path: Path) -> None:
    """An upstream answer that is none of the type's options is recorded with ``in_options`` false.

    The decision is still mirrored and scored, the outcome counted as outside the options, never as
    unmirrored; an answer that is an option is recorded with ``in_options`` true.
    """
    options = [{"id": "technical", "text": "Technical support"}, {"id": "review", "text": "Needs review"}]
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url, options=options)})
    async with serve(upstream_app()) as upstream:
        settings = settings_for(tmp_path, catalog, upstream_url=upstream, proxy_port=0)
        async with running_sidecar(settings) as (_api, core), running_proxy(settings, core) as proxy, \
                aiohttp.ClientSession() as session:
            for ticket_id, subject in (("t-o1", "charged twice"), ("t-o2", "app crash")):
                body = {"ticket_id": ticket_id, "ticket": {"subject": subject}}
                async with session.post(proxy + "/route", json=body) as resp:
                    assert resp.status == 200
    text = core[METRICS].render().decode()  # the sidecar's stop awaited the background outcome writes
    assert 'shadow_outcomes_total{decision_type="tickets",source="proxy"} 2.0' in text
    assert 'shadow_outcomes_outside_options_total{decision_type="tickets",source="proxy"} 1.0' in text
    assert "outcome_not_an_option" not in text
    outcomes = {r["decision_id"]: (r["outcome"], r["in_options"])
                for r in read_rows(tmp_path / "records", "outcomes")}
    assert outcomes == {"t-o1": ("billing", False), "t-o2": ("technical", True)}
    rows = read_rows(tmp_path / "records", "proposals")
    assert sorted((r["decision_id"], r["status"]) for r in rows) == [("t-o1", "scored"), ("t-o2", "scored")]


async def test_proxy_answers_504_when_upstream_goes_silent(scorer_url: str, tmp_path: Path) -> None:
    """No upstream byte for the read timeout: a JSON 504, and the connection closes."""
    async with proxy_stack(tmp_path, scorer_url, upstream_read_timeout_s=0.3) as (_up, proxy, api), \
            aiohttp.ClientSession() as session:
        async with session.get(proxy + "/sleep?s=3") as resp:
            assert resp.status == 504
            assert (await resp.json())["error"]["code"] == "gateway_timeout"
        async with session.get(proxy + "/sleep?s=0.05") as resp:
            assert (resp.status, await resp.text()) == (200, "late\n")
        want = ['shadow_proxy_requests_total{status_class="5xx"} 1.0',
                'shadow_proxy_requests_total{status_class="2xx"} 1.0']
        for _ in range(600):  # the relay's counters arrive every 0.5 s, later on a loaded machine
            async with session.get(api + "/metrics") as metrics:
                text = await metrics.text()
            if all(line in text for line in want):
                break
            await asyncio.sleep(0.05)
    assert want[0] in text
    assert want[1] in text


@pytest.mark.parametrize("mode", ["process", "in_process"])
async def test_proxy_passes_malformed_requests_through_unmirrored(
        mode: str, scorer_url: str, tmp_path: Path) -> None:
    """A request the framer cannot read still reaches the upstream unchanged; the upstream decides."""
    garbage = b"POST /route HTTP/1.1\r\nHost: prod\r\nContent-Length: ten\r\n\r\n0123456789"
    async with proxy_stack(tmp_path, scorer_url, mode) as (upstream, proxy, _api):
        direct = await raw_exchange(upstream, garbage, b"\r\n\r\n")
        proxied = await raw_exchange(proxy, garbage, b"\r\n\r\n")
    assert proxied.split(b"\r\n", 1)[0] == direct.split(b"\r\n", 1)[0] == b"HTTP/1.0 400 Bad Request"
    assert read_rows(tmp_path / "records", "proposals") == []


async def test_relay_process_is_restarted_when_it_dies(scorer_url: str, tmp_path: Path) -> None:
    """SIGKILL the relay: the sidecar starts a new one on the same listening socket and counts it."""
    async with serve(upstream_app()) as upstream:
        catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url)})
        settings = settings_for(tmp_path, catalog, upstream_url=upstream, proxy_port=0)
        async with running_sidecar(settings) as (api, core):
            proxy = ProxyProcess(settings, core)
            url = await proxy.start()
            try:
                assert proxy.proc is not None
                first = proxy.proc.pid
                os.kill(first, signal.SIGKILL)
                async with aiohttp.ClientSession() as session:
                    for _ in range(100):  # connections wait in the backlog until the new relay serves
                        if proxy.proc.pid != first and proxy.ready is not None and proxy.ready.done():
                            break
                        await asyncio.sleep(0.05)
                    async with session.post(url + "/route", json={"ticket_id": "t-r", "ticket": {}}) as resp:
                        assert resp.status == 200
                    async with session.get(api + "/metrics") as metrics:
                        text = await metrics.text()
            finally:
                await proxy.stop()
    assert proxy.proc.pid != first
    assert "shadow_proxy_restarts_total 1.0" in text
    assert {r["decision_id"] for r in read_rows(tmp_path / "records", "proposals")} == {"t-r"}


@pytest.mark.parametrize("mode", ["process", "in_process"])
async def test_the_relay_on_the_sidecars_loop_says_so_at_start(
        mode: str, scorer_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """``SHADOW_PROXY_PROCESS=false`` is for tests and low rates: starting that way logs a warning."""
    with caplog.at_level(logging.WARNING, logger="shadow.intake.supervisor"):
        async with proxy_stack(tmp_path, scorer_url, mode):
            pass
    events = [getattr(r, "fields", {}).get("event") for r in caplog.records if r.levelno == logging.WARNING]
    assert events.count("relay_in_process") == (1 if mode == "in_process" else 0)


def test_upstream_url_with_a_path_is_refused() -> None:
    """Request targets are forwarded unchanged, so an upstream URL with a path is a settings error."""
    with pytest.raises(ShadowError, match="no path"):
        Upstream.parse("http://127.0.0.1:8000/api")
    with pytest.raises(ShadowError, match="expected http"):
        Upstream.parse("ftp://host")
    assert Upstream.parse("https://router.internal") == Upstream("router.internal", 443, tls=True)


async def test_relay_finishes_requests_in_flight_when_stopped(scorer_url: str, tmp_path: Path) -> None:
    """SIGTERM to the relay (the sidecar stopping): a request waiting upstream still gets its answer.

    New connections are refused afterwards.
    """
    async with serve(upstream_app()) as upstream:
        catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url)})
        settings = settings_for(tmp_path, catalog, upstream_url=upstream, proxy_port=0, shutdown_grace_s=3.0)
        async with running_sidecar(settings) as (_api, core), aiohttp.ClientSession() as session:
            proxy = ProxyProcess(settings, core)
            url = await proxy.start()

            async def slow_get() -> tuple[int, str]:
                async with session.get(url + "/sleep?s=0.6") as resp:
                    return resp.status, await resp.text()

            pending = asyncio.create_task(slow_get())
            await asyncio.sleep(0.2)  # the request is now waiting upstream
            await proxy.stop()
            assert await pending == (200, "late\n")
            with pytest.raises(aiohttp.ClientConnectionError):
                async with session.get(url + "/empty"):
                    pass
