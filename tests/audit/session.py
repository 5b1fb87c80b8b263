"""The workbench through a test client: sign in as an auditor, read back the audit rows written."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from contracts.records import SOURCE_AUDIT
from shadow.records.layout import open_dataset
from tests.audit import week
from tests.audit.forms import hidden
from tests.audit.week import settings_for

if TYPE_CHECKING:
    from pathlib import Path

    from aiohttp.test_utils import TestClient


async def sign_in(client: TestClient[Any, Any], auditor: str = "auditor-7",
                  token: str = week.TOKEN) -> dict[str, str]:
    """Sign in through the form; the hidden fields of the first decision's page."""
    form = hidden(await (await client.get("/sign-in")).text())
    answer = await client.post("/sign-in", data={"csrf": form["csrf"], "token": token, "auditor": auditor})
    assert answer.status == 200, await answer.text()
    return hidden(await answer.text())


def audits(tmp: Path, root: Path, catalog: Path) -> list[dict[str, object]]:
    """Every audit outcome in the records (after the workbench closed its store)."""
    records = settings_for(tmp, root, catalog).records()
    rows = open_dataset(records, "outcomes").to_table().to_pylist()
    return [r for r in rows if r["source"] == SOURCE_AUDIT]
