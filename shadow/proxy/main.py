"""The relay process's entry point (started by the supervisor, not by hand; `main` reads SPEC_JSON).

The supervisor runs it as ``python -I -c BOOTSTRAP PACKAGE_ROOT SPEC_JSON`` with a minimal environment
and ``/`` as its working folder: no token or key in its environment, and no module from the working
folder or PYTHONPATH can be imported in its place.

It serves the listening socket it inherits with a `ProxyServer` and reports over the channel. It holds
no secret and no catalog: only the upstream, the timeouts and the claimed routes, and it loads only the
relay, framing, the channel and errors (``tests/shadow/proxy/test_relay_process.py`` checks).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import json
import resource
import signal
import socket
import sys
from pathlib import Path
from typing import Any

from contracts.tasks import stop_tasks
from shadow.proxy.channel import ChannelHooks, encode_json
from shadow.proxy.relay import ProxyConfig, ProxyServer, Upstream

COUNTERS_EVERY_S = 0.5


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
                         spec["keep_bytes"], frozenset((m, p) for m, p in spec["routes"]),
                         spec["idle_timeout_s"], spec["max_connections"], spec["held_bytes"])
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
        hooks.send_counters(_health(server))
        if channel.closed.done():
            break
    await server.close(spec["grace_s"])
    hooks.send_counters()
    transport.close()
    await channel.closed
    await stop_tasks(stopped)


def _health(server: ProxyServer) -> dict[str, int]:
    """Client connections, bytes held for mirroring (now, peak), descriptors (``/healthz`` shows them)."""
    gauges = {"connections": len(server.connections), "held_bytes": server.held.held,
              "held_peak_bytes": server.held.peak}
    with contextlib.suppress(OSError):
        fds = sum(1 for _ in Path("/proc/self/fd").iterdir())
        return {**gauges, "fds": fds, "fd_limit": resource.getrlimit(resource.RLIMIT_NOFILE)[0]}
    return gauges


def _raise_fd_limit() -> None:
    """Soft RLIMIT_NOFILE up to the hard limit: each client holds two descriptors (it and its upstream)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def main() -> None:
    """Run the relay until SIGTERM (started by `ProxyProcess`, not by hand)."""
    _die_with_parent()
    _raise_fd_limit()
    spec = json.loads(sys.argv[1])
    try:
        import uvloop  # noqa: PLC0415  (optional: faster loop)

        uvloop.run(relay_main(spec))
    except ImportError:
        asyncio.run(relay_main(spec))




if __name__ == "__main__":
    main()
