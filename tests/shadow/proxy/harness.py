"""Plain helpers of the proxy tests: framing cases, relays and stacks on loopback, raw exchanges.

Imported by the tests that use them (no test module imports another).
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import io
import json
import random
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from shadow.intake.supervisor import ProxyProcess, running_proxy, running_proxy_process
from tests.shadow.harness import running_sidecar, serve, settings_for, ticket_type, write_catalog
from tests.shadow.upstream import upstream_app

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator
    from pathlib import Path

    import aiohttp

CHUNKED = b"PUT / HTTP/1.1\r\nHost: u\r\nTransfer-Encoding: chunked\r\n\r\n"
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding"}
BIG_REQUEST = random.Random(3).randbytes(2 * 1024 * 1024)  # noqa: S311  (test data, not secrets)
STATE_BYTES = 20_000

SMUGGLING = {
    # a bare LF ends a line for nginx and Werkzeug: the framer must not merge two requests into one
    "bare_lf": b"POST /route HTTP/1.1\nHost: u\nContent-Type: application/json\nContent-Length: 2\n\n{}"
               b"POST /route HTTP/1.1\r\nHost: u\r\nContent-Length: 2\r\n\r\n{}",
    "bare_lf_hides_length": b"POST /route HTTP/1.1\r\nHost: u\r\nX-A: b\nContent-Length: 9\r\n\r\n",
    "bare_cr": b"POST /route HTTP/1.1\r\nHost: u\rContent-Length: 3\r\n\r\nabc",
    "lower_case_method": b"post /route HTTP/1.1\r\nHost: u\r\n\r\n",
    "unknown_method": b"FOO /route HTTP/1.1\r\nHost: u\r\n\r\n",
    "header_name_not_a_token": b"POST /route HTTP/1.1\r\nHost: u\r\nX(a): 1\r\n\r\n",
    "space_before_colon": b"POST /route HTTP/1.1\r\nHost: u\r\nContent-Length : 3\r\n\r\nabc",
    "obs_fold": b"POST /route HTTP/1.1\r\nHost: u\r\nX-A: 1\r\n Content-Length: 3\r\n\r\nabc",
    "length_not_digits": b"POST / HTTP/1.1\r\nHost: u\r\nContent-Length: ten\r\n\r\n",
    "length_plus": b"POST / HTTP/1.1\r\nHost: u\r\nContent-Length: +3\r\n\r\nabc",
    "length_too_long": b"POST / HTTP/1.1\r\nHost: u\r\nContent-Length: 9999999999999999\r\n\r\n",
    "duplicate_length": b"POST / HTTP/1.1\r\nHost: u\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
    "conflicting_length": b"POST / HTTP/1.1\r\nHost: u\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
    "te_gzip": b"POST / HTTP/1.1\r\nHost: u\r\nTransfer-Encoding: gzip\r\n\r\n",
    "te_list": b"POST / HTTP/1.1\r\nHost: u\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
    "te_odd": b"POST / HTTP/1.1\r\nHost: u\r\nTransfer-Encoding: xchunked\r\n\r\n",
    "te_twice": b"POST / HTTP/1.1\r\nHost: u\r\nTransfer-Encoding: chunked\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "length_and_te": b"POST / HTTP/1.1\r\nHost: u\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
                     b"0\r\n\r\n",
    "chunk_size_0x": CHUNKED + b"0x3\r\nabc\r\n0\r\n\r\n",
    "chunk_size_plus": CHUNKED + b"+3\r\nabc\r\n0\r\n\r\n",
    "chunk_size_space": CHUNKED + b"3 \r\nabc\r\n0\r\n\r\n",
    "chunk_size_too_long": CHUNKED + b""
                           b"10000000000000003\r\nabc\r\n0\r\n\r\n",
    "chunk_size_not_hex": CHUNKED + b"zz\r\n",
    "chunk_line_bare_lf": CHUNKED + b"3\nabc\r\n0\r\n\r\n",
    "no_colon": b"POST / HTTP/1.1\r\nHost: u\r\n no-colon-here\r\n\r\n",
    "no_host": b"GET / HTTP/1.1\r\n\r\n",
    "two_hosts": b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
    "empty_line_first": b"\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
    "version_2": b"GET / HTTP/2.0\r\nHost: a\r\n\r\n",
    "garbage": b"GARBAGE\r\n\r\n",
    "odd_target_form": b"POST h:ttp://h/x HTTP/1.1\r\nHost: u\r\nContent-Length: 0\r\n\r\n",  # fuzz found
}


VALID = (b"POST /route HTTP/1.1\r\nHost: u\r\nContent-Length: 2\r\n\r\n{}"
         b"PUT /a?b=1 HTTP/1.1\r\nHost: u\r\nTransfer-Encoding: chunked\r\n\r\n"
         b"2;a=b\r\nhi\r\n0\r\nX-T: 1\r\n\r\n"
         b"GET / HTTP/1.1\r\nHost: u\r\n\r\n")


REQUESTS: list[tuple[str, str, dict[str, Any]]] = [
    ("POST", "/route", {"json": {"ticket_id": "t-1",
                                 "ticket": {"subject": "charged twice", "email": "x@y"}}}),
    ("POST", "/route", {"json": {"ticket_id": "t-2", "ticket": {"subject": "app crash"}}}),
    ("GET", "/error", {}),
    ("GET", "/teapot", {}),
    ("GET", "/large", {}),
    ("GET", "/stream", {}),
    ("GET", "/gzip", {"headers": {"Accept-Encoding": "gzip"}}),
    ("GET", "/nowhere?x=1&y=%20z", {}),
    ("HEAD", "/large", {}),
    ("GET", "/empty", {}),
    ("GET", "/empty", {"headers": {"If-None-Match": '"v1"'}}),
    ("PUT", "/echo?a=1&a=2", {"data": b"small body", "headers": {"X-Trace": "abc", "X-Multi": "1"}}),
    ("POST", "/echo", {"data": BIG_REQUEST, "headers": {"Content-Type": "application/octet-stream"}}),
]


async def fetch(session: aiohttp.ClientSession, base: str, method: str, path: str,
                kwargs: dict[str, Any]) -> tuple[int, str, list[tuple[str, str]], bytes]:
    """Status, reason, end-to-end headers (in order) and raw body bytes."""
    if isinstance(kwargs.get("data"), bytes) and len(kwargs["data"]) > 1024 * 1024:
        kwargs = {**kwargs, "data": io.BytesIO(kwargs["data"])}  # aiohttp warns on large raw bytes
    async with session.request(method, base + path, **kwargs) as resp:
        body = await resp.read()
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in resp.raw_headers
                   if k.decode("latin-1").lower() not in HOP_BY_HOP]
        return resp.status, resp.reason or "", headers, body


@contextlib.asynccontextmanager
async def proxy_stack(tmp_path: Path, scorer_endpoint: str, mode: str = "process", **overrides: Any
                      ) -> AsyncIterator[tuple[str, str, str]]:
    """Upstream, sidecar API and proxy, all running; yields (upstream URL, proxy URL, API URL).

    ``mode`` "process": the relay in its own process (the default in production); "in_process": on the
    sidecar's loop.
    """
    async with serve(upstream_app()) as upstream:
        catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_endpoint)})
        settings = settings_for(tmp_path, catalog, upstream_url=upstream, proxy_port=0, **overrides)
        async with running_sidecar(settings) as (api, core):
            run = running_proxy_process if mode == "process" else running_proxy
            async with run(settings, core) as url:
                yield upstream, url, api


async def raw_exchange(url: str, data: bytes, until: bytes, timeout_s: float = 5.0) -> bytes:
    """Send raw bytes on one connection; read until ``until`` has been seen (or the peer closes)."""
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(data)
    got = b""
    try:
        async with asyncio.timeout(timeout_s):
            while until not in got:
                chunk = await reader.read(65536)
                if not chunk:
                    break
                got += chunk
    finally:
        writer.close()
    return got


def route_request(ticket_id: str, subject: str) -> bytes:
    """One raw POST /route with a JSON body."""
    body = json.dumps({"ticket_id": ticket_id, "ticket": {"subject": subject}}).encode()
    return (b"POST /route HTTP/1.1\r\nHost: prod\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body))


def without_dates(raw: bytes) -> bytes:
    """Drop Date headers: the upstream stamps its own on some answers; everything else must match."""
    return b"\r\n".join(line for line in raw.split(b"\r\n") if not line.startswith(b"Date: "))


@contextlib.asynccontextmanager
async def relay_stack(tmp_path: Path, scorer_url: str, python_flags: tuple[str, ...] = ()
                      ) -> AsyncIterator[tuple[str, ProxyProcess]]:
    """Upstream, sidecar and a relay process started with ``python_flags``; yields (proxy URL, process)."""
    async with serve(upstream_app()) as upstream:
        catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url)})
        settings = settings_for(tmp_path, catalog, upstream_url=upstream, proxy_port=0)
        async with running_sidecar(settings) as (_api, core):
            proxy = ProxyProcess(settings, core, python_flags)
            url = await proxy.start()
            try:
                yield url, proxy
            finally:
                await proxy.stop()


N = 60


@contextlib.contextmanager
def threaded_upstream() -> Iterator[str]:
    """`_Upstream` served from a thread (it answers while the sidecar's loop is blocked); its URL."""
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{upstream.server_port}"
    finally:
        upstream.shutdown()
        upstream.server_close()


def claimed_client(port: int, statuses: list[int]) -> None:
    """``N`` claimed requests of ``STATE_BYTES`` in turn on one connection; their statuses."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for i in range(N):
        body = json.dumps({"ticket_id": f"h-{i}", "ticket": {"subject": "x" * STATE_BYTES}})
        conn.request("POST", "/route", body, {"Content-Type": "application/json"})
        response = conn.getresponse()
        response.read()
        statuses.append(response.status)
    conn.close()


class _Upstream(BaseHTTPRequestHandler):
    """Answers every ``POST /route`` at once with a team (an outcome that is one of the options)."""

    def do_POST(self) -> None:
        """Read the body, answer 200."""
        self.rfile.read(int(self.headers["Content-Length"]))
        body = b'{"team": "billing"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        """Quiet."""
