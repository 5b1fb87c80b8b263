"""What every request passes before any handler reads it, and what the workbench checks before it listens.

In order, on every route (unknown paths included):

1. ``Host`` names this workbench: a loopback name when it listens on loopback, else its listen address,
   and ``public_host`` (a proxy's name) in both cases. Anything else is ``421`` naming ``Host``: a page
   that rebinds its own DNS name to the workbench's address never reaches the sign-in check.
2. A declared ``Content-Length`` over the cap is ``413`` naming ``body`` at once, before a byte of it is
   awaited (a body without a length is capped while read: 413 as well).
3. A body must be UTF-8: a ``charset`` other than UTF-8 (or ASCII) is ``400`` naming ``Content-Type``;
   bytes that are not UTF-8, or a form whose ``%``-escapes are not, ``400`` naming ``body``.

At start, plain HTTP off loopback is refused: HTTPS of its own (``tls_cert``), or a TLS proxy in front
said so (``behind_tls_proxy``).
"""

from __future__ import annotations

import codecs
import ipaddress
import re
from typing import TYPE_CHECKING
from urllib.parse import unquote_to_bytes

from audit.errors import SetupError
from audit.workbench.errors import BadField, MisdirectedHost
from contracts.errors import BodyTooLarge

if TYPE_CHECKING:
    from aiohttp import web

    from audit.workbench.settings import WorkbenchSettings

FORM = "application/x-www-form-urlencoded"
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
_HOST_HEADER = re.compile(r"(?P<name>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::[0-9]{1,5})?")
_CHARSETS = frozenset({"utf-8", "ascii"})


def _plain(name: str) -> str:
    """A host name as compared: no brackets, lower case, no trailing dot."""
    return name.strip("[]").lower().rstrip(".")


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a listen address or name) is loopback only."""
    name = _plain(host)
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_names(settings: WorkbenchSettings) -> frozenset[str]:
    """The ``Host`` names the workbench answers to (see the module docstring)."""
    names = set(LOOPBACK_NAMES) if is_loopback(settings.host) else set()
    try:
        wildcard = ipaddress.ip_address(_plain(settings.host)).is_unspecified
    except ValueError:
        wildcard = False
    if not wildcard:
        names.add(_plain(settings.host))
    if settings.public_host:
        names.add(_plain(settings.public_host))
    return frozenset(names)


def check_exposure(settings: WorkbenchSettings) -> None:
    """Refuse to listen with plain HTTP off loopback (``SetupError``: one line saying what to do)."""
    if not settings.https and not is_loopback(settings.host):
        raise SetupError(f"--host {settings.host} is not a loopback address: serve HTTPS there "
                         f"(--tls-cert, --tls-key), or pass --behind-tls-proxy if a TLS proxy is in front")


def check_host(request: web.Request, names: frozenset[str]) -> None:
    """421 unless the request's ``Host`` is one of ``names`` (any port)."""
    given = request.headers.get("Host", "")
    match = _HOST_HEADER.fullmatch(given)
    if match is None or _plain(match["name"]) not in names:
        raise MisdirectedHost(f"Host: {given[:100]!r} is not a name of this workbench", "Host")


async def check_body(request: web.Request, cap: int) -> None:
    """413 for a declared body over ``cap``; 400 for one that is not UTF-8 (see the module docstring)."""
    declared = request.content_length
    if declared is not None and declared > cap:
        raise BodyTooLarge(f"body: {declared} bytes declared, over the {cap}-byte cap", "body")
    if not request.body_exists:
        return
    charset = request.charset
    if charset is not None and _codec(charset) not in _CHARSETS:
        raise BadField(f"Content-Type: charset {charset[:40]!r}: send UTF-8", "Content-Type")
    body = await request.read()  # capped by client_max_size: 413 beyond
    try:
        text = body.decode()
    except UnicodeDecodeError as exc:
        raise BadField(f"body: not UTF-8 (byte {exc.start})", "body") from exc
    if request.content_type == FORM:
        try:  # every field's escapes are UTF-8 exactly when all of them are: "&" and "=" are ASCII
            unquote_to_bytes(text).decode()
        except UnicodeDecodeError as exc:
            raise BadField("body: a %-escape that is not UTF-8", "body") from exc


def _codec(charset: str) -> str | None:
    try:
        return codecs.lookup(charset).name
    except LookupError:
        return None
