"""Proxy mode: byte-identical upstream responses whatever the scorer does, and mirrored decisions."""

from __future__ import annotations

import asyncio
import contextlib
import io
import random
from typing import TYPE_CHECKING, Any

import aiohttp
import pytest

from shadow.proxy import init_proxy_app
from tests.shadow.conftest import (
    free_port,
    read_rows,
    running_sidecar,
    serve,
    settings_for,
    ticket_type,
    write_catalog,
)
from tests.shadow.upstream import upstream_app

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from tests.shadow.fault_scorer import Faults

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding"}
BIG_REQUEST = random.Random(3).randbytes(2 * 1024 * 1024)  # noqa: S311  (test data, not secrets)

REQUESTS: list[tuple[str, str, dict[str, Any]]] = [
    ("POST", "/route", {"json": {"ticket_id": "t-1",
                                 "ticket": {"subject": "charged twice", "email": "x@y"}}}),
    ("POST", "/route", {"json": {"ticket_id": "t-2", "ticket": {"subject": "app crash"}}}),
    ("GET", "/error", {}),
    ("GET", "/teapot", {}),
    ("GET", "/large", {}),
    ("GET", "/stream", {}),
    ("GET", "/gzip", {"headers": {"Accept-Encoding": "gzip"}}),
    ("GET", "/nowhere?x=1&y=%20z", {}),
    ("HEAD", "/large", {}),
    ("GET", "/empty", {}),
    ("GET", "/empty", {"headers": {"If-None-Match": '"v1"'}}),
    ("PUT", "/echo?a=1&a=2", {"data": b"small body", "headers": {"X-Trace": "abc", "X-Multi": "1"}}),
    ("POST", "/echo", {"data": BIG_REQUEST, "headers": {"Content-Type": "application/octet-stream"}}),
]


async def fetch(session: aiohttp.ClientSession, base: str, method: str, path: str,
                kwargs: dict[str, Any]) -> tuple[int, str, list[tuple[str, str]], bytes]:
    """Status, reason, end-to-end headers (in order) and raw body bytes."""
    if isinstance(kwargs.get("data"), bytes) and len(kwargs["data"]) > 1024 * 1024:
        kwargs = {**kwargs, "data": io.BytesIO(kwargs["data"])}  # aiohttp warns on large raw bytes
    async with session.request(method, base + path, **kwargs) as resp:
        body = await resp.read()
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in resp.raw_headers
                   if k.decode("latin-1").lower() not in HOP_BY_HOP]
        return resp.status, resp.reason or "", headers, body


@contextlib.asynccontextmanager
async def proxy_stack(tmp_path: Path, scorer_endpoint: str, **overrides: Any
                      ) -> AsyncIterator[tuple[str, str, str]]:
    """Upstream, sidecar API and proxy, all running; yields (upstream URL, proxy URL, API URL)."""
    async with serve(upstream_app()) as upstream:
        catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_endpoint)})
        settings = settings_for(tmp_path, catalog, upstream_url=upstream, **overrides)
        async with running_sidecar(settings) as (api, core), serve(init_proxy_app(settings, core)) as proxy:
            yield upstream, proxy, api


@pytest.mark.parametrize("scenario", ["healthy", "slow", "error", "overloaded", "dead"])
async def test_proxy_returns_upstream_bytes_whatever_the_scorer_does(
        scenario: str, faults: Faults, scorer_url: str, tmp_path: Path) -> None:
    """Through the proxy every response equals the upstream's own, whatever the scorer does.

    Status, reason, headers and body bytes, for JSON, 500, 418, 3 MB, a chunked stream, gzip, 404,
    HEAD, 204, 304 and an echo of the request (including a 2 MB body), while the scorer is healthy,
    10 s slow, erroring, overloaded or dead; /route decisions are mirrored with their outcomes.
    """
    faults.mode = {"dead": "healthy"}.get(scenario, scenario)
    endpoint = f"http://127.0.0.1:{free_port()}" if scenario == "dead" else scorer_url
    async with proxy_stack(tmp_path, endpoint) as (upstream, proxy, _api), \
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
    async with running_sidecar(settings) as (_url, core), serve(init_proxy_app(settings, core)) as proxy, \
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
        kwargs: dict[str, Any] = {"data": b"not json", "headers": {"Content-Type": "text/plain"}}
        async with session.post(upstream + "/route", **kwargs) as direct:
            expected = (direct.status, await direct.read())
        async with session.post(proxy + "/route", **kwargs) as proxied:
            assert (proxied.status, await proxied.read()) == expected
        async with session.get(api + "/metrics") as metrics:
            text = await metrics.text()
    assert 'shadow_proxy_unmirrored_total{reason="request_not_json"} 1.0' in text

