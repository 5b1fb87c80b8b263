"""The relay process ends with the sidecar: a SIGKILLed sidecar leaves no relay holding the proxy port.

The relay asks Linux for SIGTERM when its parent dies (``PR_SET_PDEATHSIG``, ``shadow/proxy/main.py``).
It also stops when its channel to the sidecar closes. This test kills the real ``semif-shadow sidecar
run`` with SIGKILL (none of its own clean-up runs) and waits for the relay to go; it fails when the relay
has neither way out (seen with both `_die_with_parent` and the channel's `connection_lost` disabled).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
from pathlib import Path

import aiohttp

from tests.harness import free_port
from tests.shadow.harness import serve, settings_for, sidecar_env, ticket_type, write_catalog
from tests.shadow.upstream import upstream_app


def children(pid: int) -> list[int]:
    """Pids whose parent is ``pid`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                stat = (entry / "stat").read_text()
                if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


async def test_the_relay_exits_when_the_sidecar_is_killed(scorer_url: str, tmp_path: Path) -> None:
    """SIGKILL the sidecar in proxy mode: its relay process exits and the proxy port can be bound again."""
    async with serve(upstream_app()) as upstream:
        catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url)})
        proxy_port = free_port()
        settings = settings_for(tmp_path, catalog, upstream_url=upstream, proxy_port=proxy_port,
                                port=free_port())
        cli = str(Path(sys.executable).parent / "semif-shadow")
        proc = await asyncio.create_subprocess_exec(cli, "sidecar", "run", env=sidecar_env(settings),
                                                    stderr=asyncio.subprocess.DEVNULL)
        relays: list[int] = []
        try:
            async with aiohttp.ClientSession() as session:
                for _ in range(1200):
                    with contextlib.suppress(aiohttp.ClientConnectionError):
                        async with session.get(f"http://127.0.0.1:{proxy_port}/healthz") as resp:
                            if resp.status in (200, 404):
                                break
                    assert proc.returncode is None, "the sidecar exited"
                    await asyncio.sleep(0.05)
            relays += [pid for pid in children(proc.pid) if b"shadow.proxy" in _cmdline(pid)]
            assert len(relays) == 1, [_cmdline(p) for p in children(proc.pid)]
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
            for _ in range(600):  # up to 30 s: the relay's own grace runs first
                if not alive(relays[0]):
                    break
                await asyncio.sleep(0.05)
            assert not alive(relays[0]), "the relay outlived its sidecar"
            with socket.socket() as sock:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind(("127.0.0.1", proxy_port))
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            for pid in relays:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)  # a relay that outlived its sidecar, on failure


def _cmdline(pid: int) -> bytes:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    return b""
