"""Proxy mode: forward unchanged, stream the answer back unchanged, and only then mirror a copy.

The response is built from the upstream answer alone. The mirror is called after ``write_eof`` and
returns nothing; its failures are caught and counted. There is no code path from a proposal (which
exists only later, in a worker) to a response.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import aiohttp
from aiohttp import web

from shadow.keys import CORE, METRICS, SETTINGS
from shadow.middlewares import error_body
from shadow.proxy_mirror import Exchange, mirror_exchange

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from shadow.settings import ShadowSettings

log = logging.getLogger(__name__)

HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
                        "trailer", "transfer-encoding", "upgrade", "proxy-connection"})
SKIP_AUTO = ("User-Agent", "Accept", "Accept-Encoding", "Content-Type")
SESSION = web.AppKey("upstream_session", aiohttp.ClientSession)
CHUNK = 64 * 1024


def init_proxy_app(settings: ShadowSettings, core: web.Application) -> web.Application:
    """The proxy application; ``core`` is the API app whose mirror it feeds."""
    if not settings.upstream_url:
        raise ValueError("proxy mode needs SHADOW_UPSTREAM_URL")
    app = web.Application(handler_args={"max_field_size": 65536})
    app[SETTINGS] = settings
    app[CORE] = core
    app.cleanup_ctx.append(_session_ctx)
    app.router.add_route("*", "/{tail:.*}", forward)
    return app


async def _session_ctx(app: web.Application) -> AsyncIterator[None]:
    settings = app[SETTINGS]
    connector = aiohttp.TCPConnector(limit=settings.upstream_max_connections, enable_cleanup_closed=True)
    timeout = aiohttp.ClientTimeout(total=None, connect=settings.upstream_connect_timeout_s,
                                    sock_read=settings.upstream_read_timeout_s)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout, auto_decompress=False,
                                     cookie_jar=aiohttp.DummyCookieJar()) as session:
        app[SESSION] = session
        yield


async def _read_body(request: web.Request, cap: int) -> tuple[bytes | AsyncIterator[bytes], bytes | None]:
    """The body to forward, and a copy to mirror (None when it is over ``cap``: it streams through)."""
    chunks: list[bytes] = []
    size = 0
    while size <= cap:
        chunk = await request.content.readany()
        if not chunk:
            body = b"".join(chunks)
            return body, body
        chunks.append(chunk)
        size += len(chunk)

    async def rest() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk
        async for chunk in request.content.iter_any():
            yield chunk
    return rest(), None


async def forward(request: web.Request) -> web.StreamResponse:
    """Forward one request and stream the answer back byte for byte; mirror afterwards."""
    app = request.app
    settings = app[SETTINGS]
    data, copy = await _read_body(request, settings.mirror_max_bytes)
    headers = [(k, v) for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP]
    url = settings.upstream_url.rstrip("/") + request.rel_url.raw_path_qs  # type: ignore[union-attr]
    try:
        upstream = await app[SESSION].request(request.method, url, headers=headers, data=data,
                                              allow_redirects=False, skip_auto_headers=SKIP_AUTO)
    except (aiohttp.ClientConnectionError, TimeoutError) as exc:
        status = 504 if isinstance(exc, TimeoutError) else 502
        app[CORE][METRICS].proxy_requests.labels(f"{status // 100}xx").inc()
        code = "bad_gateway" if status == 502 else "gateway_timeout"
        return error_body(status, code, str(exc) or repr(exc))
    async with upstream:
        response, answer = await _relay(request, upstream, settings.mirror_max_bytes)
    app[CORE][METRICS].proxy_requests.labels(f"{upstream.status // 100}xx").inc()
    _mirror_quietly(app[CORE], Exchange(request.method, request.path, request.headers, copy,
                                        upstream.status, upstream.headers, answer))
    return response


async def _relay(request: web.Request, upstream: aiohttp.ClientResponse,
                 cap: int) -> tuple[web.StreamResponse, bytes | None]:
    """Copy status, headers and body to the client; keep up to ``cap`` bytes of the body for the mirror."""
    response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
    for name, value in upstream.raw_headers:
        key = name.decode("latin-1")
        if key.lower() not in HOP_BY_HOP:
            response.headers.add(key, value.decode("latin-1"))
    await response.prepare(request)
    kept: list[bytes] = []
    size = 0
    async for chunk in upstream.content.iter_any():
        await response.write(chunk)
        size += len(chunk)
        if size <= cap:
            kept.append(chunk)
    await response.write_eof()
    return response, b"".join(kept) if size <= cap else None


def _mirror_quietly(core: web.Application, exchange: Exchange) -> None:
    """Offer the exchange to the mirror; nothing it does can reach the (already sent) response."""
    try:
        mirror_exchange(core, exchange)
    except Exception:
        log.exception("mirroring %s %s failed", exchange.method, exchange.path)
        core[METRICS].proxy_unmirrored.labels("internal_error").inc()
