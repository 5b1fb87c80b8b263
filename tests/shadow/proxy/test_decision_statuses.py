"""``decision_statuses``: only the listed production statuses record a decision, in both relay modes.

The catalog lists 200, 202 and 409 (a custom list: 201, in the default 2xx list, is left out) and
lets every one of those and 201 carry an outcome. Through the relay (its own process, and on the
sidecar's loop) an upstream answers each claimed request with the status the request asks for: the
listed ones leave one proposals row and one outcome row each; 201, 422 and 500 leave neither, only a
``shadow_proxy_unmirrored_total{reason="status_not_allowed"}`` count. Every response reaches the
client as the upstream sent it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import aiohttp
import pytest
from aiohttp import web

from shadow.intake.supervisor import running_proxy, running_proxy_process
from shadow.keys import METRICS
from tests.shadow.harness import (
    read_rows,
    running_sidecar,
    serve,
    settings_for,
    ticket_type,
    until,
    write_catalog,
)

if TYPE_CHECKING:
    from pathlib import Path

LISTED = [200, 202, 409]
NOT_LISTED = [201, 422, 500]


async def _route(request: web.Request) -> web.Response:
    """Answer with the status the request asks for, and a team (an outcome) in the body."""
    body = await request.json()
    return web.json_response({"team": "billing"}, status=int(body["ticket"]["want"]))


@pytest.mark.parametrize("mode", ["process", "in_process"])
async def test_only_listed_statuses_record_a_decision_and_an_outcome(mode: str, scorer_url: str,
                                                                     tmp_path: Path) -> None:
    """Listed 200/202/409: a proposals row and an outcome row each; 201/422/500: no row of either kind."""
    upstream_app = web.Application()
    upstream_app.router.add_post("/route", _route)
    dtype = ticket_type(scorer_url)
    dtype["proxy"] |= {"decision_statuses": LISTED, "outcome_statuses": [*LISTED, 201]}
    catalog = write_catalog(tmp_path, {"tickets": dtype})
    seen: list[int] = []
    async with serve(upstream_app) as upstream:
        settings = settings_for(tmp_path, catalog, upstream_url=upstream, proxy_port=0)
        running = running_proxy_process if mode == "process" else running_proxy
        async with running_sidecar(settings) as (_api, core), running(settings, core) as url, \
                aiohttp.ClientSession() as session:
            for status in NOT_LISTED + LISTED:  # in order: once the listed are recorded, all were seen
                ticket = {"ticket_id": f"s-{status}", "ticket": {"subject": "refund", "want": status}}
                async with session.post(f"{url}/route", json=ticket) as resp:
                    assert await resp.json() == {"team": "billing"}
                    seen.append(resp.status)
            metrics = core[METRICS]
            outcomes = metrics.outcomes.labels("tickets", "proxy")
            refused = metrics.proxy_unmirrored.labels("status_not_allowed")
            scored = metrics.scored.labels("tickets", "default")
            await until(lambda: outcomes._value.get() >= len(LISTED) and scored._value.get() >= len(LISTED))
            await asyncio.sleep(0.1)  # a late, wrong row would have the time to come
            assert refused._value.get() == len(NOT_LISTED)
    assert seen == NOT_LISTED + LISTED
    proposals = read_rows(tmp_path / "records", "proposals")
    want = [(f"s-{s}", "scored") for s in LISTED]
    assert sorted((r["decision_id"], r["status"]) for r in proposals) == want
    recorded = read_rows(tmp_path / "records", "outcomes")
    want = [(f"s-{s}", "billing") for s in LISTED]
    assert sorted((r["decision_id"], r["outcome"]) for r in recorded) == want
