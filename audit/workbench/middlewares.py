"""The request guards, security headers on every response, writes only from this origin, errors as JSON.

Errors are ``{"error": {"code", "message", "field"}}`` (the project's `WireError` form; those the web
framework raises take `contracts.errors.http_error_json`'s codes); a 500 is logged as a bug. A page that
needs a session sends a browser to the sign-in form instead.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from aiohttp import web

from audit.workbench.errors import Forbidden, SignInRequired, TooManyAttempts, Unexpected
from audit.workbench.guards import check_body, check_host, host_names
from audit.workbench.keys import SETTINGS
from contracts.errors import WireError, http_error_json

if TYPE_CHECKING:
    from aiohttp.typedefs import Handler, Middleware

    from audit.workbench.settings import WorkbenchSettings

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
HSTS = "max-age=31536000"
"""``Strict-Transport-Security`` when browsers come over HTTPS (a year; this host only)."""
_FROM_HERE = {"same-origin", "none"}
_SEGMENT = r"[^/?#&\\\x00-\x20\x7f-\U0010ffff]+"  # printable ASCII: the page's own links are %-escaped
_DECISION_PATH = re.compile(rf"/decisions/{_SEGMENT}(?:\?type={_SEGMENT})?")


def is_decision_path(path: str) -> bool:
    """Whether ``path`` (all of it) is a decision's page on this site, where sign-in may send a browser."""
    return _DECISION_PATH.fullmatch(path) is not None


async def security_headers(request: web.Request, response: web.StreamResponse) -> None:
    """``on_response_prepare``: every response (pages, static files, errors) carries the headers."""
    for name, value in SECURITY_HEADERS.items():
        response.headers[name] = value
    if request.app[SETTINGS].https:
        response.headers["Strict-Transport-Security"] = HSTS


def _check_origin(request: web.Request, scheme: str) -> None:
    """A write must come from this origin (the browser says so in ``Origin`` and ``Sec-Fetch-Site``)."""
    site = request.headers.get("Sec-Fetch-Site")
    if site is not None and site not in _FROM_HERE:
        raise Forbidden("Sec-Fetch-Site: writes are accepted from this page only", "Origin")
    origin = request.headers.get("Origin")
    if origin is not None and origin != f"{scheme}://{request.host}":
        raise Forbidden("Origin: writes are accepted from this page only", "Origin")


def _json(exc: WireError | web.HTTPError) -> web.Response:
    """The error as JSON: ours in their `WireError` form, the framework's in `http_error_json`'s."""
    if isinstance(exc, WireError):
        response = web.json_response(exc.to_json(), status=exc.status)
    else:
        response = web.json_response(http_error_json(exc.status, exc.reason), status=exc.status)
    if isinstance(exc, TooManyAttempts):
        response.headers["Retry-After"] = str(exc.retry_after)
    return response


def error_middleware(settings: WorkbenchSettings) -> Middleware:
    """Guard each request (``guards.py``) and check a write's origin; render every error as JSON."""
    names, scheme = host_names(settings), "https" if settings.https else "http"

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            check_host(request, names)
            await check_body(request, settings.max_body_bytes)
            if request.method not in {"GET", "HEAD"}:
                _check_origin(request, scheme)
            return await handler(request)
        except SignInRequired as exc:
            if request.method == "GET" and exc.field != "token":
                sent = request.raw_path  # %-escaped, as the page's own links are
                back = f"?{urlencode({'next': sent})}" if is_decision_path(sent) else ""
                return web.Response(status=303, headers={"Location": f"/sign-in{back}"})
            return _json(exc)
        except (WireError, web.HTTPError) as exc:
            return _json(exc)
        except web.HTTPException:  # a redirect
            raise
        except Exception:
            log.exception("unexpected error on %s %s", request.method, request.path)
            return _json(Unexpected("unexpected error (logged)"))

    return middleware
