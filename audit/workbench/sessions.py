"""Sign-in, sessions and CSRF tokens.

Sign-in takes a decision type's token (the same environment variable as the sidecar's API token,
``auth_token_env`` in the catalog) and a pseudonym; the session may audit every served type whose
token it gave. Sessions live in memory under a random id (the ``HttpOnly``, ``SameSite=Strict`` cookie;
``Secure`` over TLS): a restart signs everyone out, and their answers stay in the records.

Sign-in is limited (``limits.py``): past too many wrong tokens from one client, or against one decision
type, it is a ``429`` for a while, the right token included. Each wrong token is logged (the client and
the pseudonym, never the token).

Every write carries the session's CSRF token in a form field (``csrf``); the sign-in form, before there
is a session, carries a fresh random value that must equal its ``SameSite=Strict`` cookie.
"""

from __future__ import annotations

import hmac
import logging
import re
import secrets
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from audit.workbench.errors import BadField, Forbidden, SignInRequired, TooManyAttempts
from audit.workbench.limits import CLIENT, TYPE, SignInLimits

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

log = logging.getLogger(__name__)

SESSION_COOKIE = "audit_session"
SIGN_IN_COOKIE = "audit_sign_in"
SESSION_S = 12 * 3600.0
AUDITOR_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
"""A pseudonym (the whole string, ``fullmatch``): letters, digits, ``_.-``; never an e-mail address."""


@dataclass
class Session:
    """One signed-in auditor."""

    auditor: str
    types: frozenset[str]
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    expires: float = 0.0


def same(given: str, expected: str) -> bool:
    """A constant-time comparison of two strings."""
    return hmac.compare_digest(given.encode(errors="surrogateescape"), expected.encode())


class Sessions:
    """The signed-in auditors by session id."""

    def __init__(self, tokens: Mapping[str, str], limits: SignInLimits | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._tokens = dict(tokens)
        self._limits = limits or SignInLimits()
        self._clock = clock
        self._by_id: dict[str, Session] = {}

    def sign_in(self, token: str, auditor: str, *, client: str) -> tuple[str, Session]:
        """A new session for a valid token and pseudonym from ``client``: ``(session id, session)``.

        ``TooManyAttempts`` (429) while the client, or every type, is locked; nothing is compared then.
        """
        wait = self._limits.retry_after((CLIENT, client))
        if wait:
            raise _too_many("from here", wait)
        if not AUDITOR_PATTERN.fullmatch(auditor):
            raise BadField("auditor: a pseudonym of letters, digits and _.- (at most 64; not an e-mail)",
                           "auditor")
        locked = {name: w for name in self._tokens if (w := self._limits.retry_after((TYPE, name)))}
        open_types = [name for name in self._tokens if name not in locked]
        if not open_types:
            raise _too_many("lately", min(locked.values()))
        types = frozenset(name for name in open_types if same(token, self._tokens[name]))
        if not token or not types:
            self._failed(client, auditor, open_types)
            if locked:  # it may have been a locked type's token: that one was not compared
                raise _too_many("lately", min(locked.values()))
            raise SignInRequired("token: not the token of a served decision type", "token")
        now = self._clock()
        self._by_id = {k: s for k, s in self._by_id.items() if s.expires > now}
        session_id = secrets.token_urlsafe(32)
        session = Session(auditor, types, expires=now + SESSION_S)
        self._by_id[session_id] = session
        return session_id, session

    def _failed(self, client: str, auditor: str, types: list[str]) -> None:
        count = self._limits.failed([(CLIENT, client), *((TYPE, name) for name in types)])
        limit, window = self._limits.limit(CLIENT), self._limits.window_s
        log.warning("sign-in refused: a wrong token from %s (pseudonym %s; %d of %d failures allowed "
                    "in %g s)", client, auditor, count, limit, window)
        for name in types:
            if self._limits.retry_after((TYPE, name)):
                log.warning("sign-in locked for decision type %s: %d wrong tokens in %g s",
                            name, self._limits.limit(TYPE), window)

    def get(self, session_id: str | None) -> Session:
        """The live session of this id; 401 without one."""
        session = self._by_id.get(session_id or "")
        if session is None or session.expires <= self._clock():
            raise SignInRequired("sign in first (GET /sign-in)", SESSION_COOKIE)
        return session

    def sign_out(self, session_id: str | None) -> None:
        """Forget the session."""
        self._by_id.pop(session_id or "", None)


def _too_many(where: str, wait: int) -> TooManyAttempts:
    return TooManyAttempts(f"token: too many wrong tokens {where}; try again in {wait} s", "token", wait)


def check_csrf(given: str | None, expected: str) -> None:
    """403 unless the form's ``csrf`` field equals the expected token."""
    if not given or not same(given, expected):
        raise Forbidden("csrf: missing or wrong CSRF token (reload the page)", "csrf")
