"""The mirror API against an outsider: no forged sources or future outcomes, clear refusals, bounded logs."""

from __future__ import annotations

import asyncio
import gzip
import logging
import zlib
from typing import TYPE_CHECKING

from tests.shadow.harness import post, read_rows, running_sidecar, settings_for, ticket_type, write_catalog

if TYPE_CHECKING:
    from pathlib import Path

    import pytest


async def test_an_outcome_cannot_claim_to_come_from_the_proxy(scorer_url: str, tmp_path: Path) -> None:
    """``source`` is set by the sidecar: an API caller naming another source is a 400, nothing recorded."""
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url)})
    async with running_sidecar(settings_for(tmp_path, catalog)) as (url, _app):
        status, body = await post(f"{url}/v1/outcomes", {"decision_type": "tickets", "decision_id": "o-1",
                                                          "outcome": "billing", "source": "proxy"})
        assert (status, body["error"]["field"]) == (400, "source")
        status, _ = await post(f"{url}/v1/outcomes", {"decision_type": "tickets", "decision_id": "o-2",
                                                      "outcome": "billing"})
        assert status == 200
    assert [(o["decision_id"], o["source"]) for o in read_rows(tmp_path / "records", "outcomes")] == [
        ("o-2", "api")]


async def test_an_outcome_in_the_future_is_refused(scorer_url: str, tmp_path: Path) -> None:
    """``outcome_at`` in 2098 would win every later correction: a 400 naming the field."""
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url)})
    async with running_sidecar(settings_for(tmp_path, catalog)) as (url, _app):
        status, body = await post(f"{url}/v1/outcomes", {"decision_type": "tickets", "decision_id": "o-1",
                                                          "outcome": "billing",
                                                          "outcome_at": "2098-01-01T00:00:00Z"})
    assert (status, body["error"]["field"]) == (400, "outcome_at")
    assert read_rows(tmp_path / "records", "outcomes") == []


async def test_a_state_with_a_lone_surrogate_is_refused(scorer_url: str, tmp_path: Path,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    """A JSON escape of half a UTF-16 pair in the state cannot be stored: a 400, no failure logged."""
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url)})
    body = b'{"decision_type": "tickets", "decision_id": "s-1", "state": {"subject": "x\\ud800"}}'
    async with running_sidecar(settings_for(tmp_path, catalog)) as (url, _app):
        status, answer = await post(f"{url}/v1/decisions", None, data=body)
    assert (status, answer["error"]["field"]) == (400, "state")
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


async def test_a_non_utf8_authorization_header_is_a_401(scorer_url: str, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Bytes that are not UTF-8 in ``Authorization`` are a wrong token (401), not a 500."""
    monkeypatch.setenv("TICKETS_TOKEN", "s3cret")
    dtype = ticket_type(scorer_url, auth_token_env="TICKETS_TOKEN")  # noqa: S106  (an env var's name)
    catalog = write_catalog(tmp_path, {"tickets": dtype})
    body = b'{"decision_type": "tickets", "decision_id": "a-1", "state": {"subject": "x"}}'
    async with running_sidecar(settings_for(tmp_path, catalog)) as (url, _app):
        host, port = url.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(b"POST /v1/decisions HTTP/1.1\r\nHost: s\r\nAuthorization: Bearer \xff\xfe\r\n"
                     b"Content-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                     % (len(body), body))
        answer = await reader.read()
        writer.close()
    assert answer.startswith(b"HTTP/1.1 401")


async def test_a_deeply_nested_body_is_one_refusal_and_no_traceback(
        scorer_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """100,000 nested arrays: a 400 naming the body, and nothing logged with a traceback."""
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url)})
    async with running_sidecar(settings_for(tmp_path, catalog)) as (url, _app):
        status, answer = await post(f"{url}/v1/decisions", None, data=b"[" * 100_000 + b"]" * 100_000)
    assert (status, answer["error"]["field"]) == (400, "body")
    assert [r for r in caplog.records if r.exc_info] == []


async def test_compressed_bodies_decode_under_the_cap(scorer_url: str, tmp_path: Path) -> None:
    """Bodies in gzip or deflate are decoded by the API itself, with the body cap on the decoded size.

    A whole stream is queued; one cut short (which hung aiohttp's own decoder) is a 400 on ``body``; a
    bomb (32 MiB of zeros in 32 KiB) is a 413 on ``body``; an unknown coding is a 415 on
    ``Content-Encoding``. Only the whole one becomes a row.
    """
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url)})
    plain = b'{"decision_type": "tickets", "decision_id": "%s", "state": {"subject": "x"}}'
    cases = [(gzip.compress(plain % b"z-1"), "gzip", 202, None),
             (zlib.compress(plain % b"z-2"), "deflate", 202, None),
             (gzip.compress(plain % b"z-3")[:-9], "gzip", 400, "body"),
             (gzip.compress(bytes(32 << 20)), "gzip", 413, "body"),
             (plain % b"z-4", "br", 415, "Content-Encoding")]
    async with running_sidecar(settings_for(tmp_path, catalog)) as (url, _app):
        for data, coding, want, field in cases:
            hdrs = {"Content-Type": "application/json", "Content-Encoding": coding}
            status, answer = await post(f"{url}/v1/decisions", None, data=data, headers=hdrs)
            assert status == want, (coding, answer)
            assert field is None or answer["error"]["field"] == field
    assert sorted(r["decision_id"] for r in read_rows(tmp_path / "records", "proposals")) == ["z-1", "z-2"]
