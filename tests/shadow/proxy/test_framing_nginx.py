"""The framer against nginx, where nginx is installed: what nginx forwards is what the framer framed.

nginx (as a reverse proxy in front of a recording upstream) is fed each stream on its own connection.
Wherever the framer stays on, nginx must forward the same requests (method, target, body) and refuse
none of them; where nginx reads the stream otherwise, the framer must be off.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
from typing import TYPE_CHECKING

import pytest
from aiohttp import web

from tests.harness import free_port
from tests.shadow.harness import serve
from tests.shadow.proxy.harness import SMUGGLING, VALID
from tests.shadow.proxy.parsers import framer_reading

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

# `make` installs it; /usr/sbin is not on every PATH
NGINX = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin")
pytestmark = pytest.mark.skipif(NGINX is None, reason="nginx is not installed")

STREAMS = {**SMUGGLING, "valid": VALID,
           "pipelined_lengths": b"POST /a HTTP/1.1\r\nHost: u\r\nContent-Length: 3\r\n\r\nabc"
                                b"PUT /b?x=1 HTTP/1.1\r\nHost: u\r\ncontent-length: 0\r\n\r\n",
           "chunk_ext": b"POST /c HTTP/1.1\r\nHost: u\r\nTransfer-Encoding: chunked\r\n\r\n"
                        b"1;x=y\r\na\r\n2\r\nbc\r\n0\r\n\r\n",
           "obs_text_value": b"GET /d HTTP/1.1\r\nHost: u\r\nX-A: caf\xe9\r\n\r\n",
           "http10": b"GET /e HTTP/1.0\r\nHost: u\r\n\r\nGET /f HTTP/1.1\r\nHost: u\r\n\r\n"}

CONF = """daemon off; master_process off; worker_processes 1; pid {d}/nginx.pid; error_log {d}/error.log;
events {{ worker_connections 64; }}
http {{
  access_log off;
  client_body_temp_path {d}/body; proxy_temp_path {d}/proxy; fastcgi_temp_path {d}/fcgi;
  uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;
  server {{
    listen 127.0.0.1:{port};
    location / {{ proxy_pass {upstream}; proxy_http_version 1.1; proxy_ignore_client_abort on; }}
  }}
}}
"""


@contextlib.asynccontextmanager
async def nginx_in_front(tmp_path: Path) -> AsyncIterator[tuple[int, list[tuple[str, str, bytes]]]]:
    """An nginx on a free port proxying to a recording upstream; yields (port, what the upstream got)."""
    seen: list[tuple[str, str, bytes]] = []

    async def record(request: web.Request) -> web.Response:
        seen.append((request.method, request.raw_path, await request.read()))
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", record)
    async with serve(app) as upstream:
        port = free_port()
        conf = tmp_path / "nginx.conf"
        conf.write_text(CONF.format(d=tmp_path, port=port, upstream=upstream), encoding="utf-8")
        assert NGINX is not None
        proc = await asyncio.create_subprocess_exec(NGINX, "-p", str(tmp_path), "-c", str(conf),
                                                    "-e", str(tmp_path / "error.log"))
        try:
            for _ in range(200):  # until nginx accepts
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.1):
                    break
                await asyncio.sleep(0.05)
            yield port, seen
        finally:
            proc.terminate()
            await proc.wait()


async def _through_nginx(port: int, data: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    got = b""
    try:
        async with asyncio.timeout(3):
            while chunk := await reader.read(65536):
                got += chunk
    except TimeoutError:
        pass  # nginx keeps an idle keep-alive connection open: what it answered is in
    finally:
        writer.close()
    return got


async def test_nginx_forwards_what_the_framer_framed(tmp_path: Path) -> None:
    """Each stream through nginx: where the framer stays on, nginx forwarded exactly its requests."""
    wrong = {}
    async with nginx_in_front(tmp_path) as (port, seen):
        for name, data in STREAMS.items():
            framed, off = framer_reading(data, len(data))
            if off is not None and off not in {"connection_close", "upgrade"}:
                continue
            seen.clear()
            answer = await _through_nginx(port, data)
            refused = b" 400 " in answer or b" 501 " in answer
            if seen[:len(framed.requests)] != framed.requests or (refused and off is None):
                wrong[name] = (list(seen), framed.requests, answer[:60])
    assert wrong == {}
