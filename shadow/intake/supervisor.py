"""Proxy mode's relay in its own process: production traffic never waits behind the mirror's work.

    sidecar process (core)                          relay process (python -I, minimal env, cwd /)
      binds the proxy port  -- listening fd ------>   serves it: ProxyServer (relay.py)
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
import json
import logging
import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contracts.tasks import stop_tasks
from shadow.errors import ShadowError
from shadow.intake.extract import MirrorHooks, catalog_routes, count_relay_drops, mirror_messages
from shadow.keys import METRICS
from shadow.proxy.channel import FRAME, decode_exchange
from shadow.proxy.relay import ProxyConfig, ProxyServer, Upstream

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from aiohttp import web

    from shadow.metrics import Metrics
    from shadow.settings import ShadowSettings

log = logging.getLogger(__name__)

READY_TIMEOUT_S = 30.0
PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
"""The folder holding this ``shadow`` package: the relay imports the same code as the sidecar."""
BOOTSTRAP = "import sys; sys.path.insert(0, sys.argv.pop(1)); from shadow.proxy.main import main; main()"
"""The relay's ``-c`` program: isolated mode (``-I``) puts neither the working folder nor PYTHONPATH on
``sys.path``, so the package's own folder is put first, by name, and nothing else."""
RELAY_ENV_PASSED = ("SSL_CERT_FILE", "SSL_CERT_DIR", "TZ")
"""The only variables the relay inherits (TLS trust for an https upstream); never a token or key."""


def relay_config(settings: ShadowSettings, routes: frozenset[tuple[str, str]]) -> ProxyConfig:
    """The relay's part of the sidecar settings (no secret, no catalog: only the claimed routes)."""
    return ProxyConfig(Upstream.parse(settings.upstream_url), settings.upstream_connect_timeout_s,
                       settings.upstream_read_timeout_s, settings.mirror_max_bytes, routes,
                       settings.proxy_idle_timeout_s, settings.proxy_max_connections,
                       settings.proxy_held_bytes)



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
            if group == "health":
                metrics.relay_health.update(series)
                continue
            if group in ("handoff_full", "relay_memory"):
                self._by_route(group, series)
                continue
            for label, total in series.items():
                delta = total - self.seen.get((group, label), 0)
                self.seen[(group, label)] = total
                if delta > 0:
                    family = {"answered": metrics.proxy_requests, "refused": metrics.proxy_refused}.get(
                        group, metrics.proxy_unmirrored)
                    family.labels(label).inc(delta)


    def _by_route(self, reason: str, series: dict[str, int]) -> None:
        """Count what the relay had no room for in ``drops``, per candidate of the route's type."""
        for route, total in series.items():
            delta = total - self.seen.get((reason, route), 0)
            self.seen[(reason, route)] = total
            if delta > 0:
                count_relay_drops(self.owner.core, route, delta, reason)


class ProxyProcess:
    """Runs, watches and restarts the relay process; mirrors what it hands over."""

    def __init__(self, settings: ShadowSettings, core: web.Application,
                 python_flags: tuple[str, ...] = ()) -> None:
        self.settings = settings
        self.python_flags = python_flags
        """Extra interpreter options for the relay (tests pass ``("-X", "importtime")``)."""
        self.core = core
        self.metrics: Metrics = core[METRICS]
        self.config = relay_config(settings, catalog_routes(core))
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
        self.sock = socket.create_server((settings.proxy_host, settings.proxy_port or 0), backlog=1024)
        self.sock.set_inheritable(True)
        self.folder = Path(tempfile.mkdtemp(prefix="shadow-proxy-"))  # 0700: only this user can connect
        path = self.folder / "channel.sock"
        self.channel = await asyncio.get_running_loop().create_unix_server(lambda: _ChannelReader(self),
                                                                           str(path))
        self.metrics.relay_health.setdefault("restarts", 0)
        await self._spawn()
        self.watcher = asyncio.create_task(self._watch(), name="shadow-proxy-watch")
        return f"http://{settings.proxy_host}:{self.sock.getsockname()[1]}"

    def _spec(self) -> dict[str, Any]:
        assert self.sock is not None
        assert self.folder is not None
        c = self.config
        return {"fd": self.sock.fileno(), "channel": str(self.folder / "channel.sock"),
                "upstream": {"host": c.upstream.host, "port": c.upstream.port, "tls": c.upstream.tls},
                "connect_timeout_s": c.connect_timeout_s, "read_timeout_s": c.read_timeout_s,
                "keep_bytes": c.keep_bytes, "routes": sorted(c.routes),
                "idle_timeout_s": c.idle_timeout_s, "max_connections": c.max_connections,
                "held_bytes": c.held_bytes, "handoff_bytes": self.settings.proxy_handoff_bytes,
                "grace_s": self.settings.shutdown_grace_s}

    async def _spawn(self) -> None:
        assert self.sock is not None
        self.ready = asyncio.get_running_loop().create_future()
        env = {name: os.environ[name] for name in RELAY_ENV_PASSED if name in os.environ}
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-I", *self.python_flags, "-c", BOOTSTRAP, PACKAGE_ROOT, json.dumps(self._spec()),
            pass_fds=(self.sock.fileno(),), stdin=asyncio.subprocess.DEVNULL, env=env, cwd="/")
        exited = asyncio.create_task(self.proc.wait())
        done, _ = await asyncio.wait([self.ready, exited], timeout=READY_TIMEOUT_S,
                                     return_when=asyncio.FIRST_COMPLETED)
        await stop_tasks(exited)
        if self.ready not in done:
            if self.proc.returncode is None:
                self.proc.kill()
                await self.proc.wait()
            raise ShadowError(f"the proxy relay did not start (exit code {self.proc.returncode})")

    async def _watch(self) -> None:
        """Restart the relay if it ever exits while the sidecar runs."""
        while True:
            assert self.proc is not None
            code = await self.proc.wait()
            if self.stopping:
                return
            log.error("proxy relay exited with code %s; restarting it", code)
            self.metrics.proxy_restarts.inc()
            self.metrics.relay_health["restarts"] = self.metrics.relay_health.get("restarts", 0) + 1
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
        await stop_tasks(self.watcher)
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
async def running_proxy_process(settings: ShadowSettings, core: web.Application,
                                python_flags: tuple[str, ...] = ()) -> Any:
    """The relay process for the duration of the block; yields the proxy's base URL."""
    proxy = ProxyProcess(settings, core, python_flags)
    url = await proxy.start()
    try:
        yield url
    finally:
        await proxy.stop()



@contextlib.asynccontextmanager
async def running_proxy(settings: ShadowSettings, core: web.Application,
                        port: int | None = None) -> AsyncIterator[str]:
    """Run the relay in this process, on this loop (tests; ``SHADOW_PROXY_PROCESS=false``); yield its URL.

    Every relayed request then waits behind the mirror's work on this loop (at 500 mirrored requests/s on
    2 cores the loop is ~86% busy: p50 +4.5 ms, docs/performance.md), so it says so at start.
    """
    log.warning("relay on the sidecar's loop", extra={"fields": {
        "event": "relay_in_process", "setting": "SHADOW_PROXY_PROCESS",
        "why": "relayed requests wait behind the mirror's work; for tests and low rates"}})
    server = ProxyServer(relay_config(settings, catalog_routes(core)), MirrorHooks(core))
    bound = await server.start(settings.proxy_host, port if port is not None else settings.proxy_port or 0)
    try:
        yield f"http://{settings.proxy_host}:{bound}"
    finally:
        await server.close(settings.shutdown_grace_s)

