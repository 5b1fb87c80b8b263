"""What proxy mode mirrors: the decision type, id, state and outcome of one finished exchange.

Read as the catalog's ``proxy`` block says. Synchronous and in memory: `Mirror.offer` only queues. This
is the sidecar's side of the proxy (it holds the catalog and the mirror); the relay never imports it.
`MirrorHooks` are the hooks of an in-process relay; the relay process's exchanges arrive through the
supervisor and `mirror_messages` alike.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from multidict import CIMultiDict

from shadow import clock
from shadow.keys import METRICS, MIRROR, RECORDER, RUNTIMES, SETTINGS
from shadow.log_budget import request_budget
from shadow.proxy.hooks import request_path
from shadow.state import get_path

if TYPE_CHECKING:
    from collections.abc import Mapping

    from aiohttp import web

    from contracts.catalog import Extract
    from shadow.live_catalog import DecisionRuntime
    from shadow.metrics import Metrics
    from shadow.proxy.framing import Message


log = logging.getLogger(__name__)

_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
STOPPED = frozenset({"kill_switch", "experiment_ended", "shutdown"})  # no outcome rows either
MAX_OUTCOME_CHARS = 256  # as the mirror API's outcome field


@dataclass(frozen=True, slots=True)
class Exchange:
    """One forwarded request and its answer (bodies are None when too large to keep)."""

    method: str
    path: str
    request_headers: Mapping[str, str]
    request_body: bytes | None
    status: int
    response_headers: Mapping[str, str]
    response_body: bytes | None


class _Unreadable(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _route(core: web.Application, ex: Exchange) -> DecisionRuntime | None:
    for rt in core[RUNTIMES].types.values():
        spec = rt.dtype.proxy
        if spec is not None and spec.path == ex.path and spec.method.upper() == ex.method.upper():
            return rt
    return None


def _json(body: bytes | None, side: str) -> Any:
    if body is None:
        raise _Unreadable(f"{side}_too_large")
    try:
        return json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _Unreadable(f"{side}_not_json") from exc


def extract(spec: Extract, ex: Exchange) -> Any:
    """Read one value from the exchange."""
    if spec.source == "request_header":
        value: Any = ex.request_headers.get(spec.path)
    elif spec.source == "response_header":
        value = ex.response_headers.get(spec.path)
    else:
        side = "request" if spec.source == "request_json" else "response"
        body = _json(ex.request_body if side == "request" else ex.response_body, side)
        try:
            value = get_path(body, spec.path)
        except KeyError as exc:
            raise _Unreadable(f"missing_{spec.path or 'body'}") from exc
    if value is None:
        raise _Unreadable(f"missing_{spec.path}")
    return value


def mirror_exchange(core: web.Application, ex: Exchange) -> None:
    """Offer the exchange's decision (and record its outcome) if a catalog type claims its route."""
    rt = _route(core, ex)
    if rt is None or rt.dtype.proxy is None:
        return
    spec = rt.dtype.proxy
    if ex.status not in spec.decision_statuses:  # production refused it: not a decision it made
        core[METRICS].proxy_unmirrored.labels("status_not_allowed").inc()
        return
    try:
        decision_id = str(extract(spec.decision_id, ex))
        state = extract(spec.state, ex)
    except _Unreadable as exc:
        core[METRICS].proxy_unmirrored.labels(exc.reason).inc()
        return
    rules = rt.dtype.state
    if not isinstance(state, dict) and (rules.include or rules.remove or rules.hash):
        core[METRICS].proxy_unmirrored.labels("state_not_an_object").inc()  # redaction needs an object
        return
    if not isinstance(state, (str, dict)):
        state = json.dumps(state)
    if _SURROGATE_ESCAPE.search(ex.request_body or b"") or _SURROGATE_ESCAPE.search(ex.response_body or b""):
        try:  # half a UTF-16 pair has no UTF-8 form: it could not be stored, so it is not mirrored
            json.dumps([decision_id, state], ensure_ascii=False).encode()
        except UnicodeEncodeError:
            core[METRICS].proxy_unmirrored.labels("lone_surrogate").inc()
            return
    size = len(ex.request_body or b"")
    reason = core[MIRROR].offer(rt, decision_id[:128], state, size)
    if reason in STOPPED:
        return
    if spec.outcome is not None and ex.status in spec.outcome_statuses:
        _record_outcome(core, rt, decision_id[:128], ex)


def _record_outcome(core: web.Application, rt: DecisionRuntime, decision_id: str, ex: Exchange) -> None:
    assert rt.dtype.proxy is not None
    assert rt.dtype.proxy.outcome is not None
    try:
        outcome = _outcome_text(extract(rt.dtype.proxy.outcome, ex))
    except _Unreadable as exc:
        core[METRICS].proxy_unmirrored.labels(f"outcome_{exc.reason}").inc()
        return
    core[RECORDER].outcome_later({"decision_id": decision_id, "decision_type": rt.name, "outcome": outcome,
                                  "outcome_at": datetime.fromtimestamp(clock.now(), UTC), "source": "proxy",
                                  "in_options": outcome in rt.dtype.option_ids})


def _outcome_text(value: Any) -> str:
    """An outcome as recorded: a scalar as text, 1 to `MAX_OUTCOME_CHARS` characters (an option or not)."""
    if isinstance(value, (dict, list)):
        raise _Unreadable("not_scalar")
    text = str(value)
    if not text:
        raise _Unreadable("empty")
    if len(text) > MAX_OUTCOME_CHARS:
        raise _Unreadable("too_long")
    return text


def catalog_routes(core: web.Application) -> frozenset[tuple[str, str]]:
    """The (METHOD, path) routes the catalog's decision types claim in proxy mode."""
    return frozenset((t.dtype.proxy.method.upper(), t.dtype.proxy.path)
                     for t in core[RUNTIMES].types.values() if t.dtype.proxy is not None)


class MirrorHooks:
    """The hooks of an in-process relay: the sidecar's own metrics and mirror, on its own loop."""

    def __init__(self, core: web.Application) -> None:
        self.core = core
        self.metrics: Metrics = core[METRICS]
        self._classes = {c: self.metrics.proxy_requests.labels(f"{c}xx") for c in range(1, 6)}

    def answered(self, status: int) -> None:
        """Count it in ``shadow_proxy_requests_total``."""
        counter = self._classes.get(status // 100)
        if counter is not None:
            counter.inc()

    def exchange(self, request: Message, response: Message) -> None:
        """Mirror it on the next loop turn, after the response's bytes were flushed."""
        asyncio.get_running_loop().call_soon(mirror_messages, self.core, request, response)

    def unmirrored(self, reason: str, n: int = 1) -> None:
        """Count them in ``shadow_proxy_unmirrored_total``."""
        self.metrics.proxy_unmirrored.labels(reason).inc(n)

    def refused(self, reason: str) -> None:
        """Count it in ``shadow_proxy_connections_refused_total``."""
        self.metrics.proxy_refused.labels(reason).inc()

    def dropped(self, reason: str, request: Message) -> None:
        """Count it unmirrored, and in ``drops`` for each candidate of the route's type."""
        self.metrics.proxy_unmirrored.labels(reason).inc()
        count_relay_drops(self.core, f"{request.method.upper()} {request_path(request.start[1])}", 1, reason)


def mirror_messages(core: web.Application, request: Message, response: Message) -> None:
    """Offer a finished exchange to the mirror; nothing it does can reach the (already sent) response."""
    method, target, _ = request.start
    path = request_path(target)
    exchange = Exchange(method, path, CIMultiDict(request.headers), request.body, response.status,
                        CIMultiDict(response.headers), response.body)
    settings = core[SETTINGS]
    with request_budget(settings.log_request_max_lines, settings.log_request_max_bytes):
        try:
            mirror_exchange(core, exchange)
        except Exception:
            log.exception("mirroring %s %s failed", method, path)
            core[METRICS].proxy_unmirrored.labels("internal_error").inc()


def count_relay_drops(core: web.Application, route: str, n: int, reason: str = "handoff_full") -> None:
    """Count ``n`` exchanges on ``route`` ("METHOD path") that the relay dropped for lack of room.

    They are offered decisions the mirror never saw (``handoff_full``: no room at the hand-off;
    ``relay_memory``: no room in the relay's held-bytes budget for a body copy): each candidate of the
    route's type counts them as offered, and in ``drops`` under ``reason``.
    """
    method, _, path = route.partition(" ")
    rt = _route(core, Exchange(method, path, CIMultiDict(), None, 0, CIMultiDict(), None))
    if rt is None:
        return
    for cand in rt.candidates:
        core[METRICS].offered.labels(rt.name, cand.name).inc(n)
        core[METRICS].dropped.labels(rt.name, cand.name, reason).inc(n)
        core[RECORDER].count(rt.name, cand.name, reason, n)
