"""Sidecar reasons that had no test: a throttled and a rejecting scorer, each one proposals row."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.shadow.conftest import (
    rows_by_id,
    running_sidecar,
    settings_for,
    ticket_type,
    write_catalog,
)
from tests.shadow.test_backends import offer_and_collect

if TYPE_CHECKING:
    from pathlib import Path

    from tests.shadow.fault_scorer import Faults


@pytest.mark.parametrize(("mode", "reason", "attempts"), [
    ("throttled", "scorer_throttled", 2),  # 429: retried up to max_attempts
    ("rejected", "scorer_rejected", 1),  # 400: retrying cannot help
])
async def test_scorer_answers_map_to_their_reason(mode: str, reason: str, attempts: int, faults: Faults,
                                                  scorer_url: str, tmp_path: Path) -> None:
    """A 429 is ``scorer_throttled`` after every attempt; a 400 is ``scorer_rejected`` after one."""
    faults.mode = mode
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url)})
    async with running_sidecar(settings_for(tmp_path, catalog)) as (url, _app):
        await offer_and_collect(url, ["t-1"], wait_s=0.3)
    row = rows_by_id(tmp_path)["t-1"]
    assert (row["status"], row["reason"], row["attempts"]) == ("error", reason, attempts)
    assert faults.calls == attempts
