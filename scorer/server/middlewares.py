"""One error middleware: every error leaves as a SemIf JSON body; a 500 is logged as a bug."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from aiohttp import web

from contracts.errors import WireError
from scorer.errors import Overloaded

if TYPE_CHECKING:
    from aiohttp.typedefs import Handler

log = logging.getLogger("scorer.server")

HTTP_CODES = {
    404: "not_found",
    405: "method_not_allowed",
    413: "body_too_large",
    415: "unsupported_media_type",
}


def error_body(status: int, code: str, message: str, field: str | None) -> web.Response:
    """A SemIf error response."""
    return web.json_response({"error": {"code": code, "message": message, "field": field}}, status=status)


def http_error_json(exc: web.HTTPException) -> dict[str, dict[str, str | None]]:
    """The wire error for one of aiohttp's HTTP errors (413 names ``body``, 415 ``Content-Type``)."""
    field = "body" if exc.status == 413 else ("Content-Type" if exc.status == 415 else None)
    code = HTTP_CODES.get(exc.status, "http_error")
    return {"error": {"code": code, "message": exc.reason, "field": field}}


def render(exc: WireError, retry_after_s: int) -> web.Response:
    """The wire form of a SemIf error, with Retry-After where the client may retry."""
    response = error_body(exc.status, exc.code, exc.message, exc.field)
    if isinstance(exc, Overloaded) or exc.status == 503:
        response.headers["Retry-After"] = str(retry_after_s)
    return response


def error_middleware(retry_after_s: int) -> web.middleware:  # type: ignore[valid-type]
    """Build the middleware (the Retry-After value comes from settings)."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            return await handler(request)
        except WireError as exc:
            return render(exc, retry_after_s)
        except web.HTTPException as exc:
            if exc.status < 400:
                raise
            return web.json_response(http_error_json(exc), status=exc.status)
        except Exception:
            log.exception("unhandled error on %s %s", request.method, request.path)
            return error_body(500, "internal_error", "internal error (a bug): see the server log", None)

    return middleware
