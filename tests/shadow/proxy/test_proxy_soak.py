"""Normal clients through the proxy while each attack runs: all served, all mirrored, nothing leaked.

Each attack (``attacks.py``) is bounded in count and runs beside four keep-alive clients posting 25
decisions each to a claimed route, with the relay in its own process (the default). Checked: every
normal request is answered 200 with its own answer (within a sanity bound only a hang breaks; the
latency itself is compared in ``bench/proxy_soak.py``), every normal decision is recorded, nothing
the attacker sent is, and once the attack stops the relay holds no connection.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING

import aiohttp
import pytest

from tests.shadow.harness import read_rows
from tests.shadow.proxy.attacks import ATTACKS, under_attack
from tests.shadow.proxy.harness import proxy_stack

if TYPE_CHECKING:
    from pathlib import Path


async def _relay_connections(api: str, want: int) -> int:
    """The relay's client connections from /healthz, polled until ``want`` (reports come every 0.5 s)."""
    seen = -1
    async with aiohttp.ClientSession() as session:
        for _ in range(100):
            async with session.get(f"{api}/healthz") as resp:
                seen = json.loads(await resp.text()).get("relay", {}).get("connections", -1)
            if seen == want:
                break
            await asyncio.sleep(0.1)
    return seen


@pytest.mark.slow
@pytest.mark.parametrize("attack", sorted(ATTACKS))
async def test_normal_clients_are_served_while_an_attack_runs(attack: str, scorer_url: str,
                                                              tmp_path: Path) -> None:
    """100 normal decisions during the attack: each answered 200 with its own answer and recorded once.

    The attacker's requests leave no row (the smuggled bare-LF ones included), and after the attack
    the relay holds no connection: it closes each one the attacker closed (the idle timeout, 60 s, is
    not what frees them).
    """
    async with proxy_stack(tmp_path, scorer_url, "process") as (_up, proxy, api):
        result = await under_attack(proxy, attack)
        connections = await _relay_connections(api, 0)
    assert result.wrong == []
    assert len(result.latencies_ms) == 100
    rows = read_rows(tmp_path / "records", "proposals")
    assert sorted(r["decision_id"] for r in rows) == sorted(result.ticket_ids)
    assert connections == 0
