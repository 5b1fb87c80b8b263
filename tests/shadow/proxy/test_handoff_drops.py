"""The relay's ``handoff_full`` drops reach the records: counted in ``drops``, so rows + drops = offered.

The sidecar's event loop is blocked (as an overloaded sidecar's is) while a client sends claimed requests
through the relay process to an upstream served from a thread: the relay keeps answering, its hand-off
to the sidecar fills (64 KiB, the smallest allowed) and it drops the rest of the exchanges. Once the
loop runs again, the relay's counters tell the sidecar how many, per route.
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING

from shadow.intake.supervisor import ProxyProcess
from shadow.keys import METRICS
from tests.shadow.harness import read_rows, running_sidecar, settings_for, ticket_type, write_catalog
from tests.shadow.proxy.harness import N, claimed_client, threaded_upstream

if TYPE_CHECKING:
    from pathlib import Path


async def test_handoff_full_exchanges_are_counted_in_drops(scorer_url: str, tmp_path: Path) -> None:
    """60 claimed requests of 20 KB while the sidecar cannot read: all answered, all accounted for."""
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url)})
    statuses: list[int] = []
    with threaded_upstream() as upstream_url:
        settings = settings_for(tmp_path, catalog, upstream_url=upstream_url, proxy_port=0,
                                proxy_handoff_bytes=65536)
        async with running_sidecar(settings) as (_api, core):
            proxy = ProxyProcess(settings, core)
            url = await proxy.start()
            try:
                client = threading.Thread(target=claimed_client, args=(int(url.rsplit(":", 1)[1]), statuses))
                client.start()
                client.join(60)  # blocks the loop: the sidecar reads nothing meanwhile
                metrics = core[METRICS]
                for _ in range(200):  # the relay's next counters frame (every 0.5 s)
                    offered = metrics.offered.labels("tickets", "default")._value.get()
                    if offered >= N:
                        break
                    await asyncio.sleep(0.05)
            finally:
                await proxy.stop()
    assert statuses == [200] * N
    rows = {r["decision_id"] for r in read_rows(tmp_path / "records", "proposals")}
    counted = read_rows(tmp_path / "records", "drops")
    drops = sum(r["dropped"] for r in counted if r["reason"] == "handoff_full")
    assert drops > 0
    assert len(rows) + drops == N
    assert offered == N
