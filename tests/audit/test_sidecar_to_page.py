"""A decision posted to the sidecar reaches the auditor's page as the catalog stored it, and only as text.

The state posted to the mirror API holds a ``<script>``, an ``onerror`` image, a ``javascript:`` URL,
a field the catalog removes and one it hashes. The sidecar (in process, a fault-injecting scorer on
loopback) stores the redacted state in the proposals row; the workbench, in headless Chromium, shows it:
the removed value nowhere, the hashed one as ``hmac-sha256:...``, the markup as text, and nothing runs.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import aiohttp
import pytest

from tests.audit import week
from tests.audit.chromium import tab
from tests.audit.serving import running
from tests.dashboards.browser import chromium
from tests.shadow.fault_scorer import Faults, fault_app
from tests.shadow.harness import running_sidecar, serve, settings_for, ticket_type, wait_rows, write_catalog

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.skipif(chromium() is None, reason="chromium not installed")
EMAIL = "removed-7f3a@example.com"
CUSTOMER = "customer-hashed-19c2"
XSS = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2"> javascript:window.__xss = 3'


async def test_a_posted_state_with_markup_shows_redacted_and_as_text(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Post through the sidecar, sample, serve: removed never shown, hashed as hashed, markup as text."""
    monkeypatch.setenv(week.TOKEN_ENV, week.TOKEN)
    auth = {"Authorization": f"Bearer {week.TOKEN}"}
    async with serve(fault_app(Faults())) as scorer_url:
        catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url, auth_token_env=week.TOKEN_ENV)})
        async with running_sidecar(settings_for(tmp_path, catalog)) as (url, _), \
                aiohttp.ClientSession(headers=auth) as session:
            state = {"subject": XSS, "email": EMAIL, "customer_id": CUSTOMER}
            decision = {"decision_type": "tickets", "decision_id": "x-1", "state": state}
            posted = await session.post(f"{url}/v1/decisions", json=decision)
            assert posted.status == 202
            await wait_rows(url, 1)
    root = tmp_path / "records"
    year, number, _ = dt.datetime.now(dt.UTC).isocalendar()
    iso_week = f"{year}-W{number:02d}"
    week.write_sample(root, ["x-1"], iso_week=iso_week, decision_type="tickets")
    with running(root, catalog, tmp_path / "audit-spool", iso_week) as base, tab() as page:
        page.sign_in(base, week.TOKEN, "auditor-e2e")
        assert page.text("decision-id") == "x-1"
        table = page.evaluate("document.querySelector('table.state').textContent")
        assert XSS in table
        assert EMAIL not in table
        assert CUSTOMER not in table
        assert "customer_idhashed hmac-sha256:" in table
        assert page.evaluate("typeof window.__xss") == "undefined"
        assert page.evaluate("document.images.length") == 0
        assert page.errors == []
    for seen in page.seen:
        assert EMAIL not in seen.body
        assert CUSTOMER not in seen.body
