"""A production router stand-in for proxy tests: a real aiohttp server with awkward responses.

Errors, multi-valued headers, a 3 MB body, a chunked stream, gzip bytes, an echo of the request.
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import json
import random

from aiohttp import web

FIXED = {"Date": "Mon, 30 Nov 2026 12:00:00 GMT", "Server": "prod-router/1.0"}
LARGE = random.Random(7).randbytes(3 * 1024 * 1024)  # noqa: S311  (test data, not secrets)


def _headers(**extra: str) -> dict[str, str]:
    return {**FIXED, "X-Upstream": "yes", **extra}


async def route(request: web.Request) -> web.Response:
    """The production decision: routes a ticket to a team (the outcome the sidecar extracts)."""
    try:
        body = await request.json()
    except json.JSONDecodeError:
        return web.json_response({"error": "not json"}, status=400, headers=_headers())
    if request.headers.get("Authorization") == "Bearer wrong":
        return web.json_response({"error": "unauthorized", "team": "billing"}, status=401, headers=_headers())
    team = "technical" if "crash" in json.dumps(body.get("ticket", {})) else "billing"
    resp = web.json_response({"ticket_id": body.get("ticket_id"), "team": team}, headers=_headers())
    resp.headers.add("Set-Cookie", "a=1; Path=/")
    resp.headers.add("Set-Cookie", "b=2; Path=/")
    return resp


async def error(_: web.Request) -> web.Response:
    """A production failure, passed through as is."""
    return web.Response(status=500, text="upstream exploded\n", headers=_headers())


async def teapot(_: web.Request) -> web.Response:
    """An unusual status with a custom reason."""
    return web.Response(status=418, reason="I'm A Teapot", body=b"\x00\x01binary", headers=_headers())


async def large(_: web.Request) -> web.Response:
    """3 MB, over the mirror cap."""
    return web.Response(body=LARGE, content_type="application/octet-stream", headers=_headers())


async def stream(request: web.Request) -> web.StreamResponse:
    """A chunked response written in pieces with pauses."""
    resp = web.StreamResponse(headers=_headers(**{"Content-Type": "text/event-stream"}))
    await resp.prepare(request)
    for i in range(20):
        await resp.write(f"data: chunk {i}\n\n".encode())
        await asyncio.sleep(0.005)
    await resp.write_eof()
    return resp


async def gzipped(_: web.Request) -> web.Response:
    """Gzip bytes with Content-Encoding: the proxy must not decode them."""
    return web.Response(body=gzip.compress(b"hello " * 1000, mtime=0),
                        headers=_headers(**{"Content-Encoding": "gzip", "Content-Type": "text/plain"}))


async def echo(request: web.Request) -> web.Response:
    """What arrived: method, path and query, headers in order, and the body's hash and size."""
    body = await request.read()
    return web.json_response({"method": request.method, "path_qs": request.rel_url.raw_path_qs,
                              "headers": [[k, v] for k, v in request.headers.items() if k != "Host"],
                              "sha256": hashlib.sha256(body).hexdigest(), "size": len(body)},
                             headers=_headers())


async def empty(request: web.Request) -> web.Response:
    """204 No Content, or 304 Not Modified when the client sends a matching ETag."""
    if request.headers.get("If-None-Match") == '"v1"':
        return web.Response(status=304, headers=_headers(ETag='"v1"'))
    return web.Response(status=204, headers=_headers(ETag='"v1"'))


async def websocket(request: web.Request) -> web.WebSocketResponse:
    """A WebSocket echo (the proxy must tunnel the upgraded connection)."""
    ws = web.WebSocketResponse()
    await ws.prepare(request)
    async for msg in ws:
        await ws.send_str(f"echo {msg.data}")
    return ws


async def sleep(request: web.Request) -> web.Response:
    """Answers after ``?s=`` seconds (the proxy's read timeout)."""
    await asyncio.sleep(float(request.query.get("s", "1")))
    return web.Response(text="late\n", headers=_headers())


def upstream_app() -> web.Application:
    """The stand-in router."""
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/route", route)
    app.router.add_get("/error", error)
    app.router.add_get("/teapot", teapot)
    app.router.add_get("/large", large)
    app.router.add_get("/stream", stream)
    app.router.add_get("/gzip", gzipped)
    app.router.add_route("*", "/echo", echo)
    app.router.add_get("/empty", empty)
    app.router.add_get("/ws", websocket)
    app.router.add_get("/sleep", sleep)
    return app
