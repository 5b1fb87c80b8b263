"""Audits through the mirror API (records v1.2): stored apart from production, refused when malformed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from contracts.records import NONE_OF_THESE
from tests.shadow.harness import post, read_rows, running_sidecar, settings_for, ticket_type, write_catalog

if TYPE_CHECKING:
    from pathlib import Path

AUDIT = {"decision_type": "tickets", "source": "audit", "auditor": "aud-7f3a", "audit_sample": "s-2026-W48"}


async def test_audits_are_recorded_with_their_auditor_and_sample_under_the_types_token(
        scorer_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An audit needs the type's bearer token, and is stored as an outcomes row with ``source`` audit.

    It carries ``auditor`` and ``audit_sample``; "none of these" is accepted with ``in_options`` false;
    production's outcome in the same body keeps ``source`` api and null audit columns.
    """
    monkeypatch.setenv("TICKETS_TOKEN", "s3cret")
    dtype = ticket_type(scorer_url, auth_token_env="TICKETS_TOKEN")  # noqa: S106  (an env var's name)
    catalog = write_catalog(tmp_path, {"tickets": dtype})
    body = {"outcomes": [{**AUDIT, "decision_id": "d-1", "outcome": "billing"},
                         {**AUDIT, "decision_id": "d-2", "outcome": NONE_OF_THESE},
                         {"decision_type": "tickets", "decision_id": "d-1", "outcome": "technical"}]}
    async with running_sidecar(settings_for(tmp_path, catalog)) as (url, _app):
        status, answer = await post(f"{url}/v1/outcomes", body)
        assert (status, answer["error"]["field"]) == (401, "Authorization")
        status, answer = await post(f"{url}/v1/outcomes", body, headers={"Authorization": "Bearer s3cret"})
        assert (status, answer) == (200, {"recorded": 3})
    rows = read_rows(tmp_path / "records", "outcomes")
    columns = ("decision_id", "outcome", "source", "auditor", "audit_sample", "in_options")
    got = sorted(tuple(r[c] for c in columns) for r in rows)
    assert got == [("d-1", "billing", "audit", "aud-7f3a", "s-2026-W48", True),
                   ("d-1", "technical", "api", None, None, True),
                   ("d-2", NONE_OF_THESE, "audit", "aud-7f3a", "s-2026-W48", False)]
    assert {r["record_version"] for r in rows} == {3}


@pytest.mark.parametrize(("change", "field", "words"), [
    ({"auditor": "jane.doe@example.com"}, "outcomes[0].auditor", "never an e-mail"),
    ({"auditor": "Jane Doe"}, "outcomes[0].auditor", "pseudonymous"),
    ({"auditor": None}, "outcomes[0].auditor", "needs it"),
    ({"audit_sample": None}, "outcomes[0].audit_sample", "needs it"),
    ({"source": "api"}, "outcomes[0].auditor", "only an audit"),
    ({"source": "proxy"}, "outcomes[0].source", "'api' or 'audit'"),
])
async def test_a_malformed_audit_is_a_400_naming_the_field_and_nothing_is_stored(
        scorer_url: str, tmp_path: Path, change: dict[str, Any], field: str, words: str) -> None:
    """An e-mail or a name as auditor, a missing auditor or sample, audit fields on production's outcome.

    Each is refused with a 400 whose ``field`` names it; no row of the body is stored.
    """
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url)})
    given = {**AUDIT, "decision_id": "d-1", "outcome": "billing", **change}
    item = {k: v for k, v in given.items() if v is not None}
    async with running_sidecar(settings_for(tmp_path, catalog)) as (url, _app):
        status, answer = await post(f"{url}/v1/outcomes", {"outcomes": [item]})
    assert (status, answer["error"]["field"]) == (400, field)
    assert words in answer["error"]["message"]
    assert read_rows(tmp_path / "records", "outcomes") == []
