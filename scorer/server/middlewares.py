"""One error middleware: every error leaves as a SemIf JSON body; a 500 is logged as a bug."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from aiohttp import web

from contracts.errors import WireError, http_error_json
from scorer.errors import Overloaded

if TYPE_CHECKING:
    from aiohttp.typedefs import Handler

log = logging.getLogger("scorer.server")

def error_body(status: int, code: str, message: str, field: str | None) -> web.Response:
    """A SemIf error response."""
    return web.json_response({"error": {"code": code, "message": message, "field": field}}, status=status)


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
            return web.json_response(http_error_json(exc.status, exc.reason), status=exc.status)
        except Exception:
            log.exception("unhandled error on %s %s", request.method, request.path)
            return error_body(500, "internal_error", "internal error (a bug): see the server log", None)

    return middleware
