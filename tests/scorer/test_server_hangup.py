"""A client that hangs up while its request waits in the queue: the model never scores it.

The first request holds the model (a long state); the second is sent and its connection closed while it
waits; a third, normal one follows. The queue-wait histogram counts only what reached the model: two.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import TYPE_CHECKING

import aiohttp

from tests.harness import free_port
from tests.scorer.harness import PROCESS_DECISION as DECISION
from tests.scorer.harness import ping_status, start_server

if TYPE_CHECKING:
    from pathlib import Path

LONG = {**DECISION, "decision_id": "long", "state": "My card was charged twice this month. " * 60}


def _raw(decision: dict[str, object]) -> bytes:
    body = json.dumps(decision).encode()
    return (b"POST /invocations HTTP/1.1\r\nHost: scorer\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body))


async def test_a_request_whose_client_hung_up_is_never_scored(model_path: Path, tmp_path: Path) -> None:
    """Two of three requests reach the model; the one whose client left while queued is skipped."""
    port = free_port()
    proc = start_server(model_path, port, tmp_path / "server.log")
    url = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as session:
            for _ in range(3000):
                if await ping_status(session, url) == 200:
                    break
                await asyncio.sleep(0.02)
            long_call = asyncio.create_task(session.post(f"{url}/invocations", json=LONG))
            for _ in range(500):  # until the long request holds the model
                async with session.get(f"{url}/metrics") as resp:
                    if re.search(r"^semif_queue_wait_seconds_count 1\.0$", await resp.text(), re.MULTILINE):
                        break
                await asyncio.sleep(0.01)
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(_raw({**DECISION, "decision_id": "gone"}))
            await writer.drain()
            for _ in range(500):  # until it is queued behind the long one
                async with session.get(f"{url}/metrics") as resp:
                    if re.search(r"^semif_queue_depth 1\.0$", await resp.text(), re.MULTILINE):
                        break
                await asyncio.sleep(0.01)
            writer.close()
            await writer.wait_closed()
            del reader
            async with await long_call as resp:
                assert resp.status == 200
            async with session.post(f"{url}/invocations", json=DECISION) as resp:
                assert resp.status == 200
            async with session.get(f"{url}/metrics") as resp:
                metrics = await resp.text()
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    assert re.search(r"^semif_queue_wait_seconds_count 2\.0$", metrics, re.MULTILINE), metrics
