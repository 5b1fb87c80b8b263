"""Request bodies in a ``Content-Encoding``, decoded by the HTTP edges themselves.

Both services turn off aiohttp's own decompression (``auto_decompress``): its parser hung, or answered
a plain-text 400, on a body that was not a whole ``gzip``/``deflate`` stream. `decode_body` runs in
the handler instead, after the raw body was read under the body cap, and caps the *decoded* size too,
so a small compressed body cannot expand past the cap (a zip bomb costs at most the cap plus one
zlib window). Its refusals are wire errors:

    400 invalid_request          ``body``: not a whole stream in the named coding, or bytes after its end
    413 body_too_large           ``body``: the decoded body is over the cap
    415 unsupported_media_type   ``Content-Encoding``: a coding other than gzip, x-gzip, deflate, identity
"""

from __future__ import annotations

import zlib
from typing import ClassVar

from contracts.errors import ContractError, InvalidRequest, WireError

CODINGS = ("gzip", "x-gzip", "deflate", "identity")
"""The content codings a request body may be in (several may be listed, applied in order)."""


class UnsupportedEncoding(ContractError, WireError):
    """The body is in a content coding this service does not decode (415, names ``Content-Encoding``)."""

    status: ClassVar[int] = 415
    code: ClassVar[str] = "unsupported_media_type"


class DecodedTooLarge(ContractError, WireError):
    """The decoded body is over the body cap (413, names ``body``)."""

    status: ClassVar[int] = 413
    code: ClassVar[str] = "body_too_large"


def decode_body(body: bytes, content_encoding: str, max_bytes: int) -> bytes:
    """``body`` with every coding in ``content_encoding`` undone (last applied, first undone)."""
    codings = [c.strip().lower() for c in content_encoding.split(",") if c.strip()]
    for coding in codings:
        if coding not in CODINGS:
            msg = f"Content-Encoding {coding!r} is not supported (use one of {', '.join(CODINGS)})"
            raise UnsupportedEncoding(msg, field="Content-Encoding")
    for coding in reversed(codings):
        if coding != "identity":
            body = _inflate(body, coding, max_bytes)
    return body


def _inflate(data: bytes, coding: str, max_bytes: int) -> bytes:
    """One zlib-family stream, whole and alone, decoded to at most ``max_bytes`` bytes."""
    if coding == "deflate":
        # RFC 9110 deflate is the zlib format; some clients send a raw deflate stream: accept both
        wbits = zlib.MAX_WBITS if _zlib_header(data) else -zlib.MAX_WBITS
    else:
        wbits = zlib.MAX_WBITS | 16
    decoder = zlib.decompressobj(wbits)
    try:
        out = decoder.decompress(data, max_bytes + 1)
    except zlib.error as exc:
        msg = f"body is not a valid {coding} stream: {exc}"
        raise InvalidRequest(msg, field="body") from exc
    if len(out) > max_bytes:
        msg = f"body decoded from {coding} is over the {max_bytes}-byte cap"
        raise DecodedTooLarge(msg, field="body")
    if not decoder.eof:
        msg = f"body is not a whole {coding} stream (it ends early)"
        raise InvalidRequest(msg, field="body")
    if decoder.unused_data:
        msg = f"body has {len(decoder.unused_data)} bytes after the end of its {coding} stream"
        raise InvalidRequest(msg, field="body")
    return out


def _zlib_header(data: bytes) -> bool:
    """Whether ``data`` opens with a zlib header (method 8, check bits right)."""
    return len(data) >= 2 and data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0
