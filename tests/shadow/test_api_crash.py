"""Black box: `semif-shadow sidecar run` in API mode killed with SIGKILL again and again under load.

Nothing answered ``queued: true`` may be lost: every such decision has a proposals row (any status),
every outcome answered 200 has its outcomes row, and nothing is written twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp

from tests.harness import free_port
from tests.shadow.harness import read_rows, ticket_type, write_catalog

if TYPE_CHECKING:
    from tests.shadow.fault_scorer import Faults

CLI = Path(sys.executable).parent / "semif-shadow"
KILLS = 6
CLIENTS = 2
BATCH = 10
# A long group commit widens the window between queuing a decision and its accept mark reaching the
# disk: an answer sent inside that window is what a kill would turn into a decision without a row.
GROUP_COMMIT_MS = "20"


class Ledger:
    """What the clients were told: decisions answered queued, outcomes answered 200."""

    def __init__(self) -> None:
        self.queued: set[str] = set()
        self.recorded: set[str] = set()
        self.next_id = 0

    def batch(self) -> list[str]:
        """Fresh decision ids."""
        ids = [f"d-{self.next_id + i}" for i in range(BATCH)]
        self.next_id += BATCH
        return ids


async def client(url: str, ledger: Ledger, stop: asyncio.Event) -> None:
    """Post batches of decisions, then an outcome for each queued one, until ``stop``; errors are kills."""
    timeout = aiohttp.ClientTimeout(total=10)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        while not stop.is_set():
            ids = ledger.batch()
            decisions = [{"decision_type": "tickets", "decision_id": i, "state": {"text": "x"}} for i in ids]
            with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                async with session.post(f"{url}/v1/decisions", json={"decisions": decisions}) as resp:
                    answer = await resp.json()
                assert resp.status == 202, answer
                queued = [d["decision_id"] for d in answer["decisions"] if d["queued"]]
                ledger.queued.update(queued)
                outcomes = [{"decision_type": "tickets", "decision_id": i, "outcome": "billing"}
                            for i in queued]
                async with session.post(f"{url}/v1/outcomes", json={"outcomes": outcomes}) as resp:
                    if resp.status == 200:
                        ledger.recorded.update(queued)


async def start_sidecar(env: dict[str, str], url: str) -> asyncio.subprocess.Process:
    """Start the sidecar and wait until /healthz answers (recovery of the spool runs first)."""
    proc = await asyncio.create_subprocess_exec(str(CLI), "sidecar", "run", env=env,
                                                stdout=asyncio.subprocess.DEVNULL,
                                                stderr=asyncio.subprocess.DEVNULL)
    async with aiohttp.ClientSession() as session:
        for _ in range(400):
            with contextlib.suppress(aiohttp.ClientConnectionError):
                async with session.get(url + "/healthz") as resp:
                    if resp.status == 200:
                        return proc
            assert proc.returncode is None, "the sidecar exited at start-up"
            await asyncio.sleep(0.05)
    raise AssertionError("the sidecar never answered /healthz")


async def test_sigkill_under_load_loses_no_decision_answered_queued(scorer_url: str, faults: Faults,
                                                                    tmp_path: Path) -> None:
    """Six SIGKILLs at random moments of a two-client load on one spool, then SIGTERM.

    Every decision answered ``queued: true`` has a proposals row (scored, or ``lost`` /
    ``crash_recovery``), every outcome answered 200 has its row, and no decision or outcome appears twice.
    """
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url)})
    env: dict[str, Any] = {
        **os.environ, "SHADOW_CATALOG": str(catalog), "SHADOW_PORT": str(port),
        "SHADOW_RECORDS_ROOT": str(tmp_path / "records"), "SHADOW_RECORDS_SPOOL_DIR": str(tmp_path / "spool"),
        "SHADOW_RECORDS_WRITER_ID": "crash_api", "SHADOW_RECORDS_GROUP_COMMIT_MS": GROUP_COMMIT_MS,
        "SHADOW_REDACTION_KEY": "k" * 32, "SHADOW_SHUTDOWN_GRACE_S": "0.5"}
    ledger, rng = Ledger(), random.Random(1234)  # noqa: S311  (kill moments, not security)
    for round_ in range(KILLS + 1):
        proc = await start_sidecar(env, url)
        stop = asyncio.Event()
        clients = [asyncio.create_task(client(url, ledger, stop)) for _ in range(CLIENTS)]
        await asyncio.sleep(rng.uniform(0.2, 0.8))  # load for a random while, then the kill lands
        proc.send_signal(signal.SIGTERM if round_ == KILLS else signal.SIGKILL)
        assert await proc.wait() in {0, -signal.SIGKILL}
        stop.set()
        await asyncio.gather(*clients)
    faults.release.set()

    rows = read_rows(tmp_path / "records", "proposals")
    proposals = Counter(r["decision_id"] for r in rows)
    per_candidate = Counter((r["decision_id"], r["candidate"]) for r in rows)
    outcomes = Counter(r["decision_id"] for r in read_rows(tmp_path / "records", "outcomes"))
    assert len(ledger.queued) > KILLS * BATCH
    missing = ledger.queued - set(proposals)
    assert not missing, f"{len(missing)} of {len(ledger.queued)} decisions answered queued have no row"
    assert max(per_candidate.values()) == 1
    assert ledger.recorded <= set(outcomes)
    assert max(outcomes.values()) == 1
