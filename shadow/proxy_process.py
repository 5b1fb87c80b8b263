"""Proxy mode's relay in its own process: production traffic never waits behind the mirror's work.

    sidecar process (core)                          relay process (python -m shadow.proxy_process)
      binds the proxy port  -- listening fd ------>   serves it: ProxyServer (shadow.proxy)
      ProxyChannel (Unix socket)  <-- frames ------   ChannelHooks: finished exchanges on claimed
      mirror_messages(...) -> Mirror.offer             routes, counters every 0.5 s, "ready"
      ProxyProcess: spawns, restarts, stops it

The relay holds no secret and no catalog: only the upstream, the timeouts and the claimed routes. It
never waits for the sidecar: a frame that does not fit in ``SHADOW_PROXY_HANDOFF_BYTES`` of unsent
bytes is dropped and counted (``shadow_proxy_unmirrored_total{reason="handoff_full"}``). The listening
socket belongs to the sidecar, so a relay that dies is restarted without refusing connections (they wait
in the backlog), and the relay gets SIGTERM when the sidecar process dies (Linux ``PR_SET_PDEATHSIG``).

Frames: a type byte, a 4-byte big-endian length, the payload. ``X`` an exchange (four length-prefixed
blobs: request head, request body, response head, response body; a body over the mirror cap has length
0xFFFFFFFF), ``C`` cumulative counters as JSON, ``R`` ready with the bound port as JSON.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import json
import logging
import shutil
import signal
import socket
import struct
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shadow.http1 import Message
from shadow.keys import METRICS
from shadow.proxy import ProxyConfig, ProxyServer, Upstream, catalog_routes, mirror_messages

if TYPE_CHECKING:
    from aiohttp import web

    from shadow.metrics import Metrics
    from shadow.settings import ShadowSettings

log = logging.getLogger(__name__)

FRAME = struct.Struct("!cI")
BLOBS = struct.Struct("!IIII")
NONE = 0xFFFFFFFF
COUNTERS_EVERY_S = 0.5
READY_TIMEOUT_S = 30.0


# frames ------------------------------------------------------------------------------------------------

def encode_head(message: Message) -> bytes:
    """The start line and headers as CRLF-separated lines."""
    lines = [" ".join(message.start)]
    lines.extend(f"{name}: {value}" for name, value in message.headers)
    return "\r\n".join(lines).encode("latin-1")


def decode_head(data: bytes, body: bytes | None) -> Message:
    """The inverse of `encode_head`, with the body."""
    lines = data.decode("latin-1").split("\r\n")
    start = lines[0].split(" ", 2)
    headers = [(name, value) for name, _, value in (line.partition(": ") for line in lines[1:])]
    return Message((start[0], start[1], start[2] if len(start) > 2 else ""), headers, body, complete=True)


def encode_exchange(request: Message, response: Message) -> bytes:
    """One ``X`` frame."""
    blobs = [encode_head(request), request.body, encode_head(response), response.body]
    sizes = [NONE if b is None else len(b) for b in blobs]
    payload = b"".join([BLOBS.pack(*sizes), *(b for b in blobs if b)])
    return FRAME.pack(b"X", len(payload)) + payload


def decode_exchange(payload: bytes) -> tuple[Message, Message]:
    """The inverse of `encode_exchange` (without the frame header)."""
    sizes = BLOBS.unpack_from(payload)
    pos = BLOBS.size
    blobs: list[bytes | None] = []
    for size in sizes:
        if size == NONE:
            blobs.append(None)
            continue
        blobs.append(payload[pos:pos + size])
        pos += size
    req_head, req_body, resp_head, resp_body = blobs
    return decode_head(req_head or b"", req_body), decode_head(resp_head or b"", resp_body)


def encode_json(kind: bytes, value: object) -> bytes:
    """A ``C`` or ``R`` frame."""
    payload = json.dumps(value).encode()
    return FRAME.pack(kind, len(payload)) + payload


# relay side ------------------------------------------------------------------------------------------

class ChannelHooks:
    """The relay's `ProxyHooks`: exchanges and counters go to the sidecar over the channel."""

    def __init__(self, transport: asyncio.Transport, limit: int) -> None:
        self.transport = transport
        self.limit = limit
        self.answered_by_class: dict[str, int] = {}
        self.unmirrored_by_reason: dict[str, int] = {}

    def answered(self, status: int) -> None:
        """Counted here, sent with the next counters frame."""
        key = f"{status // 100}xx"
        self.answered_by_class[key] = self.answered_by_class.get(key, 0) + 1

    def exchange(self, request: Message, response: Message) -> None:
        """One ``X`` frame, unless the channel is gone or its unsent bytes are over the limit."""
        if self.transport.is_closing():
            self.unmirrored("sidecar_unavailable")
        elif self.transport.get_write_buffer_size() > self.limit:
            self.unmirrored("handoff_full")
        else:
            self.transport.write(encode_exchange(request, response))

    def unmirrored(self, reason: str, n: int = 1) -> None:
        """Counted here, sent with the next counters frame."""
        self.unmirrored_by_reason[reason] = self.unmirrored_by_reason.get(reason, 0) + n

    def send_counters(self) -> None:
        """One ``C`` frame with every counter so far."""
        if not self.transport.is_closing():
            self.transport.write(encode_json(b"C", {"answered": self.answered_by_class,
                                                    "unmirrored": self.unmirrored_by_reason}))


class _ChannelClient(asyncio.Protocol):
    def __init__(self) -> None:
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_lost(self, exc: Exception | None) -> None:  # noqa: ARG002  (asyncio's signature)
        if not self.closed.done():
            self.closed.set_result(None)


def _die_with_parent() -> None:
    """SIGTERM this process when the sidecar that started it dies (Linux; elsewhere a no-op)."""
    with contextlib.suppress(OSError, AttributeError):
        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


async def relay_main(spec: dict[str, Any]) -> None:
    """Serve the inherited listening socket until SIGTERM, reporting over the channel."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    transport, channel = await loop.create_unix_connection(_ChannelClient, spec["channel"])
    hooks = ChannelHooks(transport, spec["handoff_bytes"])
    config = ProxyConfig(Upstream(**spec["upstream"]), spec["connect_timeout_s"], spec["read_timeout_s"],
                         spec["keep_bytes"], frozenset((m, p) for m, p in spec["routes"]))
    server = ProxyServer(config, hooks)
    port = await server.start(sock=socket.socket(fileno=spec["fd"]))
    gc.collect()
    gc.freeze()  # start-up objects never walked again by a collection (docs/performance.md, Sidecar)
    transport.write(encode_json(b"R", {"port": port}))
    stopped: asyncio.Future[Any] = asyncio.create_task(stop.wait())
    waits: set[asyncio.Future[Any]] = {stopped, channel.closed}
    while not stop.is_set():  # also stop when the sidecar closes the channel
        await asyncio.wait(waits, timeout=COUNTERS_EVERY_S,
                           return_when=asyncio.FIRST_COMPLETED)
        hooks.send_counters()
        if channel.closed.done():
            break
    await server.close(spec["grace_s"])
    hooks.send_counters()
    transport.close()
    await channel.closed
    stopped.cancel()


def main() -> None:
    """``python -m shadow.proxy_process SPEC_JSON``: started by `ProxyProcess`, not by hand."""
    _die_with_parent()
    spec = json.loads(sys.argv[1])
    try:
        import uvloop  # noqa: PLC0415  (optional: faster loop)

        uvloop.run(relay_main(spec))
    except ImportError:
        asyncio.run(relay_main(spec))


# sidecar side --------------------------------------------------------------------------------------

class _ChannelReader(asyncio.Protocol):
    """Reads one relay's frames and applies them: exchanges to the mirror, counters to /metrics."""

    def __init__(self, owner: ProxyProcess) -> None:
        self.owner = owner
        self.buf = b""
        self.seen: dict[tuple[str, str], int] = {}
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        owner.readers.add(self)

    def connection_lost(self, exc: Exception | None) -> None:  # noqa: ARG002  (asyncio's signature)
        self.owner.readers.discard(self)
        if not self.closed.done():
            self.closed.set_result(None)

    def data_received(self, data: bytes) -> None:
        buf = self.buf + data if self.buf else data
        pos, end = 0, len(buf)
        while end - pos >= FRAME.size:
            kind, size = FRAME.unpack_from(buf, pos)
            if end - pos - FRAME.size < size:
                break
            payload = buf[pos + FRAME.size:pos + FRAME.size + size]
            pos += FRAME.size + size
            self.owner.frame(kind, payload, self)
        self.buf = buf[pos:]

    def counters(self, value: dict[str, dict[str, int]], metrics: Metrics) -> None:
        """Add what grew since this relay's previous snapshot."""
        for group, series in value.items():
            for label, total in series.items():
                delta = total - self.seen.get((group, label), 0)
                self.seen[(group, label)] = total
                if delta > 0:
                    family = metrics.proxy_requests if group == "answered" else metrics.proxy_unmirrored
                    family.labels(label).inc(delta)


class ProxyProcess:
    """Runs, watches and restarts the relay process; mirrors what it hands over."""

    def __init__(self, settings: ShadowSettings, core: web.Application) -> None:
        self.settings = settings
        self.core = core
        self.metrics: Metrics = core[METRICS]
        self.config = ProxyConfig.from_settings(settings, catalog_routes(core))
        self.sock: socket.socket | None = None
        self.folder: Path | None = None
        self.channel: asyncio.Server | None = None
        self.proc: asyncio.subprocess.Process | None = None
        self.ready: asyncio.Future[int] | None = None
        self.watcher: asyncio.Task[None] | None = None
        self.readers: set[_ChannelReader] = set()
        self.stopping = False

    async def start(self) -> str:
        """Bind the port, start the relay, wait until it serves; return the proxy's base URL."""
        settings = self.settings
        self.sock = socket.create_server((settings.host, settings.proxy_port or 0), backlog=1024)
        self.sock.set_inheritable(True)
        self.folder = Path(tempfile.mkdtemp(prefix="shadow-proxy-"))  # 0700: only this user can connect
        path = self.folder / "channel.sock"
        self.channel = await asyncio.get_running_loop().create_unix_server(lambda: _ChannelReader(self),
                                                                           str(path))
        await self._spawn()
        self.watcher = asyncio.create_task(self._watch(), name="shadow-proxy-watch")
        return f"http://{settings.host}:{self.sock.getsockname()[1]}"

    def _spec(self) -> dict[str, Any]:
        assert self.sock is not None
        assert self.folder is not None
        c = self.config
        return {"fd": self.sock.fileno(), "channel": str(self.folder / "channel.sock"),
                "upstream": {"host": c.upstream.host, "port": c.upstream.port, "tls": c.upstream.tls},
                "connect_timeout_s": c.connect_timeout_s, "read_timeout_s": c.read_timeout_s,
                "keep_bytes": c.keep_bytes, "routes": sorted(c.routes),
                "handoff_bytes": self.settings.proxy_handoff_bytes, "grace_s": self.settings.shutdown_grace_s}

    async def _spawn(self) -> None:
        assert self.sock is not None
        self.ready = asyncio.get_running_loop().create_future()
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "shadow.proxy_process", json.dumps(self._spec()),
            pass_fds=(self.sock.fileno(),), stdin=asyncio.subprocess.DEVNULL)
        exited = asyncio.create_task(self.proc.wait())
        done, _ = await asyncio.wait([self.ready, exited], timeout=READY_TIMEOUT_S,
                                     return_when=asyncio.FIRST_COMPLETED)
        if self.ready not in done:
            exited.cancel()
            if self.proc.returncode is None:
                self.proc.kill()
                await self.proc.wait()
            from shadow.errors import ShadowError  # noqa: PLC0415

            raise ShadowError(f"the proxy relay did not start (exit code {self.proc.returncode})")
        exited.cancel()

    async def _watch(self) -> None:
        """Restart the relay if it ever exits while the sidecar runs."""
        while True:
            assert self.proc is not None
            code = await self.proc.wait()
            if self.stopping:
                return
            log.error("proxy relay exited with code %s; restarting it", code)
            self.metrics.proxy_restarts.inc()
            await asyncio.sleep(0.1)
            try:
                await self._spawn()
            except Exception:
                log.exception("proxy relay restart failed; retrying in 1 s")
                await asyncio.sleep(1.0)

    def frame(self, kind: bytes, payload: bytes, reader: _ChannelReader) -> None:
        """Apply one frame from a relay."""
        if kind == b"X":
            request, response = decode_exchange(payload)
            mirror_messages(self.core, request, response)
        elif kind == b"C":
            reader.counters(json.loads(payload), self.metrics)
        elif kind == b"R" and self.ready is not None and not self.ready.done():
            self.ready.set_result(int(json.loads(payload)["port"]))

    async def stop(self) -> None:
        """SIGTERM the relay (it drains for up to the shutdown grace), then release the port."""
        self.stopping = True
        if self.watcher is not None:
            self.watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.watcher
        if self.proc is not None and self.proc.returncode is None:
            self.proc.terminate()
            try:
                await asyncio.wait_for(self.proc.wait(), self.settings.shutdown_grace_s + 5.0)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()
        closing = [r.closed for r in self.readers]
        if closing:  # the relay's last frames (final counters) are read before the channel goes
            await asyncio.wait(closing, timeout=5.0)
        if self.channel is not None:
            self.channel.close()
            await self.channel.wait_closed()
        if self.sock is not None:
            self.sock.close()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


@contextlib.asynccontextmanager
async def running_proxy_process(settings: ShadowSettings, core: web.Application) -> Any:
    """The relay process for the duration of the block; yields the proxy's base URL."""
    proxy = ProxyProcess(settings, core)
    url = await proxy.start()
    try:
        yield url
    finally:
        await proxy.stop()


if __name__ == "__main__":
    main()
