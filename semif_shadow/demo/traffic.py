"""The demo's traffic: tickets through the proxy, the sidecar's progress, late outcomes through the API.

Clients of the production router call the proxy exactly as they would call the router. What each call
got back (the router's team) is kept as `Sent`, which the late outcomes and the checks read.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import aiohttp

from semif_shadow.demo.processes import DemoError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from semif_shadow.demo.clock import SimClock
    from semif_shadow.demo.workload import Ticket

CONCURRENCY = 4
TIMEOUT = aiohttp.ClientTimeout(total=30)
REVIEW_DELAY_H = (2, 52)
"""A person resolves a ticket sent to review between these many hours later (late outcomes)."""


@dataclass(frozen=True)
class Sent:
    """One ticket as the client saw it: when (simulated), the router's answer."""

    ticket_id: str
    week: int
    sent_at: str
    status: int
    team: str
    rule: str

    def row(self) -> dict[str, Any]:
        """As a JSON line."""
        return asdict(self)


async def _send(session: aiohttp.ClientSession, proxy: str, ticket: Ticket, clock: SimClock) -> Sent:
    at = datetime.fromtimestamp(clock.now(), UTC).isoformat()
    async with session.post(f"{proxy}/route", json=ticket.request()) as resp:
        body = await resp.json()
        if resp.status != 200:
            raise DemoError(f"the router answered {resp.status} through the proxy: {body}")
    return Sent(ticket.ticket_id, ticket.week, at, resp.status, body["team"], body["rule"])


async def replay(proxy: str, tickets: Sequence[Ticket], clock: SimClock,
                 on_sent: Callable[[], None]) -> list[Sent]:
    """Send every ticket through the proxy, ``CONCURRENCY`` at a time, in order of the list."""
    sent: list[Sent | None] = [None] * len(tickets)
    queue = list(enumerate(tickets))

    async def worker(session: aiohttp.ClientSession) -> None:
        while queue:
            i, ticket = queue.pop(0)
            sent[i] = await _send(session, proxy, ticket, clock)
            on_sent()

    async with aiohttp.ClientSession(timeout=TIMEOUT) as session:
        await asyncio.gather(*(worker(session) for _ in range(CONCURRENCY)))
    return [s for s in sent if s is not None]


async def rows_written(api: str) -> int:
    """Proposals rows the sidecar has handed to its store (every candidate), from ``/metrics``."""
    async with aiohttp.ClientSession(timeout=TIMEOUT) as session, session.get(f"{api}/metrics") as resp:
        text = await resp.text()
    return int(sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith("shadow_rows_total{")))


async def wait_rows(api: str, expected: int, on_rows: Callable[[int], None], timeout_s: float) -> None:
    """Poll until ``expected`` rows are written (scored or not), reporting progress."""
    deadline = time.monotonic() + timeout_s
    done = 0
    while done < expected:
        if time.monotonic() > deadline:
            raise DemoError(f"the sidecar wrote {done} of {expected} rows in {timeout_s:.0f} s")
        now = await rows_written(api)
        if now > done:
            on_rows(now - done)
            done = now
        else:
            await asyncio.sleep(0.2)


def late_outcomes(sent: Sequence[Sent], truth: dict[str, str], seed: int) -> list[dict[str, Any]]:
    """What the people reviewing decide, for each ticket production sent to ``review``, hours later."""
    import random  # noqa: PLC0415

    rng = random.Random(seed)  # noqa: S311  (reproducible delays, not a secret)
    out = []
    for s in sent:
        if s.team != "review":
            continue
        at = datetime.fromisoformat(s.sent_at) + timedelta(hours=rng.uniform(*REVIEW_DELAY_H))
        out.append({"decision_type": "ticket_routing", "decision_id": s.ticket_id,
                    "outcome": truth[s.ticket_id], "outcome_at": at.isoformat()})
    return out


async def post_outcomes(api: str, token: str, outcomes: list[dict[str, Any]],
                        on_posted: Callable[[int], None]) -> None:
    """Send outcomes through the mirror API in batches of 50; each answer means they are durable."""
    headers = {"Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession(timeout=TIMEOUT, headers=headers) as session:
        for i in range(0, len(outcomes), 50):
            batch = outcomes[i:i + 50]
            async with session.post(f"{api}/v1/outcomes", json={"outcomes": batch}) as resp:
                if resp.status != 200:
                    raise DemoError(f"the sidecar refused the outcomes: {resp.status} {await resp.text()}")
            on_posted(len(batch))
