"""``store_unavailable``: a journal write that fails is answered as such and never acknowledged.

The failure is a real kernel condition that root cannot bypass: the sidecar runs as its own process and
the test lowers that process's ``RLIMIT_FSIZE`` soft limit to 1 byte (``resource.prlimit``), so every
write that extends a regular file past it fails with ``EFBIG`` (Python ignores ``SIGXFSZ``), the
journal's included; pipes and sockets are not files, so the API still answers. Raising the limit again
is the disk coming back.
"""

from __future__ import annotations

import resource
from typing import TYPE_CHECKING, Any

import aiohttp
import pytest

from tests.harness import free_port
from tests.shadow.harness import (
    read_rows,
    settings_for,
    sidecar_subprocess,
    ticket_type,
    write_catalog,
)

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.skipif(not hasattr(resource, "prlimit"), reason="resource.prlimit is Linux-only")


def outcome(decision_id: str) -> dict[str, Any]:
    """One outcomes body for decision ``decision_id``."""
    return {"outcomes": [{"decision_type": "tickets", "decision_id": decision_id, "outcome": "billing"}]}


def decision(decision_id: str) -> dict[str, Any]:
    """One decisions body."""
    return {"decision_type": "tickets", "decision_id": decision_id,
            "state": {"subject": "My invoice is wrong", "customer_id": 9}}


async def post(session: aiohttp.ClientSession, url: str, body: dict[str, Any]) -> tuple[int, Any]:
    """POST ``body`` as JSON; the status and the decoded answer."""
    async with session.post(url, json=body) as resp:
        return resp.status, await resp.json()


async def metric(session: aiohttp.ClientSession, url: str, prefix: str) -> float:
    """The value of the one sample on /metrics whose line starts with ``prefix`` (0 if none)."""
    async with session.get(f"{url}/metrics") as resp:
        text = await resp.text()
    values = [float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(prefix)]
    assert len(values) <= 1, values
    return values[0] if values else 0.0


async def test_a_failed_journal_write_is_store_unavailable_and_never_acknowledged(
        scorer_url: str, tmp_path: Path) -> None:
    """A failed journal write: an outcome is a 503 ``store_unavailable``, a decision ``internal_error``.

    The outcome's error names the failure; the decision (its accept mark failed) is answered
    ``queued: false`` with reason ``internal_error``, the mirror API's per-decision form. Neither is
    counted as recorded; once the disk is back, the sidecar records again; after a clean stop the
    outcomes on disk are exactly the ones answered 200 (nothing acknowledged was lost, nothing
    refused was kept), and the decision refused while the disk was failing is a ``dropped`` /
    ``internal_error`` row, never ``scored``.
    """
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url)})
    settings = settings_for(tmp_path, catalog, port=free_port())
    recorded = 'shadow_outcomes_total{decision_type="tickets",source="api"}'
    async with sidecar_subprocess(settings) as (url, proc), aiohttp.ClientSession() as session:
        assert await post(session, f"{url}/v1/outcomes", outcome("before")) == (200, {"recorded": 1})
        accepted = await metric(session, url, "shadow_store_accepted_total ")
        soft, hard = resource.prlimit(proc.pid, resource.RLIMIT_FSIZE)
        resource.prlimit(proc.pid, resource.RLIMIT_FSIZE, (1, hard))  # every file write now fails
        try:
            status, body = await post(session, f"{url}/v1/outcomes", outcome("refused"))
            queued_status, queued = await post(session, f"{url}/v1/decisions", decision("refused-d"))
            during = await metric(session, url, recorded)
            accepted_during = await metric(session, url, "shadow_store_accepted_total ")
        finally:
            resource.prlimit(proc.pid, resource.RLIMIT_FSIZE, (soft, hard))  # the disk is back
        assert status == 503, body
        assert body["error"]["code"] == "store_unavailable"
        assert "File too large" in body["error"]["message"]  # EFBIG, from the journal's own write
        assert (queued_status, queued["queued"], queued["decisions"][0]["reason"]) == (
            202, 0, "internal_error")
        assert during == 1.0  # the refused outcome was not counted as recorded
        assert accepted_during == accepted  # nor the refused decision's accept mark
        assert await metric(session, url, 'shadow_dropped_total{candidate="default",decision_type="tickets",'
                                          'reason="internal_error"}') >= 1.0
        assert await post(session, f"{url}/v1/outcomes", outcome("after")) == (200, {"recorded": 1})
        assert await metric(session, url, recorded) == 2.0
    outcomes = [row["decision_id"] for row in read_rows(tmp_path / "records", "outcomes")]
    assert sorted(outcomes) == ["after", "before"]
    proposals = {row["decision_id"]: row for row in read_rows(tmp_path / "records", "proposals")}
    refused = proposals["refused-d"]  # one row, written once the disk was back: never scored
    assert (refused["status"], refused["reason"]) == ("dropped", "internal_error")
