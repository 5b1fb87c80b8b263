"""The workbench under hostile input: nothing gets past its checks, and nothing fails as a bug.

Bodies it cannot decode or will not wait for, identifiers and paths carrying control characters, static
paths outside its files: each is refused at once with the project's JSON error naming the field, before
any form is parsed, whatever the route; nothing is written and nothing is logged as a bug.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import pytest
from aiohttp.test_utils import make_mocked_request
from pydantic import ValidationError

from audit.workbench.errors import MisdirectedHost
from audit.workbench.guards import check_host
from audit.workbench.middlewares import is_decision_path
from audit.workbench.sessions import Sessions
from audit.workbench.settings import WorkbenchSettings
from tests.audit import week
from tests.audit.forms import hidden
from tests.audit.session import audits, sign_in

if TYPE_CHECKING:
    from pathlib import Path

    from aiohttp.test_utils import TestClient

FORM = "application/x-www-form-urlencoded"
UNDECODABLE = {
    "charset=bogus-charset": (f"{FORM}; charset=bogus-charset", b"csrf=x&token=y&auditor=a", "Content-Type"),
    "charset=utf-16": (f"{FORM}; charset=utf-16", "csrf=x&token=y".encode("utf-16"), "Content-Type"),
    "a raw 0xff byte": (FORM, b"csrf=x&token=\xff&auditor=a", "body"),
    "a %FF escape": (FORM, b"csrf=x&token=%FF&auditor=a", "body"),
}
"""Each case: the Content-Type sent, the body, the field the refusal names."""
ROUTES = ("/sign-in", "/answers", "/skip", "/undo", "/sign-out", "/no-such-page")
CONTROLS = ("\n", "\r", "\r\n", "\x00", "\t", "\x0b", "\x0c", "\x1b", "\x7f", "\x85")
"""Control characters fed to every identifier and path pattern, trailing, leading and embedded."""


def placed(value: str, control: str) -> list[str]:
    """``value`` with ``control`` trailing, leading and in the middle."""
    middle = len(value) // 2
    return [value + control, control + value, value[:middle] + control + value[middle:]]


def errors_logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What was logged as an error or with a traceback."""
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


@pytest.mark.parametrize("case", sorted(UNDECODABLE))
async def test_a_body_that_cannot_be_decoded_is_a_400_on_every_route(
        client: TestClient[Any, Any], case: str, caplog: pytest.LogCaptureFixture) -> None:
    """A charset that is not UTF-8 (unknown or UTF-16), a raw 0xff or a %FF escape: 400 naming the field.

    On every route, signed in or not, before any form is parsed; no traceback is logged.
    """
    caplog.set_level(logging.DEBUG)
    content_type, body, field = UNDECODABLE[case]
    await sign_in(client)
    for path in ROUTES:
        answer = await client.post(path, data=body, headers={"Content-Type": content_type})
        assert answer.status == 400, (path, await answer.text())
        assert (await answer.json())["error"]["field"] == field, path
    assert errors_logged(caplog) == []


async def test_a_refused_answer_writes_nothing(
        client: TestClient[Any, Any], tmp_path: Path, built: tuple[Path, Path, list[week.Decision]]) -> None:
    """A valid answer sent as Latin-1, with a raw 0xff in its note, or to a foreign ``Host``: refused.

    No row and no note is written for any of them.
    """
    fields = await sign_in(client)
    valid = urlencode({**fields, "answer": "billing", "note": "looks like billing"}).encode()
    latin = urlencode({**fields, "answer": "billing", "note": "café"}, encoding="latin-1").encode()
    raw = urlencode({**fields, "answer": "billing"}).encode() + b"&note=caf\xe9"
    cases = [({"Content-Type": f"{FORM}; charset=latin-1"}, latin, 400), ({"Content-Type": FORM}, raw, 400),
             ({"Content-Type": FORM, "Host": "rebind.attacker.example"}, valid, 421)]
    for headers, body, status in cases:
        answer = await client.post("/answers", data=body, headers=headers)
        assert answer.status == status, await answer.text()
    await client.close()
    assert audits(tmp_path, *built[:2]) == []
    assert not (tmp_path / "audit-spool" / "notes").exists()


async def exchange(client: TestClient[Any, Any], head: str) -> tuple[float, str, dict[str, Any]]:
    """Send ``head`` (headers only) on a new connection: ``(seconds, status line, JSON body)`` back."""
    reader, writer = await asyncio.open_connection(client.server.host, client.server.port)
    try:
        started = time.monotonic()
        writer.write(head.encode())
        await writer.drain()
        raw = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5.0)
        lines = raw.decode().split("\r\n")
        headers = {k.lower(): v for k, _, v in (line.partition(": ") for line in lines[1:])}
        length = int(headers["content-length"])
        body = await asyncio.wait_for(reader.readexactly(length), 5.0)
        return time.monotonic() - started, lines[0], json.loads(body)
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


async def test_a_declared_huge_body_is_a_413_within_a_second(client: TestClient[Any, Any]) -> None:
    """``Content-Length: 1000000000000`` with nothing sent: 413 naming ``body`` at once, on every route."""
    for path in ROUTES:
        head = (f"POST {path} HTTP/1.1\r\nHost: {client.server.host}:{client.server.port}\r\n"
                f"Content-Type: {FORM}\r\nContent-Length: 1000000000000\r\n\r\n")
        seconds, status, body = await exchange(client, head)
        assert status == "HTTP/1.1 413 Request Entity Too Large", path
        assert body["error"]["code"] == "body_too_large"
        assert body["error"]["field"] == "body"
        assert seconds < 1.0, path


def test_every_identifier_and_path_pattern_matches_the_whole_string(tmp_path: Path) -> None:
    """A control character anywhere (trailing too) is refused by every pattern the workbench checks.

    The pseudonym, a decision path (where ``next`` may lead), the ``Host`` header, and the week, public
    host and writer id of the settings.
    """
    sessions = Sessions({week.TYPE: week.TOKEN})
    for fine in ("/decisions/d0001?type=tickets", "/decisions/T%201042%C3%A9", "/decisions/a%2Fb?type=t%20x"):
        assert is_decision_path(fine), fine
    names = frozenset({"localhost"})
    check_host(make_mocked_request("GET", "/", headers={"Host": "localhost:8490"}), names)
    base = {"root": str(tmp_path), "catalog": tmp_path / "catalog.yaml", "week": week.WEEK}
    settings = {"week": week.WEEK, "public_host": "audit.example.org", "writer_id": "audit-test"}
    for control in CONTROLS:
        for host in placed("localhost", control):
            with pytest.raises(MisdirectedHost):
                check_host(make_mocked_request("GET", "/", headers={"Host": host}), names)
        for name, value in settings.items():
            for bad in placed(value, control):
                with pytest.raises(ValidationError, match=name):
                    WorkbenchSettings(**{**base, name: bad})  # type: ignore[arg-type]
        for auditor in placed("mallory", control):
            with pytest.raises(Exception, match="auditor") as refused:
                sessions.sign_in(week.TOKEN, auditor, client="127.0.0.1")
            assert getattr(refused.value, "field", None) == "auditor", repr(auditor)
        for path in [*placed("/decisions/d0001", control), *placed("/decisions/d0001?type=tickets", control),
                     f"/decisions/x{control}Set-Cookie: a=b"]:
            assert not is_decision_path(path), repr(path)


@pytest.mark.parametrize("control", ["\n", "\r\n", "\x00", "\t"])
async def test_a_control_character_in_the_pseudonym_or_next_is_a_400(
        client: TestClient[Any, Any], control: str) -> None:
    """``auditor=mallory%0A`` or a ``next`` with a CR LF: 400 naming the field, and no session cookie."""
    cases = {"auditor": {"auditor": f"mallory{control}", "next": ""},
             "next": {"auditor": "mallory", "next": f"/decisions/d0001{control}Set-Cookie: a=b"}}
    for field, data in cases.items():
        form = hidden(await (await client.get("/sign-in")).text())
        answer = await client.post("/sign-in", allow_redirects=False,
                                   data={"csrf": form["csrf"], "token": week.TOKEN, **data})
        assert answer.status == 400, (field, answer.status)
        assert (await answer.json())["error"]["field"] == field
        assert "audit_session" not in answer.headers.get("Set-Cookie", "")
    page = hidden(await (await client.get("/sign-in", params={"next": f"/decisions/d0001{control}"})).text())
    assert page["next"] == ""


async def test_a_static_miss_is_the_json_404(client: TestClient[Any, Any]) -> None:
    """``/static/..%5capp.py`` and other paths beside the static files: the JSON 404 every miss gets."""
    for path in ("/static/..%5capp.py", "/static/..%5c..%5capp.py", "/static/workbench.js%00",
                 "/static/workbench.js%0A", "/static/%2e%2e/app.py", "/static/", "/static/nope.js"):
        answer = await client.get(path)
        assert answer.status == 404, path
        assert answer.content_type == "application/json", path
        assert (await answer.json())["error"]["code"] == "not_found"
    script = await client.get("/static/workbench.js")
    assert script.status == 200
    assert script.content_type in {"text/javascript", "application/javascript"}
