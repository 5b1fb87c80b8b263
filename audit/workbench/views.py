"""The workbench's handlers: sign in, show a decision, answer, skip, go back, sign out.

Every write is a form POST with the session's CSRF token and answers ``303 See Other`` to the next
page, sent only after the answer is durable. Reads never touch production's outcome or a proposal.
"""

from __future__ import annotations

import re
import secrets
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, quote

from aiohttp import web
from multidict import MultiDict

from audit.workbench import pages
from audit.workbench.answers import outcome_row
from audit.workbench.errors import BadField, Forbidden, NotInSample
from audit.workbench.guards import FORM
from audit.workbench.keys import CATALOG, SESSIONS, SETTINGS, STATES, WORKLIST, WRITER
from audit.workbench.middlewares import is_decision_path
from audit.workbench.sessions import SESSION_COOKIE, SIGN_IN_COOKIE, Session, check_csrf, same
from contracts.records import NONE_OF_THESE

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from pathlib import Path

    from audit.workbench.reading import SampleRow

Form = MultiDict[str]
HTML = "text/html"
FIELD_MAX = 256
FIELDS_MAX = 32
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def see_other(url: str) -> web.Response:
    """``303 See Other``: after a write, the browser GETs the next page."""
    return web.Response(status=303, headers={"Location": url})


def _session(request: web.Request) -> Session:
    return request.app[SESSIONS].get(request.cookies.get(SESSION_COOKIE))


async def _form(request: web.Request) -> Form:
    if request.content_type != FORM:
        raise BadField(f"Content-Type: send the page's form ({FORM})", "Content-Type")
    body = await request.read()  # capped, and checked to be UTF-8, by the guards
    try:
        return MultiDict(parse_qsl(body.decode(), keep_blank_values=True, errors="strict",
                                   max_num_fields=FIELDS_MAX))
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadField(f"body: not the page's form ({exc})", "body") from exc


def _text(form: Form, name: str, max_len: int = FIELD_MAX,
          *, required: bool = True, plain: bool = True) -> str:
    """A form field; ``plain`` ones (tokens, pseudonym, paths, options) hold no control character."""
    value = form.get(name, "")
    if plain and _CONTROL.search(value):
        raise BadField(f"{name}: holds a control character", name)
    if required and not value:
        raise BadField(f"{name}: is required", name)
    if len(value) > max_len:
        raise BadField(f"{name}: at most {max_len} characters", name)
    return value


def _cookie(response: web.StreamResponse, request: web.Request, name: str, value: str,
            path: str = "/") -> None:
    secure = request.app[SETTINGS].https  # over TLS, here or at the proxy in front
    response.set_cookie(name, value, path=path, httponly=True, samesite="Strict", secure=secure)


def _decision_url(row: SampleRow) -> str:
    return f"/decisions/{quote(row.decision_id, safe='')}?type={quote(row.decision_type, safe='')}"


async def no_icon(_request: web.Request) -> web.Response:
    """No icon (browsers ask for one on every page)."""
    return web.Response(status=204)


async def index(request: web.Request) -> web.StreamResponse:
    """To the next decision (or the sign-in form)."""
    _session(request)
    return see_other("/next")


async def sign_in_form(request: web.Request) -> web.Response:
    """The sign-in form, with a fresh anti-forgery value in the form and in a cookie."""
    nonce = secrets.token_urlsafe(32)
    back = request.query.get("next", "")
    page = pages.sign_in_page(nonce, request.app[SETTINGS].week, back if is_decision_path(back) else "")
    response = web.Response(text=page, content_type=HTML)
    _cookie(response, request, SIGN_IN_COOKIE, nonce, path="/sign-in")
    return response


async def sign_in(request: web.Request) -> web.StreamResponse:
    """Check the token and the pseudonym; a session cookie and on to the first decision."""
    form = await _form(request)
    given, expected = _text(form, "csrf", required=False), request.cookies.get(SIGN_IN_COOKIE, "")
    if not given or not expected or not same(given, expected):
        raise Forbidden("csrf: sign in from the sign-in page (GET /sign-in)", "csrf")
    back = _text(form, "next", 1024, required=False)
    session_id, _ = request.app[SESSIONS].sign_in(_text(form, "token", 1024), _text(form, "auditor", 64),
                                                  client=request.remote or "")
    response = see_other(back if is_decision_path(back) else "/next")  # never a page of another site
    _cookie(response, request, SESSION_COOKIE, session_id)
    response.del_cookie(SIGN_IN_COOKIE, path="/sign-in")
    return response


async def next_decision(request: web.Request) -> web.StreamResponse:
    """The auditor's next open decision, or the page saying nothing is left."""
    session = _session(request)
    worklist = request.app[WORKLIST]
    row = worklist.next_for(session.auditor, session.types)
    if row is not None:
        return see_other(_decision_url(row))
    page = pages.done_page(session, worklist.progress(session.auditor, session.types))
    return web.Response(text=page, content_type=HTML)


def _row(request: web.Request, session: Session, decision_type: str | None, decision_id: str) -> SampleRow:
    rows = [r for r in request.app[WORKLIST].by_id.get(decision_id, [])
            if r.decision_type in session.types and decision_type in {None, r.decision_type}]
    if not rows:
        raise NotInSample(f"decision_id: {decision_id!r} is not in this week's audit sample", "decision_id")
    return rows[0]


async def decision(request: web.Request) -> web.Response:
    """One sampled decision: state, question, options in catalog order, "none of these"."""
    session = _session(request)
    row = _row(request, session, request.query.get("type"), request.match_info["decision_id"])
    app = request.app
    app[WORKLIST].claim(row.key, session.auditor)
    dtype = app[CATALOG].decision_types[row.decision_type]
    stored = app[STATES].get((row.decision_type, row.decision_id))
    progress = app[WORKLIST].progress(session.auditor, session.types)
    page = pages.decision_page(row, dtype, stored, session, progress, app[SETTINGS].note_max_chars)
    return web.Response(text=page, content_type=HTML)


async def _posted_row(request: web.Request) -> tuple[Session, Form,
                                                      SampleRow]:
    session = _session(request)
    form = await _form(request)
    check_csrf(_text(form, "csrf", required=False), session.csrf)
    _text(form, "sample_id", plain=False)  # the sample's own ids: matched exactly, never shown raw
    row = _row(request, session, _text(form, "decision_type", plain=False),
               _text(form, "decision_id", plain=False))
    if row.sample_id != form["sample_id"]:
        raise NotInSample("sample_id: not the sample this decision belongs to", "sample_id")
    return session, form, row


async def answer(request: web.Request) -> web.StreamResponse:
    """Record the answer (durably, then acknowledge) and go on to the next decision."""
    session, form, row = await _posted_row(request)
    app = request.app
    option_ids = app[CATALOG].decision_types[row.decision_type].option_ids
    choice = _text(form, "answer")
    if choice not in option_ids and choice != NONE_OF_THESE:
        raise BadField(f"answer: {choice!r} is not an option of {row.decision_type!r} nor "
                       f"{NONE_OF_THESE!r}", "answer")
    note = _text(form, "note", app[SETTINGS].note_max_chars, required=False, plain=False).strip()
    await app[WRITER].write(outcome_row(row, session.auditor, choice, option_ids), note)
    app[WORKLIST].record(row.key, session.auditor, choice)
    return see_other("/next")


async def skip(request: web.Request) -> web.StreamResponse:
    """Put the decision aside for now (it comes back after the others)."""
    session, _, row = await _posted_row(request)
    request.app[WORKLIST].skip(row.key, session.auditor)
    return see_other("/next")


async def undo(request: web.Request) -> web.StreamResponse:
    """Back to the auditor's last answered decision, to answer it again."""
    session = _session(request)
    check_csrf(_text(await _form(request), "csrf", required=False), session.csrf)
    row = request.app[WORKLIST].undo(session.auditor)
    return see_other(_decision_url(row) if row is not None else "/next")


async def sign_out(request: web.Request) -> web.StreamResponse:
    """End the session."""
    session = _session(request)
    check_csrf(_text(await _form(request), "csrf", required=False), session.csrf)
    request.app[SESSIONS].sign_out(request.cookies.get(SESSION_COOKIE))
    response = see_other("/sign-in")
    response.del_cookie(SESSION_COOKIE)
    return response


def static_files(folder: Path) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """The handler of the package's static files, by name; any other ``/static/`` path is the JSON 404."""
    files = {path.name: path for path in folder.iterdir() if path.is_file()}

    async def static_file(request: web.Request) -> web.StreamResponse:
        path = files.get(request.match_info["name"])
        if path is None:
            raise web.HTTPNotFound
        return web.FileResponse(path)

    return static_file
