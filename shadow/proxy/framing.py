"""HTTP/1.1 message framing for the proxy: where each message ends, without changing a byte.

The proxy relays bytes as they arrive and feeds the same bytes to a `Framer`, which only watches: it
finds each message's head and body (Content-Length, chunked, or until close), keeps a copy of bodies up
to a cap for the mirror, and says when a message is complete. It never produces bytes to send.

Anything it cannot follow (a malformed head, a head over the limit, an upgraded or CONNECT tunnel) turns
the framer off for the rest of the connection (``framer.off`` names why): the bytes flow on, unmirrored.

It is at least as strict as the strictest upstream it may sit in front of, and never guesses: where a
real parser (llhttp, h11, nginx) could read the bytes differently, it stops. Lines end only in CRLF (a
bare CR or LF anywhere in a head or chunk line is off), methods are the standard upper-case ones,
header names are tokens, values have no control bytes, ``Content-Length`` is digits and appears once,
``Transfer-Encoding`` is exactly ``chunked`` and never beside a ``Content-Length``, chunk sizes are at
most 15 hex digits, targets are origin, absolute or ``*`` form, an HTTP/1.1 request has one ``Host``,
nothing precedes a start line (checked against llhttp and h11 by ``test_framing_differential.py``).
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from enum import Enum, auto
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from collections.abc import Callable

CRLF, HEAD_END = b"\r\n", b"\r\n\r\n"
NO_BODY_STATUSES = frozenset({204, 304})
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "CONNECT"})
_TOKEN = rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_VCHAR = rb"[\x21-\x7e\x80-\xff]"
_TARGET = rb"/[\x21-\x7e]*|\*|https?://[A-Za-z0-9.\-]+(?::[0-9]{1,5})?(?:/[\x21-\x7e]*)?"  # no other forms
_REQUEST_LINE = re.compile(rb"(" + _TOKEN + rb") (" + _TARGET + rb") (HTTP/1\.[01])")
_STATUS_LINE = re.compile(rb"(HTTP/1\.[01]) ([1-9][0-9]{2}) ((?:[\t \x21-\x7e\x80-\xff])*)")
_FIELD = re.compile(rb"(" + _TOKEN + rb"):[ \t]*(" + _VCHAR + rb"(?:[ \t]*" + _VCHAR + rb")*)?[ \t]*")
_LENGTH = re.compile(rb"[0-9]{1,15}")
_BARE_EOL = re.compile(rb"\r(?=[^\n])|(?<!\r)\n")
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,15})((?:;" + _TOKEN + rb"(?:=" + _TOKEN + rb")?)*)")


@dataclass(slots=True)
class Message:
    """One framed message: its start line and headers, and its body when it fit in the cap."""

    start: tuple[str, str, str]
    """Request: (method, target, version). Response: (version, status, reason)."""
    headers: list[tuple[str, str]]
    body: bytes | None = None
    """The body bytes, or None when it was larger than the framer's ``keep`` cap."""
    complete: bool = False
    """Set once the whole body has been seen."""

    @property
    def method(self) -> str:
        """A request's method."""
        return self.start[0]

    @property
    def status(self) -> int:
        """A response's status code."""
        return int(self.start[1])


class _State(Enum):
    HEAD = auto()
    LENGTH = auto()
    CHUNK_SIZE = auto()
    CHUNK_DATA = auto()
    CHUNK_CRLF = auto()
    TRAILER = auto()
    UNTIL_CLOSE = auto()
    OFF = auto()


class FramingError(Exception):
    """The stream is not HTTP/1.1 this framer can follow."""


@dataclass(slots=True)
class _Body:
    """A bounded copy of one body."""

    keep: int
    parts: list[bytes] = field(default_factory=list)
    size: int = 0

    def add(self, data: bytes | memoryview) -> None:
        self.size += len(data)
        if self.size <= self.keep:
            self.parts.append(bytes(data))
        elif self.parts:
            self.parts.clear()

    def value(self) -> bytes | None:
        return b"".join(self.parts) if self.size <= self.keep else None


class Framer:
    """Frames one direction of one connection: requests (client to upstream) or responses.

    ``feed`` returns the messages completed by the data; ``eof`` completes a body read until close;
    ``on_head`` sees each head once parsed (responses: final ones only; it may set ``keep``). A
    response framer asks ``request_method()`` for the method of the request each response answers (a
    HEAD response has no body; a 2xx to CONNECT opens a tunnel). When one feed holds several responses,
    the answer must move on as each one completes: pass ``on_message``, which receives every completed
    message at once, before the next head is framed (``feed`` then returns nothing). A head still arriving
    is buffered and only its new bytes are searched: ``searched`` counts bytes searched, linear in the head.
    """

    def __init__(self, kind: Literal["request", "response"], keep: int, *,  # noqa: PLR0913  (keyword-only hooks)
                 head_limit: int = 65536,
                 request_method: Callable[[], str | None] | None = None,
                 on_head: Callable[[Message], None] | None = None,
                 on_message: Callable[[Message], None] | None = None) -> None:
        self.kind = kind
        self.on_head = on_head
        self.on_message = on_message
        self.keep = keep
        self.head_limit = head_limit
        self.request_method = request_method or (lambda: None)
        self.off: str | None = None
        self._state = _State.HEAD
        self._buf = bytearray()
        self._scanned = self.searched = 0
        self._remaining = 0
        self._message: Message | None = None
        self._body = _Body(keep)
        self._done: deque[Message] = deque()
        self._stop_after: str | None = None

    def feed(self, data: bytes) -> list[Message]:
        """Follow ``data``; return the messages it completed, in order."""
        if self._state is _State.OFF:
            return []
        try:
            self._feed(data)
        except (FramingError, ValueError, IndexError) as exc:
            self.stop(f"unparsed_{self.kind}" if not isinstance(exc, FramingError) else str(exc))
        done = list(self._done)
        self._done.clear()
        return done

    def eof(self) -> list[Message]:
        """The stream ended: a body read until close is complete; anything else half-read is not."""
        if self._state is _State.UNTIL_CLOSE:
            self._complete()
            self._state = _State.OFF
        done = list(self._done)
        self._done.clear()
        return done

    def stop(self, reason: str) -> None:
        """Stop framing this connection (its bytes keep flowing; they are no longer mirrored)."""
        self.off = self.off or reason
        self._state = _State.OFF
        self._buf = bytearray()
        self._message, self._body = None, _Body(0)  # the copy of a body still arriving goes too

    @property
    def idle(self) -> bool:
        """Between messages, with nothing of the next one seen yet."""
        return self._state is _State.HEAD and not self._buf

    def _feed(self, data: bytes) -> None:
        if self._buf:  # a head or line is still arriving: search only the new bytes for its end
            marker = HEAD_END if self._state is _State.HEAD else CRLF
            self._buf += data
            self.searched += len(self._buf) - self._scanned
            if self._buf.find(marker, self._scanned) < 0:
                self._waiting(marker)
                return
            buf = bytes(self._buf)
            self._buf = bytearray()
        else:
            buf = data
        pos, end = 0, len(buf)
        while pos < end:
            state = self._state
            if state is _State.HEAD:
                pos = self._head(buf, pos)
            elif state in (_State.LENGTH, _State.CHUNK_DATA):
                pos = self._take(buf, pos, end)
            elif state is _State.UNTIL_CLOSE:
                self._body.add(memoryview(buf)[pos:])
                return
            elif state is _State.OFF:
                return
            else:
                pos = self._line(buf, pos)
            if pos < 0:
                return

    def _waiting(self, marker: bytes) -> None:
        """The end of a head or line has not arrived: keep what did (bounded), remember what was searched."""
        limit, what = (self.head_limit, "head_too_large") if marker is HEAD_END else (1024, "chunk_line_long")
        if len(self._buf) > limit:
            raise FramingError(f"{self.kind}_{what}")
        self.searched += len(self._buf) - max(0, self._scanned - 1)
        if _BARE_EOL.search(self._buf, max(0, self._scanned - 1)):  # off now, not when the head ends
            raise FramingError(f"unparsed_{self.kind}")
        self._scanned = max(0, len(self._buf) - len(marker) + 1)

    def _take(self, buf: bytes, pos: int, end: int) -> int:
        """Body bytes of a known length (a Content-Length body or one chunk)."""
        take = min(self._remaining, end - pos)
        self._body.add(memoryview(buf)[pos:pos + take])
        self._remaining -= take
        if not self._remaining:
            if self._state is _State.LENGTH:
                self._complete()
            else:
                self._state = _State.CHUNK_CRLF
        return pos + take

    def _find(self, buf: bytes, marker: bytes, pos: int) -> int:
        """Where ``marker`` is; -1 (the rest kept for the next feed) when it has not arrived yet."""
        found = buf.find(marker, pos)
        self.searched += (len(buf) if found < 0 else found + len(marker)) - pos
        if found < 0:
            self._buf = bytearray(memoryview(buf)[pos:])
            self._waiting(marker)
        return found

    def _line(self, buf: bytes, pos: int) -> int:
        """The chunk-size line, the CRLF after chunk data, or a trailer line; -1 to wait for more."""
        eol = self._find(buf, CRLF, pos)
        if eol < 0:
            return -1
        line = buf[pos:eol]
        state = self._state
        if state is _State.CHUNK_SIZE:
            match = _CHUNK_SIZE.fullmatch(line)
            if match is None:
                raise FramingError(f"unparsed_{self.kind}")
            size = int(match[1], 16)
            if size:
                self._state, self._remaining = _State.CHUNK_DATA, size
            else:
                self._state = _State.TRAILER
        elif state is _State.CHUNK_CRLF:
            if line:
                raise FramingError(f"unparsed_{self.kind}")
            self._state = _State.CHUNK_SIZE
        elif not line:  # the empty line that ends the trailers
            self._complete()
        elif _FIELD.fullmatch(line) is None:
            raise FramingError(f"unparsed_{self.kind}")
        return eol + 2

    def _head(self, buf: bytes, pos: int) -> int:
        """Parse a head starting at ``pos``; return where its body starts, or -1 to wait for more."""
        end = self._find(buf, HEAD_END, pos)
        if end < 0:
            return -1
        lines = buf[pos:end].split(CRLF)
        start = (_REQUEST_LINE if self.kind == "request" else _STATUS_LINE).fullmatch(lines[0])
        if start is None:
            raise FramingError(f"unparsed_{self.kind}")
        headers = []
        for line in lines[1:]:
            field_match = _FIELD.fullmatch(line)  # a bare CR or LF, a space before the colon: no match
            if field_match is None:
                raise FramingError(f"unparsed_{self.kind}")
            headers.append((field_match[1].decode("latin-1"), (field_match[2] or b"").decode("latin-1")))
        start_line = (start[1].decode("latin-1"), start[2].decode("latin-1"), start[3].decode("latin-1"))
        if self.kind == "request" and start_line[0] not in METHODS:
            raise FramingError("unparsed_request")
        self._message = message = Message(start_line, headers)
        chunked, length = self._framing(message)
        if self.on_head is not None and (self.kind == "request" or message.status >= 200):
            self.on_head(message)  # it may set ``keep`` for this message's body (0: keep no copy)
        self._body = _Body(self.keep)
        self._frame(message, chunked, length)
        return end + 4

    def _frame(self, message: Message, chunked: bool, length: int | None) -> None:
        """How this message's body is delimited (RFC 9112, 6.3)."""
        if self.kind == "request":
            if message.method == "CONNECT" or any(n.lower() == "upgrade" for n, _ in message.headers):
                self._stop_after = "upgrade"  # what follows may be another protocol: stop after this one
            elif message.start[2] == "HTTP/1.0" or any(
                    n.lower() == "connection" and "close" in v.lower() for n, v in message.headers):
                self._stop_after = "connection_close"  # the upstream may close, or read on: no guessing
            self._body_by(chunked, length, until_close=False)
            return
        status = message.status
        if status < 200:
            if status == 101:
                self.stop("upgrade")
            else:
                self._message = None
                self._state = _State.HEAD
            return
        method = self.request_method()
        if method == "CONNECT" and status < 300:
            self._complete()
            self.stop("upgrade")
        elif method == "HEAD" or status in NO_BODY_STATUSES:
            self._complete()
        else:
            self._body_by(chunked, length, until_close=True)

    def _framing(self, message: Message) -> tuple[bool, int | None]:
        """(chunked, Content-Length) from the headers; anything a parser could read two ways is refused."""
        chunked, length, hosts = False, None, 0
        for name, value in message.headers:
            lower = name.lower()
            if lower == "transfer-encoding":
                if chunked or value.lower() != "chunked":
                    raise FramingError(f"unparsed_{self.kind}")
                chunked = True
            elif lower == "content-length":
                if length is not None or _LENGTH.fullmatch(value.encode("latin-1")) is None:
                    raise FramingError(f"unparsed_{self.kind}")
                length = int(value)
            elif lower == "host":
                hosts += 1
        if chunked and length is not None:
            raise FramingError(f"unparsed_{self.kind}")
        http11 = message.start[2] == "HTTP/1.1"
        if self.kind == "request" and ((hosts != 1) if http11 else (hosts > 1 or chunked)):
            raise FramingError("unparsed_request")
        return chunked, length

    def _body_by(self, chunked: bool, length: int | None, *, until_close: bool) -> None:
        if chunked:
            self._state = _State.CHUNK_SIZE
        elif length:
            self._state, self._remaining = _State.LENGTH, length
        elif length is None and until_close:
            self._state = _State.UNTIL_CLOSE
        else:
            self._complete()

    def _complete(self) -> None:
        message = self._message
        if message is not None:
            message.body = self._body.value()
            message.complete = True
            if self.on_message is not None:
                self.on_message(message)
            else:
                self._done.append(message)
        self._message = None
        self._state = _State.HEAD
        if self._stop_after is not None:
            self.stop(self._stop_after)
