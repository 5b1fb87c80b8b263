"""Mirror API handlers.

``/v1/decisions`` answers 202 once each queued decision's accept mark is on disk (the journal's group
commit), never waiting for a scorer. ``/v1/outcomes`` answers once every outcome is on disk.
"""

from __future__ import annotations

import asyncio
import hmac
from collections import Counter
from typing import TYPE_CHECKING

from aiohttp import web
from aiohttp.web_protocol import RequestPayloadError

from contracts.encoding import decode_body
from shadow.api import payloads
from shadow.errors import RequestError, StoreUnavailable, Unauthorized
from shadow.keys import METRICS, MIRROR, RECORDER, RUNTIMES, SETTINGS
from shadow.mirror import Offer

if TYPE_CHECKING:
    from shadow.live_catalog import DecisionRuntime


def _runtime(request: web.Request, name: str, field: str) -> DecisionRuntime:
    """The decision type by name, after checking the request's bearer token if the type has one."""
    rt = request.app[RUNTIMES].types.get(name)
    if rt is None:
        raise RequestError(f"unknown decision_type {name!r}", field=field)
    if rt.token is not None:
        given = request.headers.get("Authorization", "")
        if not hmac.compare_digest(given.encode(errors="surrogateescape"), f"Bearer {rt.token}".encode()):
            raise Unauthorized(f"decision type {name!r} needs its bearer token", field="Authorization")
    return rt


async def _read(request: web.Request) -> bytes:
    """The body, decoded from its ``Content-Encoding``; one that cannot be read is a 400 on ``body``.

    ``SHADOW_MAX_BODY_BYTES`` caps it as sent and as decoded (413); an unknown coding is a 415.
    """
    try:
        body = await request.read()
    except RequestPayloadError as exc:  # a torn chunked body
        raise RequestError(f"body cannot be read: {exc}", field="body") from exc
    cap = request.app[SETTINGS].max_body_bytes
    return decode_body(body, request.headers.get("Content-Encoding", ""), cap)


async def post_decisions(request: web.Request) -> web.Response:
    """Offer one decision or a batch; 202 with what was queued and what was dropped (and why)."""
    body = await _read(request)
    items, prefix = payloads.parse_decisions(payloads.decode(body))
    payloads.refuse_lone_surrogates(body, items, prefix)
    runtimes = [_runtime(request, it.decision_type, prefix.format(i) + "decision_type")
                for i, it in enumerate(items)]
    payloads.refuse_unredactable(items, [rt.dtype.state for rt in runtimes], prefix)
    size = max(1, len(body) // len(items))
    reasons = await request.app[MIRROR].offer_durably(
        [Offer(rt, item.decision_id, item.state, size) for item, rt in zip(items, runtimes, strict=True)])
    results = [{"decision_id": item.decision_id, "queued": reason is None, "reason": reason}
               for item, reason in zip(items, reasons, strict=True)]
    dropped = Counter(r["reason"] for r in results if r["reason"] is not None)
    return web.json_response({"queued": len(results) - dropped.total(), "dropped": dict(dropped),
                              "decisions": results}, status=202)


async def post_outcomes(request: web.Request) -> web.Response:
    """Record outcomes, options or not (``in_options``), and audits; answer once every one is durable."""
    items, prefix = payloads.parse_outcomes(payloads.decode(await _read(request)))
    payloads.check_audits(items, prefix)
    runtimes = [_runtime(request, item.decision_type, prefix.format(i) + "decision_type")
                for i, item in enumerate(items)]
    recorder, metrics = request.app[RECORDER], request.app[METRICS]
    rows = [payloads.outcome_row(item, rt.dtype.option_ids) for item, rt in zip(items, runtimes, strict=True)]
    try:
        await asyncio.gather(*(recorder.sink.outcome(row) for row in rows))
    except Exception as exc:
        raise StoreUnavailable(f"outcome not stored: {exc}") from exc
    for row in rows:
        metrics.outcomes.labels(row["decision_type"], row["source"]).inc()
        if not row["in_options"]:
            metrics.outcomes_outside.labels(row["decision_type"], row["source"]).inc()
    return web.json_response({"recorded": len(rows)}, status=200)


async def healthz(request: web.Request) -> web.Response:
    """Liveness plus the numbers an operator looks at first."""
    mirror = request.app[MIRROR]
    breakers: dict[str, dict[str, str]] = {}
    for rt in request.app[RUNTIMES].types.values():
        for cand in rt.candidates:
            breakers.setdefault(cand.name, {})[cand.backend.endpoint] = cand.breaker.state.name.lower()
    relay = request.app[METRICS].relay_health
    fds_short = relay.get("fds", 0) > 0.9 * relay.get("fd_limit", 1 << 62)  # new clients would be refused
    return web.json_response({"status": "degraded" if fds_short else "ok", "queue_depth": mirror.depth,
                              "kill_switch": mirror.kill_switch,
                              "queues": {name: lane.depth for name, lane in mirror.lanes.items()},
                              "breakers": breakers, **({"relay": relay} if relay else {})})


async def metrics(request: web.Request) -> web.Response:
    """Prometheus text format."""
    return web.Response(body=request.app[METRICS].render(),
                        headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"})
