"""Who may reach the workbench: sign-in that cannot be guessed at, a Host allowlist, TLS off loopback.

- Wrong sign-in tokens are counted per client and per decision type over a short window; past the limit
  sign-in is ``429`` with ``Retry-After`` (the right token too), and each failure is logged without the
  token.
- A request whose ``Host`` is not a name of this workbench (loopback names when it listens on loopback,
  its listen address or ``--public-host`` otherwise) is a ``421`` naming ``Host``: a DNS-rebinding page
  never reaches the token check.
- Off loopback the workbench serves HTTPS, or says a TLS proxy is in front (``--behind-tls-proxy``: the
  cookie is then ``Secure`` and HSTS is sent); plain HTTP off loopback refuses to start.
"""

from __future__ import annotations

import logging
import os
import subprocess
from typing import TYPE_CHECKING, Any

import pytest

from audit.errors import SetupError
from audit.workbench.app import init_app
from audit.workbench.limits import SignInLimits
from audit.workbench.sessions import Sessions
from tests.audit import serving, week
from tests.audit.forms import hidden
from tests.audit.week import settings_for

if TYPE_CHECKING:
    from pathlib import Path

    from aiohttp.test_utils import TestClient

    from tests.typing import ClientFactory

GUESS = "guess-0123456789-{}"


async def test_the_51st_wrong_token_is_a_429_with_retry_after(
        client: TestClient[Any, Any], caplog: pytest.LogCaptureFixture) -> None:
    """50 wrong tokens in a row from one client, then the 51st and the right one: 429 with ``Retry-After``.

    The first failures are 401s; past the per-client limit every try is a 429 naming ``token`` that
    checks nothing and signs nobody in. Each failure is logged, never with the token.
    """
    caplog.set_level(logging.INFO)
    form = hidden(await (await client.get("/sign-in")).text())
    statuses = []
    for i in range(51):
        answer = await client.post("/sign-in", data={"csrf": form["csrf"], "token": GUESS.format(i),
                                                     "auditor": "mallory"})
        statuses.append(answer.status)
    assert statuses[0] == 401
    assert set(statuses) == {401, 429}
    assert statuses[-1] == 429
    last = await client.post("/sign-in", allow_redirects=False,
                             data={"csrf": form["csrf"], "token": week.TOKEN, "auditor": "mallory"})
    assert last.status == 429
    assert 1 <= int(last.headers["Retry-After"]) <= 60
    assert (await last.json())["error"]["field"] == "token"
    assert "audit_session" not in last.headers.get("Set-Cookie", "")
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "sign-in refused" in logged
    assert "guess-0123456789" not in logged
    assert week.TOKEN not in logged


def test_failures_are_counted_per_client_and_per_decision_type() -> None:
    """Ten failures lock one client out, not another; fifty from many clients lock the type for all.

    A lock lasts until the window has moved past the failures (a fake clock moves it).
    """
    now = [0.0]
    sessions = Sessions({week.TYPE: week.TOKEN}, SignInLimits(10, 50, 60.0, clock=lambda: now[0]),
                        clock=lambda: now[0])
    for i in range(10):
        with pytest.raises(Exception, match="token"):
            sessions.sign_in(GUESS.format(i), "mallory", client="192.0.2.7")
    with pytest.raises(Exception, match="try again") as locked:
        sessions.sign_in(week.TOKEN, "mallory", client="192.0.2.7")
    assert getattr(locked.value, "retry_after", None) == 60
    sessions.sign_in(week.TOKEN, "alice", client="192.0.2.8")  # another client signs in
    now[0] = 61.0
    sessions.sign_in(week.TOKEN, "mallory", client="192.0.2.7")  # the window has moved on
    for i in range(50):
        with pytest.raises(Exception, match="token"):
            sessions.sign_in(GUESS.format(i), "mallory", client=f"198.51.100.{i}")
    with pytest.raises(Exception, match="try again"):
        sessions.sign_in(week.TOKEN, "alice", client="192.0.2.9")  # the type is locked for every client
    now[0] = 122.0
    sessions.sign_in(week.TOKEN, "alice", client="192.0.2.9")


async def test_a_foreign_host_is_a_421_before_anything_else(client: TestClient[Any, Any]) -> None:
    """``Host: rebind.attacker.example`` (with its own ``Origin``): 421 naming ``Host``, on every route.

    The loopback names the workbench listens on are accepted, with or without a port.
    """
    form = hidden(await (await client.get("/sign-in")).text())
    foreign = {"Host": "rebind.attacker.example", "Origin": "http://rebind.attacker.example"}
    for method, path in (("GET", "/sign-in"), ("POST", "/sign-in"), ("GET", "/static/workbench.js"),
                         ("GET", "/no-such-page")):
        answer = await client.request(method, path, headers=foreign,
                                      data={"csrf": form["csrf"], "token": week.TOKEN, "auditor": "m"})
        assert answer.status == 421, (method, path, answer.status)
        assert (await answer.json())["error"]["field"] == "Host"
        assert "audit_session" not in answer.headers.get("Set-Cookie", "")
    port = client.server.port
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost", f"[::1]:{port}", "LOCALHOST."):
        assert (await client.get("/sign-in", headers={"Host": host})).status == 200, host


def test_off_loopback_plain_http_refuses_to_start(tmp_path: Path) -> None:
    """``--host 192.0.2.2`` without TLS: exit 1 with one line saying what to do; no traceback."""
    records = tmp_path / "records"
    week.write_sample(records, ["d0001"])
    catalog = week.catalog(tmp_path / "catalog.yaml")
    command = [serving.CLI, "audit", "serve", "--root", str(records), "--catalog", str(catalog), "--week",
               week.WEEK, "--spool", str(tmp_path / "spool"), "--port", "0", "--host", "192.0.2.2"]
    refused = subprocess.run(command, env={**os.environ, week.TOKEN_ENV: week.TOKEN},  # noqa: S603
                             capture_output=True, text=True, timeout=60, check=False)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        "Error: --host 192.0.2.2 is not a loopback address: serve HTTPS there (--tls-cert, --tls-key), "
        "or pass --behind-tls-proxy if a TLS proxy is in front")
    for host in ("0.0.0.0", "::", "10.1.2.3", "audit.example.org"):  # noqa: S104  (what is refused)
        with pytest.raises(SetupError, match="not a loopback address"):
            init_app(settings_for(tmp_path, records, catalog, host=host), {week.TOKEN_ENV: week.TOKEN})


async def test_behind_a_tls_proxy_the_cookie_is_secure_and_hsts_is_sent(
        tmp_path: Path, aiohttp_client: ClientFactory, built: tuple[Path, Path, list[week.Decision]]) -> None:
    """``--behind-tls-proxy`` off loopback: it starts; through the proxy's name the cookie is ``Secure``.

    HSTS is on every answer; the proxy's ``Host`` is the one ``--public-host`` names, and a loopback name
    is foreign to a workbench listening elsewhere.
    """
    settings = settings_for(tmp_path, *built[:2], host="0.0.0.0", behind_tls_proxy=True,  # noqa: S104
                            public_host="audit.example.org")
    client = await aiohttp_client(init_app(settings, {week.TOKEN_ENV: week.TOKEN}))
    proxied = {"Host": "audit.example.org", "Origin": "https://audit.example.org"}
    page = await client.get("/sign-in", headers=proxied)
    assert page.status == 200
    assert page.headers["Strict-Transport-Security"] == "max-age=31536000"
    form = hidden(await page.text())
    assert "Secure" in page.headers["Set-Cookie"]
    cookie = f"audit_sign_in={form['csrf']}"  # a browser sends it back over HTTPS; the jar not here
    answer = await client.post("/sign-in", headers={**proxied, "Cookie": cookie}, allow_redirects=False,
                               data={"csrf": form["csrf"], "token": week.TOKEN, "auditor": "a1"})
    assert answer.status == 303, await answer.text()
    assert any("audit_session=" in c and "Secure" in c for c in answer.headers.getall("Set-Cookie"))
    assert (await client.get("/sign-in", headers={"Host": "localhost"})).status == 421
