"""The workbench over a real record store: sign-in, answers as audit outcomes, and failing closed."""

from __future__ import annotations

import os
import ssl
import subprocess
from typing import TYPE_CHECKING, Any

import aiohttp
import pytest
import yaml
from aiohttp import web

from audit.errors import SetupError
from audit.workbench.app import init_app, tokens
from audit.workbench.middlewares import SECURITY_HEADERS
from contracts.catalog import load_catalog
from contracts.records import NONE_OF_THESE
from tests.audit import serving, week
from tests.audit.forms import hidden, option_values
from tests.audit.session import audits, sign_in
from tests.audit.week import settings_for

if TYPE_CHECKING:
    from pathlib import Path

    from aiohttp.test_utils import TestClient

    from tests.typing import ClientFactory


async def test_an_answer_is_an_audit_outcome_and_the_next_decision_follows(
        client: TestClient[Any, Any], tmp_path: Path, built: tuple[Path, Path, list[week.Decision]]) -> None:
    """An answer is acknowledged with the next decision; the records hold it as an audit outcome."""
    fields = await sign_in(client)
    page = await (await client.get(f"/decisions/{fields['decision_id']}")).text()
    assert option_values(page) == [o for o, _ in week.OPTIONS] + [NONE_OF_THESE]
    assert "0 of 12" in page
    answer = await client.post("/answers", data={**fields, "answer": "technical", "note": "looks technical"})
    assert answer.status == 200
    following = await answer.text()
    assert hidden(following)["decision_id"] != fields["decision_id"]
    assert "1 of 12" in following
    await client.close()
    rows = audits(tmp_path, *built[:2])
    seen = [(r["decision_id"], r["outcome"], r["auditor"], r["audit_sample"], r["in_options"]) for r in rows]
    assert seen == [(fields["decision_id"], "technical", "auditor-7", week.SAMPLE_ID, True)]
    notes = (tmp_path / "audit-spool" / "notes" / f"week={week.WEEK}.jsonl").read_text()
    assert "looks technical" in notes


async def test_every_response_carries_the_security_headers(client: TestClient[Any, Any]) -> None:
    """Pages, static files, redirects and errors carry the CSP without inline script and the framing rules."""
    fields = await sign_in(client)
    responses = [await client.get("/sign-in"), await client.get(f"/decisions/{fields['decision_id']}"),
                 await client.get("/static/workbench.js"), await client.get("/decisions/nope"),
                 await client.post("/answers", data={})]
    for response in responses:
        for name, value in SECURITY_HEADERS.items():
            assert response.headers.get(name) == value, (response.url, name)
    assert "'unsafe-inline'" not in SECURITY_HEADERS["Content-Security-Policy"]
    assert "script-src 'self'" in SECURITY_HEADERS["Content-Security-Policy"]


async def test_the_session_cookie_is_httponly_and_strict(client: TestClient[Any, Any]) -> None:
    """The session cookie is HttpOnly and SameSite=Strict (Secure comes with TLS)."""
    form = hidden(await (await client.get("/sign-in")).text())
    answer = await client.post("/sign-in", data={"csrf": form["csrf"], "token": week.TOKEN, "auditor": "a1"},
                               allow_redirects=False)
    assert answer.status == 303
    cookie = answer.headers["Set-Cookie"]
    assert "audit_session=" in cookie
    assert "HttpOnly" in cookie
    assert "SameSite=Strict" in cookie
    assert "Secure" not in cookie  # plain HTTP on loopback; over TLS the same cookie is Secure
    assert "Strict-Transport-Security" not in answer.headers


async def test_a_wrong_or_missing_token_signs_nobody_in(client: TestClient[Any, Any]) -> None:
    """No token, a wrong token, or another type's token: 401 naming ``token``; pages stay closed."""
    for token in ("", "wrong", week.TOKEN + "x"):
        form = hidden(await (await client.get("/sign-in")).text())
        answer = await client.post("/sign-in", data={"csrf": form["csrf"], "token": token, "auditor": "a1"})
        assert answer.status in {400, 401}
        assert (await answer.json())["error"]["field"] == "token"
    page = await client.get("/decisions/d0001", allow_redirects=False)
    assert page.status == 303
    assert page.headers["Location"].startswith("/sign-in")
    write = await client.post("/answers", data={"csrf": "x", "sample_id": week.SAMPLE_ID, "answer": "billing",
                                                "decision_type": week.TYPE, "decision_id": "d0001"})
    assert write.status == 401


async def test_a_write_without_its_csrf_token_is_refused(client: TestClient[Any, Any]) -> None:
    """Answer, skip, undo and sign-out without (or with another) CSRF token, or from another origin: 403."""
    fields = await sign_in(client)
    for path in ("/answers", "/skip", "/undo", "/sign-out"):
        for csrf in ("", "forged"):
            answer = await client.post(path, data={**fields, "csrf": csrf, "answer": "billing"})
            assert answer.status == 403, path
            assert (await answer.json())["error"]["field"] == "csrf"
    cross = await client.post("/answers", data={**fields, "answer": "billing"},
                              headers={"Origin": "http://evil.example"})
    assert cross.status == 403
    forged = await client.post("/sign-in", data={"csrf": "forged", "token": week.TOKEN, "auditor": "x"})
    assert forged.status == 403
    progress = await (await client.get(f"/decisions/{fields['decision_id']}")).text()
    assert "0 of 12" in progress  # nothing was written


async def test_an_oversized_body_is_refused_before_it_is_read(client: TestClient[Any, Any]) -> None:
    """A body past the cap is a 413 naming ``body``; nothing is written."""
    fields = await sign_in(client)
    answer = await client.post("/answers", data={**fields, "answer": "billing", "note": "x" * 40_000})
    assert answer.status == 413
    assert (await answer.json())["error"]["field"] == "body"


async def test_every_field_is_validated_by_name(client: TestClient[Any, Any]) -> None:
    """A bad answer, an unknown decision, a long note, a bad pseudonym: 4xx JSON naming the field."""
    fields = await sign_in(client)
    cases = {"answer": {**fields, "answer": "<script>"}, "decision_id": {**fields, "decision_id": "nope"},
             "note": {**fields, "answer": "billing", "note": "n" * 2001},
             "sample_id": {**fields, "sample_id": "other", "answer": "billing"}}
    for field, data in cases.items():
        answer = await client.post("/answers", data=data)
        assert 400 <= answer.status < 500, field
        assert (await answer.json())["error"]["field"] == field
    json_body = await client.post("/answers", json={**fields, "answer": "billing"})
    assert json_body.status == 400
    assert (await json_body.json())["error"]["field"] == "Content-Type"
    form = hidden(await (await client.get("/sign-in")).text())
    email = await client.post("/sign-in", data={"csrf": form["csrf"], "token": week.TOKEN,
                                                "auditor": "a@b.c"})
    assert email.status == 400
    assert (await email.json())["error"]["field"] == "auditor"


async def test_a_gallery_link_comes_back_to_its_decision_after_sign_in(client: TestClient[Any, Any]) -> None:
    """``/decisions/{id}`` without a session: to the sign-in form, then back to that decision.

    Only to a decision of this site: another site's address in ``next`` is ignored.
    """
    first = await client.get("/decisions/d0005", allow_redirects=False)
    assert first.status == 303
    location = first.headers["Location"]
    assert location == "/sign-in?next=%2Fdecisions%2Fd0005"
    form = hidden(await (await client.get(location)).text())
    assert form["next"] == "/decisions/d0005"
    answer = await client.post("/sign-in", data={**form, "token": week.TOKEN, "auditor": "a1"},
                               allow_redirects=False)
    assert answer.headers["Location"] == "/decisions/d0005"
    for evil in ("//evil.example/decisions/x", "https://evil.example/", "/decisions/../sign-out", "/next"):
        form = hidden(await (await client.get("/sign-in", params={"next": evil})).text())
        assert form["next"] == ""
        forged = await client.post("/sign-in", allow_redirects=False,
                                   data={**form, "next": evil, "token": week.TOKEN, "auditor": "a1"})
        assert forged.headers["Location"] == "/next"


@pytest.fixture
def tls_files(tmp_path: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key (openssl)."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    command = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
               "-days", "1", "-keyout", str(key), "-out", str(cert)]
    subprocess.run(command, check=True, capture_output=True)  # noqa: S603  (a fixed command)
    return cert, key


async def test_over_tls_the_session_cookie_is_secure(tmp_path: Path, tls_files: tuple[Path, Path],
                                                     built: tuple[Path, Path, list[week.Decision]]) -> None:
    """Served over HTTPS (``tls_cert``/``tls_key``), the cookies carry ``Secure`` and every answer HSTS."""
    cert, key = tls_files
    settings = settings_for(tmp_path, *built[:2], tls_cert=cert, tls_key=key)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    runner = web.AppRunner(init_app(settings, {week.TOKEN_ENV: week.TOKEN}))
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
        await site.start()
        base = f"https://127.0.0.1:{runner.addresses[0][1]}"
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:  # an IP host
            page = await session.get(f"{base}/sign-in", ssl=False)
            assert "Secure" in page.headers["Set-Cookie"]
            assert page.headers["Strict-Transport-Security"] == "max-age=31536000"
            form = hidden(await page.text())
            answer = await session.post(f"{base}/sign-in", ssl=False, allow_redirects=False,
                                        data={"csrf": form["csrf"], "token": week.TOKEN, "auditor": "a1"},
                                        headers={"Origin": base})
            assert answer.status == 303
            cookie = answer.headers.getall("Set-Cookie")
            assert any("audit_session=" in c and "Secure" in c and "HttpOnly" in c for c in cookie)
            assert answer.headers["Strict-Transport-Security"] == "max-age=31536000"
    finally:
        await runner.cleanup()


def test_the_command_refuses_to_start_without_a_token_or_a_sample(tmp_path: Path) -> None:
    """No token in the environment, or no sample for the week: one error line, exit 1, no traceback."""
    records = tmp_path / "records"
    week.write_sample(records, ["d0001"])
    catalog = week.catalog(tmp_path / "catalog.yaml")
    env = {k: v for k, v in os.environ.items() if k != week.TOKEN_ENV}
    base = [serving.CLI, "audit", "serve", "--root", str(records), "--catalog", str(catalog),
            "--spool", str(tmp_path / "spool"), "--port", "0"]
    no_token = subprocess.run([*base, "--week", week.WEEK], env=env, capture_output=True, text=True,  # noqa: S603
                              timeout=60, check=False)
    assert no_token.returncode == 1
    assert no_token.stderr.strip() == (f"Error: decision type {week.TYPE!r} needs a sign-in token: "
                                       f"set {week.TOKEN_ENV}")
    no_sample = subprocess.run([*base, "--week", "2026-W47"], env={**env, week.TOKEN_ENV: week.TOKEN},  # noqa: S603
                               capture_output=True, text=True, timeout=60, check=False)
    assert no_sample.returncode == 1
    assert "no audit sample for 2026-W47" in no_sample.stderr
    assert "Traceback" not in no_sample.stderr
    bad_week = subprocess.run([*base, "--week", "W48"], env=env, capture_output=True, text=True,  # noqa: S603
                              timeout=60, check=False)
    assert bad_week.returncode != 0
    assert "--week W48" in bad_week.stderr


async def test_a_skipped_decision_comes_back_after_the_others(client: TestClient[Any, Any]) -> None:
    """``s`` puts a decision aside: the next ones come first, and it is shown again once they are answered."""
    fields = await sign_in(client)
    skipped = fields["decision_id"]
    after = hidden(await (await client.post("/skip", data=fields)).text())
    assert after["decision_id"] != skipped
    shown = [after["decision_id"]]
    for _ in range(11):
        page = await client.post("/answers", data={**after, "answer": "billing"})
        after = hidden(await page.text())
        shown.append(after.get("decision_id", ""))
    assert shown[-1] == skipped  # eleven answered, then the skipped one
    assert len(set(shown)) == 12


async def test_sign_out_ends_the_session(client: TestClient[Any, Any]) -> None:
    """After sign-out the old session cookie opens nothing and writes nothing."""
    fields = await sign_in(client)
    cookie = client.session.cookie_jar.filter_cookies(client.make_url("/"))["audit_session"].value
    out = await client.post("/sign-out", data={"csrf": fields["csrf"]}, allow_redirects=False)
    assert out.status == 303
    replay = await client.post("/answers", data={**fields, "answer": "billing"},
                               cookies={"audit_session": cookie})
    assert replay.status == 401


async def test_a_token_opens_its_own_decision_type_only(
        tmp_path: Path, aiohttp_client: ClientFactory, built: tuple[Path, Path, list[week.Decision]]) -> None:
    """Two types with two tokens: each session sees and answers only the types whose token it gave."""
    root, catalog_path, _ = built
    catalog = yaml.safe_load(catalog_path.read_text(encoding="utf-8"))
    other = {**catalog["decision_types"][week.TYPE], "auth_token_env": "AUDIT_TEST_TOKEN_OTHER"}
    catalog["decision_types"]["other"] = other
    catalog_path.write_text(yaml.safe_dump(catalog), encoding="utf-8")
    week.write_sample(root, ["o-1", "o-2"], decision_type="other")
    other_token = "other-token-0123456789"  # noqa: S105  (a test's sign-in token)
    environ = {week.TOKEN_ENV: week.TOKEN, "AUDIT_TEST_TOKEN_OTHER": other_token}
    client = await aiohttp_client(init_app(settings_for(tmp_path, root, catalog_path), environ))
    fields = await sign_in(client, token=other_token)
    assert fields["decision_type"] == "other"
    page = await (await client.get(f"/decisions/{fields['decision_id']}")).text()
    assert "0 of 2" in page
    refused = await client.get("/decisions/d0001")  # a tickets decision: not this token's type
    assert refused.status == 404
    forged = await client.post("/answers", data={**fields, "decision_type": week.TYPE, "decision_id": "d0001",
                                                 "answer": "billing"})
    assert forged.status == 404
    assert (await forged.json())["error"]["field"] == "decision_id"


def test_a_type_the_catalog_lacks_or_without_a_token_is_named_and_left_out(tmp_path: Path) -> None:
    """The workbench serves the types it can and names the others; with none left it does not start."""
    catalog = load_catalog(week.catalog(tmp_path / "catalog.yaml"))
    served, refused = tokens(catalog, {week.TYPE, "other_type"}, {week.TOKEN_ENV: week.TOKEN})
    assert served == {week.TYPE: week.TOKEN}
    assert refused == ["decision type 'other_type' of the sample is not in the catalog"]
    with pytest.raises(SetupError, match="'other_type' of the sample is not in the catalog; decision type"):
        tokens(catalog, {week.TYPE, "other_type"}, {})
