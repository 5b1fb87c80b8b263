"""The server as a real process: graceful SIGTERM (during load and with queued work), exit 0."""

from __future__ import annotations

import asyncio
import signal
import time
from typing import TYPE_CHECKING

import aiohttp
import pytest

from tests.harness import free_port
from tests.scorer.harness import PROCESS_DECISION as DECISION
from tests.scorer.harness import ping_status, start_server

if TYPE_CHECKING:
    from pathlib import Path


async def test_sigterm_during_model_load_exits_zero(model_path: Path, tmp_path: Path) -> None:
    """SIGTERM while /ping still answers 503 (model loading): the process exits 0 well inside 30 s."""
    port = free_port()
    proc = start_server(model_path, port, tmp_path / "server.log")
    url = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as session:
            for _ in range(1500):
                status = await ping_status(session, url)
                if status is not None:
                    break
                await asyncio.sleep(0.01)
        assert status == 503, "the listener opens before the model is loaded"
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert time.monotonic() - started < 30
    finally:
        proc.kill()
        proc.wait()


async def metric(session: aiohttp.ClientSession, url: str, name: str) -> float:
    """One unlabelled sample from /metrics (0 when absent)."""
    async with session.get(f"{url}/metrics") as response:
        text = await response.text()
    for line in text.splitlines():
        if line.startswith(f"{name} "):
            return float(line.split()[1])
    return 0.0


async def test_sigterm_with_queued_work_answers_everything(model_path: Path, tmp_path: Path) -> None:
    """SIGTERM with requests queued: every accepted request is answered (200, or 503 ``not_ready``).

    Each request has its own connection, and SIGTERM is sent only once the server's metrics show all
    of them accepted (taken by the worker or waiting in the queue), so no connection error of any kind
    is allowed for them. After the exit, a new connection is refused (ECONNREFUSED), the one case that
    counts as refused.
    """
    port = free_port()
    proc = start_server(model_path, port, tmp_path / "server.log")
    url = f"http://127.0.0.1:{port}"
    count = 8
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as probe:
            for _ in range(3000):
                if await ping_status(probe, url) == 200:
                    break
                await asyncio.sleep(0.02)
            connector = aiohttp.TCPConnector(force_close=True, limit=0)
            async with aiohttp.ClientSession(
                connector=connector, timeout=aiohttp.ClientTimeout(total=60)
            ) as session:

                async def one(i: int) -> tuple[int, str]:
                    async with session.post(
                        f"{url}/invocations", json={**DECISION, "decision_id": f"q{i}"}
                    ) as r:
                        code = "" if r.status == 200 else (await r.json())["error"]["code"]
                        return r.status, code

                tasks = [asyncio.create_task(one(i)) for i in range(count)]
                for _ in range(3000):  # accepted = taken by the worker + still queued
                    taken = await metric(probe, url, "semif_queue_wait_seconds_count")
                    if taken + await metric(probe, url, "semif_queue_depth") >= count:
                        break
                    await asyncio.sleep(0.01)
                assert taken < count, "SIGTERM must land with work still queued"
                proc.send_signal(signal.SIGTERM)
                answers = await asyncio.wait_for(asyncio.gather(*tasks), timeout=60)
        assert set(answers) <= {(200, ""), (503, "not_ready")}, answers
        assert (200, "") in answers
        assert proc.wait(timeout=30) == 0
        with pytest.raises(aiohttp.ClientConnectorError) as refused:
            async with aiohttp.ClientSession() as late, late.get(f"{url}/ping"):
                pass
        assert isinstance(refused.value.os_error, ConnectionRefusedError)
        assert "Traceback" not in (tmp_path / "server.log").read_text()
    finally:
        proc.kill()
        proc.wait()
