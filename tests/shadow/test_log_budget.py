"""The per-request log budget: no request can make the sidecar write unbounded log lines or bytes."""

from __future__ import annotations

import io
import json
import logging
from typing import TYPE_CHECKING

import aiohttp
from aiohttp import web

from semif_shadow.logs import JsonFormatter
from shadow.app import init_app
from tests.shadow.harness import serve, settings_for, ticket_type, write_catalog

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    import pytest

NOISY_LINES = 5000
noisy_log = logging.getLogger("shadow.noisy")
leaky_log = logging.getLogger("shadow.leaky")


def _fail(message: str = "x" * 1000) -> None:
    raise ValueError(message)


async def noisy(request: web.Request) -> web.Response:
    """A handler that logs without bound: ``n`` 1 KB lines, each with a traceback."""
    for i in range(int(request.query["n"])):
        try:
            _fail()
        except ValueError:
            noisy_log.exception("noisy line %d", i)
    return web.json_response({"logged": request.query["n"]})


async def leaky(_: web.Request) -> web.Response:
    """A handler whose traceback holds a field the type removes (the scrub filter must still mask it)."""
    try:
        _fail('{"email": "leak@example.com"}')
    except ValueError:
        leaky_log.exception("failed")
    return web.json_response({})


def _json_lines(stream: io.StringIO) -> Iterator[dict[str, object]]:
    for text in stream.getvalue().splitlines():
        yield json.loads(text)


async def test_one_request_logs_at_most_its_budget(scorer_url: str, tmp_path: Path,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    """A request that logs 5,000 lines with tracebacks writes at most the budget, then one line saying so.

    The budget (``SHADOW_LOG_REQUEST_MAX_LINES`` 20, ``..._BYTES`` 16 KiB here) holds for lines and for
    bytes of messages and tracebacks; the lines dropped are counted in
    ``shadow_log_lines_dropped_total``; the next request gets a fresh budget; lines logged outside a
    request (the recorder's one line per decision) are not counted against any. A traceback the
    budget measured still goes through the scrub filter.
    """
    caplog.set_level(logging.INFO, logger="shadow")
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)  # what `semif-shadow sidecar run` writes to stderr
    handler.setFormatter(JsonFormatter())
    logging.getLogger().addHandler(handler)  # before start-up: the budget filter goes on every handler
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url)})
    app = init_app(settings_for(tmp_path, catalog, log_request_max_lines=20, log_request_max_bytes=16384))
    app.router.add_get("/noisy", noisy)
    app.router.add_get("/leaky", leaky)
    try:
        async with serve(app) as url, aiohttp.ClientSession() as session:
            for _ in range(2):
                async with session.get(f"{url}/noisy", params={"n": str(NOISY_LINES)}) as resp:
                    assert resp.status == 200
            async with session.get(f"{url}/leaky") as resp:
                assert resp.status == 200
            decisions = [{"decision_type": "tickets", "decision_id": f"b-{i}", "state": {"text": "x"}}
                         for i in range(40)]
            async with session.post(f"{url}/v1/decisions", json={"decisions": decisions}) as resp:
                assert resp.status == 202
            async with session.get(f"{url}/metrics") as resp:
                metrics = await resp.text()
    finally:
        logging.getLogger().removeHandler(handler)
    written = stream.getvalue()
    lines = list(_json_lines(stream))
    noisy_lines = [line for line in lines if line["logger"] == "shadow.noisy"]
    spent = [line for line in noisy_lines if "log budget of this request spent" in str(line["message"])]
    assert len(spent) == 2  # one per request
    cut = noisy_lines.index(spent[0]) + 1
    per_request = [noisy_lines[:cut], noisy_lines[cut:]]
    for kept in per_request:
        assert len(kept) <= 21
        assert sum(len(str(line["message"])) + len(str(line.get("exc", ""))) for line in kept) <= 16384 + 300
    assert len(written) < 64 * 1024  # against ~10 MB without the budget
    assert "leak@example.com" not in written  # a traceback counted by the budget is still scrubbed
    decided = [line for line in lines if line["logger"] == "shadow.decisions"]
    assert len(decided) == 40
    dropped = 2 * NOISY_LINES - sum(len(kept) - 1 for kept in per_request)
    assert f"shadow_log_lines_dropped_total {float(dropped)}" in metrics
