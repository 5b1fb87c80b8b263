"""The mirror API under generated requests: no 5xx, every 4xx names a field, and it keeps serving."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given

from shadow.app import init_app
from tests.http_fuzz import (
    Probe,
    check_answer,
    encoding_probes,
    fuzz,
    fuzz_examples,
    requests_for,
    send,
    served,
)
from tests.shadow.fault_scorer import Faults, fault_app
from tests.shadow.harness import settings_for, ticket_type, write_catalog

if TYPE_CHECKING:
    from pathlib import Path

VALID: list[dict[str, Any]] = [
    {"decision_type": "tickets", "decision_id": "t-1", "state": {"subject": "refund", "email": "a@b.c"}},
    {"decision_type": "guarded", "decision_id": "g-1", "state": {"text": "free text"}},
    {"decision_type": "tickets", "decision_id": "t-1", "outcome": "billing",
     "outcome_at": "2026-12-01T10:00:00"},
    {"decision_type": "guarded", "decision_id": "g-1", "outcome": "review", "source": "crm"},
]


@pytest.mark.parametrize(("path", "valid"), [("/v1/decisions", VALID[:2]), ("/v1/outcomes", VALID[2:])])
def test_generated_requests_never_5xx_and_4xx_name_the_field(path: str, valid: list[dict[str, Any]],
                                                             tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Any body, content type or header set on ``POST /v1/decisions`` and ``POST /v1/outcomes``.

    Each endpoint on its own: a valid body in every content encoding first (`encoding_probes`), then
    the generated requests (`DEFAULT_EXAMPLES` per endpoint, the seed printed with any failure).

    Bodies: valid decisions and outcomes (alone or batched) with fields swapped, dropped or added, any
    JSON, raw bytes, and objects or arrays nested up to 120,000 deep; headers include right and wrong
    bearer tokens for a guarded type and content encodings the body is not in. Never a 5xx; every 4xx is
    the JSON error naming a field; ``/healthz`` still answers 200 afterwards, with the fault scorer
    healthy behind it.
    """
    monkeypatch.setenv("FUZZ_TOKEN", "secret-token")
    faults = Faults()
    with served(fault_app(faults)) as (scorer_url,):
        types = {"tickets": ticket_type(scorer_url),
                 "guarded": ticket_type(scorer_url, auth_token_env="FUZZ_TOKEN",  # noqa: S106  (a name)
                                        proxy=None)}
        settings = settings_for(tmp_path, write_catalog(tmp_path, types))
        with served(init_app(settings)) as (url,):

            for probe in encoding_probes(path, valid[0]):
                check_answer(url, probe)

            sent = []

            @given(probe=requests_for([path], valid + VALID))
            def probe_api(probe: Probe) -> None:
                sent.append(probe)
                check_answer(url, probe)

            fuzz(probe_api, path)
            assert len(sent) >= fuzz_examples()
            status, body, _ = send(url, "GET", "/healthz")
            assert (status, json.loads(body)["status"]) == (200, "ok")
        faults.release.set()
