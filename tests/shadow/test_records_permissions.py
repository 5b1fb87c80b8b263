"""What the sidecar writes to disk is its owner's only: folders 0700, files 0600."""

from __future__ import annotations

import stat
from typing import TYPE_CHECKING

from tests.shadow.harness import post, running_sidecar, settings_for, ticket_type, write_catalog

if TYPE_CHECKING:
    from pathlib import Path


async def test_records_and_spool_are_private_to_the_owner(scorer_url: str, tmp_path: Path) -> None:
    """After a decision and an outcome: every folder under records and spool is 0700, every file 0600."""
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url)})
    settings = settings_for(tmp_path, catalog)
    async with running_sidecar(settings) as (url, _app):
        await post(f"{url}/v1/decisions", {"decision_type": "tickets", "decision_id": "p-1",
                                           "state": {"subject": "x"}})
        await post(f"{url}/v1/outcomes", {"decision_type": "tickets", "decision_id": "p-1",
                                          "outcome": "billing"})
    roots = [settings.records.spool_dir, settings.records.local_root()]
    modes = {str(p.relative_to(tmp_path)): stat.S_IMODE(p.stat().st_mode)
             for root in roots for p in [root, *root.rglob("*")]}
    assert any(name.endswith(".parquet") for name in modes)
    wrong = {name: oct(mode) for name, mode in modes.items()
             if mode != (0o700 if (tmp_path / name).is_dir() else 0o600)}
    assert wrong == {}
