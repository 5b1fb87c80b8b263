"""Redaction end to end: raw markers sent through the mirror API and the proxy, searched for everywhere.

The sidecar gets raw states holding a marker in a removed field (``email``) and one in a hashed field
(``customer_id``), with ``store: true`` and the default record store. Decisions go through every path:
scored, scorer error, dropped before scoring (the experiment ended), refused (400), through the proxy
scored and with the scorer erroring. Then the markers are searched for in every byte of the spool
*before* roll-over (the journal), every byte under the records root after close (Parquet decoded too),
every log line at DEBUG as the sidecar's own handlers format and filter it (the test adds a handler
before start-up; the sidecar installs its scrub filter on it), and every byte the scorer received.
A control marker in a kept field is found by the same searches (logs: the decision ids), so each
search works; the hashed form of the hashed marker is found where states are stored.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import aiohttp
import pytest
from aiohttp import web

from shadow.intake.supervisor import running_proxy, running_proxy_process
from shadow.records.settings import RecordSettings
from tests.harness import every_byte
from tests.shadow.fault_scorer import Faults, fault_app
from tests.shadow.harness import running_sidecar, serve, settings_for, ticket_type, wait_rows, write_catalog
from tests.shadow.upstream import upstream_app

if TYPE_CHECKING:
    import io
    from collections.abc import Awaitable, Callable
    from pathlib import Path

EMAIL = "MARKER-EMAIL-41c7@example.com"  # in a removed field
CARD = "MARKER-CARD-4111-8e0d"  # in a hashed field
CONTROL = "CONTROL-SUBJECT-9b2f"  # in a kept field
SPOOL_TIMEOUT_S = 30.0


def _state(n: int) -> dict[str, Any]:
    return {"subject": f"{CONTROL} {n}", "email": EMAIL, "customer_id": CARD}


def _recording_scorer(faults: Faults, received: list[bytes]) -> web.Application:
    """The fault scorer, keeping every request's raw bytes (path, headers and body)."""

    @web.middleware
    async def record(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                     ) -> web.StreamResponse:
        body = await request.read()
        received.append(f"{request.method} {request.path_qs}\n{dict(request.headers)}\n".encode() + body)
        return await handler(request)

    app = fault_app(faults)
    app.middlewares.append(record)
    return app


async def _journaled(spool: Path, n: int) -> bytes:
    """The spool's bytes once ``n`` stored states are in the journal (polled; the store commits alone)."""
    deadline = asyncio.get_running_loop().time() + SPOOL_TIMEOUT_S
    while (seen := every_byte(spool)).count(CONTROL.encode()) < n:
        found = seen.count(CONTROL.encode())
        assert asyncio.get_running_loop().time() < deadline, f"{found} of {n} in the journal"
        await asyncio.sleep(0.05)
    return seen


async def _post(session: aiohttp.ClientSession, url: str, payload: Any) -> int:
    async with session.post(url, json=payload) as resp:
        await resp.read()
        return resp.status


@pytest.mark.parametrize("mode", ["process", "in_process"])
async def test_raw_markers_reach_no_file_no_log_and_no_scorer(mode: str, tmp_path: Path,
                                                              all_logs: io.StringIO) -> None:
    """Removed and hashed values are in no journal byte, no Parquet value, no log line, no scorer request."""
    faults, received = Faults(), list[bytes]()
    async with serve(_recording_scorer(faults, received)) as scorer, serve(upstream_app()) as upstream:
        catalog = write_catalog(tmp_path, {
            "tickets": ticket_type(scorer),
            "ended": ticket_type(scorer, experiment_ends_at="2000-01-01T00:00:00Z", proxy=None)})
        records = RecordSettings(root=str(tmp_path / "records"), spool_dir=tmp_path / "spool", writer_id="t",
                                 roll_seconds=3600.0)
        settings = settings_for(tmp_path, catalog, records=records, upstream_url=upstream, proxy_port=0)
        async with running_sidecar(settings) as (api, core), aiohttp.ClientSession() as session:
            run = running_proxy_process if mode == "process" else running_proxy
            async with run(settings, core) as proxy:
                statuses = await _exercise(session, api, proxy, faults)
                await wait_rows(api, 5)
                spool = await _journaled(settings.records.spool_dir, 5)
    assert statuses == {"api-scored": 202, "api-error": 202, "api-ended": 202, "api-refused": 400,
                        "proxy-scored": 200, "proxy-error": 200, "outcome": 200}
    root = every_byte(tmp_path / "records")
    logs = all_logs.getvalue()
    to_scorer = b"\n".join(received)
    for marker in (EMAIL, CARD):
        assert marker.encode() not in spool, f"{marker} in the journal"
        assert marker.encode() not in root, f"{marker} under the records root"
        assert marker not in logs, f"{marker} in a log line"
        assert marker.encode() not in to_scorer, f"{marker} sent to the scorer"
    assert CONTROL.encode() in spool  # each search finds what is there
    assert CONTROL.encode() in root
    assert CONTROL.encode() in to_scorer
    assert b"hmac-sha256:" in spool
    assert b"hmac-sha256:" in root
    assert "ctl-scored" in logs
    assert "ctl-proxy-error" in logs


async def _exercise(session: aiohttp.ClientSession, api: str, proxy: str, faults: Faults) -> dict[str, int]:
    """Every path a state can take; returns each call's HTTP status."""
    statuses = {}

    async def decide(name: str, decision_type: str, decision_id: str, n: int) -> None:
        statuses[name] = await _post(session, f"{api}/v1/decisions", {
            "decision_type": decision_type, "decision_id": decision_id, "state": _state(n)})

    await decide("api-scored", "tickets", "ctl-scored", 1)
    statuses["outcome"] = await _post(session, f"{api}/v1/outcomes", {
        "decision_type": "tickets", "decision_id": "ctl-scored", "outcome": "billing"})
    await decide("api-ended", "ended", "ctl-ended", 2)
    statuses["api-refused"] = await _post(session, f"{api}/v1/decisions", {
        "decision_type": "tickets", "decision_id": ["not", "a", "string"], "state": _state(3)})
    statuses["proxy-scored"] = await _post(session, f"{proxy}/route", {"ticket_id": "ctl-proxy",
                                                                       "ticket": _state(4)})
    await wait_rows(api, 3)
    faults.mode = "error"
    await decide("api-error", "tickets", "ctl-error", 5)
    statuses["proxy-error"] = await _post(session, f"{proxy}/route", {"ticket_id": "ctl-proxy-error",
                                                                      "ticket": _state(6)})
    return statuses
