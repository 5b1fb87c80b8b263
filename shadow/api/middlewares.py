"""The API's middlewares: a log budget per request; the body budget (`shadow.api.budget`); errors as JSON.

Errors are ``{"error": {"code", "message", "field"}}``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from aiohttp import web

from contracts.errors import WireError, http_error_json
from shadow.api.budget import body_cost
from shadow.keys import BODY_BUDGET, METRICS, SETTINGS
from shadow.log_budget import request_budget

if TYPE_CHECKING:
    from aiohttp.typedefs import Handler

log = logging.getLogger(__name__)

def error_body(status: int, code: str, message: str, field: str | None = None) -> web.Response:
    """A JSON error response."""
    return web.json_response({"error": {"code": code, "message": message, "field": field}}, status=status)


@web.middleware
async def log_budget_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Whatever the request makes the sidecar log is bounded (`shadow.log_budget`)."""
    settings = request.app[SETTINGS]
    with request_budget(settings.log_request_max_lines, settings.log_request_max_bytes):
        return await handler(request)


@web.middleware
async def body_budget_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Refuse a request whose body does not fit in ``SHADOW_API_BODY_BUDGET_BYTES`` (503, body unread)."""
    if not request.body_exists:
        return await handler(request)
    budget = request.app[BODY_BUDGET]
    cost = body_cost(request.content_length, request.headers.get("Content-Encoding", ""),
                     request.app[SETTINGS].max_body_bytes)
    if not budget.take(cost):
        request.app[METRICS].api_refused.labels("body_budget").inc()
        message = "request bodies being handled fill SHADOW_API_BODY_BUDGET_BYTES; retry"
        response = error_body(503, "overloaded", message, "body")
        response.headers["Retry-After"] = "1"
        return response
    try:
        return await handler(request)
    finally:
        budget.give(cost)


@web.middleware
async def error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Render wire errors (`RequestError`, the contracts' body decoding) and aiohttp's HTTP errors as JSON.

    Anything else is logged as a 500.
    """
    try:
        return await handler(request)
    except WireError as exc:
        return web.json_response(exc.to_json(), status=exc.status)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return web.json_response(http_error_json(exc.status, exc.reason), status=exc.status)
    except Exception:
        log.exception("unexpected error on %s %s", request.method, request.path)
        return error_body(500, "internal_error", "unexpected error (logged)")
