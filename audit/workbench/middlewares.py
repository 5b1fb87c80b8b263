"""Security headers on every response, writes only from this origin, and errors as JSON.

Errors are ``{"error": {"code", "message", "field"}}`` (the project's `WireError` form); a 500 is
logged as a bug. A page that needs a session sends a browser to the sign-in form instead.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from aiohttp import web

from audit.workbench.errors import Forbidden, SignInRequired
from contracts.errors import WireError

if TYPE_CHECKING:
    from aiohttp.typedefs import Handler

log = logging.getLogger(__name__)

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; "
       "frame-ancestors 'none'; base-uri 'none'")
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",  # no-referrer would make the form posts' Origin "null"
    "X-Content-Type-Options": "nosniff",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cache-Control": "no-store",
}
_HTTP_CODES = {404: "not_found", 405: "method_not_allowed", 413: "body_too_large"}
_FROM_HERE = {"same-origin", "none"}
_DECISION_PATH = re.compile(r"^/decisions/[^/?#\\]+(\?type=[^&#/\\]+)?$")


def is_decision_path(path: str) -> bool:
    """Whether ``path`` is a decision's page on this site (where sign-in may send a browser back to)."""
    return _DECISION_PATH.match(path) is not None


def error_body(status: int, code: str, message: str, field: str | None = None) -> web.Response:
    """A JSON error response (the sidecar's form; its module is not imported: it brings the mirror)."""
    return web.json_response({"error": {"code": code, "message": message, "field": field}}, status=status)


async def security_headers(_request: web.Request, response: web.StreamResponse) -> None:
    """``on_response_prepare``: every response (pages, static files, errors) carries the headers."""
    for name, value in SECURITY_HEADERS.items():
        response.headers[name] = value


def _check_origin(request: web.Request) -> None:
    """A write must come from this origin (the browser says so in ``Origin`` and ``Sec-Fetch-Site``)."""
    site = request.headers.get("Sec-Fetch-Site")
    if site is not None and site not in _FROM_HERE:
        raise Forbidden("Sec-Fetch-Site: writes are accepted from this page only", "Origin")
    origin = request.headers.get("Origin")
    if origin is not None and origin != f"{request.scheme}://{request.host}":
        raise Forbidden("Origin: writes are accepted from this page only", "Origin")


@web.middleware
async def error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Check a write's origin; render errors as JSON (a page without a session: to the sign-in form)."""
    try:
        if request.method not in {"GET", "HEAD"}:
            _check_origin(request)
        return await handler(request)
    except SignInRequired as exc:
        if request.method == "GET" and exc.field != "token":
            back = f"?{urlencode({'next': request.path_qs})}" if is_decision_path(request.path_qs) else ""
            return web.Response(status=303, headers={"Location": f"/sign-in{back}"})
        return web.json_response(exc.to_json(), status=exc.status)
    except WireError as exc:
        return web.json_response(exc.to_json(), status=exc.status)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        field = "body" if exc.status == 413 else None
        return error_body(exc.status, _HTTP_CODES.get(exc.status, "http_error"), exc.reason, field)
    except Exception:
        log.exception("unexpected error on %s %s", request.method, request.path)
        return error_body(500, "internal_error", "unexpected error (logged)")
