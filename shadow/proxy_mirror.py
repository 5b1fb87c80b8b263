"""What proxy mode mirrors: the decision type, id, state and outcome of one finished exchange.

Read as the catalog's ``proxy`` block says. Synchronous and in memory: `Mirror.offer` only queues.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from shadow.keys import METRICS, MIRROR, RECORDER, RUNTIMES
from shadow.state import get_path

if TYPE_CHECKING:
    from collections.abc import Mapping

    from aiohttp import web

    from shadow.catalog import Extract
    from shadow.runtime import DecisionRuntime


STOPPED = frozenset({"kill_switch", "experiment_ended", "shutdown"})  # no outcome rows either


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
    try:
        decision_id = str(extract(spec.decision_id, ex))
        state = extract(spec.state, ex)
        if not isinstance(state, (str, dict)):
            state = json.dumps(state)
    except _Unreadable as exc:
        core[METRICS].proxy_unmirrored.labels(exc.reason).inc()
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
        outcome = str(extract(rt.dtype.proxy.outcome, ex))
    except _Unreadable as exc:
        core[METRICS].proxy_unmirrored.labels(f"outcome_{exc.reason}").inc()
        return
    if outcome not in rt.dtype.option_ids:
        core[METRICS].proxy_unmirrored.labels("outcome_not_an_option").inc()
        return
    core[RECORDER].outcome_later({"decision_id": decision_id, "decision_type": rt.name, "outcome": outcome,
                                  "outcome_at": datetime.now(UTC), "source": "proxy"})
