"""Differential framing: the same request bytes through the framer, httptools (llhttp) and h11.

Each parser gives the requests it completed as ``(method, target, body)`` and whether it refused the
stream. The rule checked (`disagreement`): wherever a real parser refuses the bytes or reads other
requests, the framer must be off. Also used by ``bench/framing_differential.py`` for longer runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import h11
import httptools
from hypothesis import strategies as st

from shadow.proxy.framing import Framer

Parsed = tuple[str, str, bytes]


@dataclass(slots=True)
class Reading:
    """What one parser made of a stream."""

    requests: list[Parsed] = field(default_factory=list)
    refused: bool = False


def framer_reading(data: bytes, split: int) -> tuple[Reading, str | None]:
    """The framer fed ``split`` bytes at a time; also why it stopped (None: still framing).

    ``refused`` here means the framer is between messages: it took every byte as complete requests.
    """
    framer = Framer("request", keep=1 << 20)
    out = Reading()
    for i in range(0, len(data), split):
        out.requests.extend((m.method, m.start[1], m.body or b"") for m in framer.feed(data[i:i + split]))
    out.refused = not framer.idle
    return out, framer.off


class _Llhttp:
    def __init__(self) -> None:
        self.url = b""
        self.body: list[bytes] = []
        self.done: list[tuple[bytes, bytes]] = []

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        self.done.append((self.url, b"".join(self.body)))
        self.url, self.body = b"", []


def llhttp_reading(data: bytes) -> Reading:
    """Httptools' llhttp, strict defaults."""
    sink = _Llhttp()
    parser = httptools.HttpRequestParser(sink)
    out = Reading()
    methods: list[str] = []
    try:
        for i in range(len(data)):  # byte by byte: the method of each request is read as it completes
            before = len(sink.done)
            parser.feed_data(data[i:i + 1])
            if len(sink.done) > before:
                methods.append(parser.get_method().decode("latin-1"))
    except httptools.HttpParserUpgrade:
        pass
    except httptools.HttpParserError:
        out.refused = True
    out.requests = [(m, u.decode("latin-1"), b) for m, (u, b) in zip(methods, sink.done, strict=False)]
    return out


def h11_reading(data: bytes) -> Reading:
    """h11 as a server, answering each request with an empty 200 so the next can be read."""
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=1 << 20)
    conn.receive_data(data)
    out = Reading()
    method, target, body = "", "", b""
    try:
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA or event is h11.PAUSED or isinstance(event, h11.ConnectionClosed):
                break
            if isinstance(event, h11.Request):
                method, target, body = event.method.decode("latin-1"), event.target.decode("latin-1"), b""
            elif isinstance(event, h11.Data):
                body += bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                out.requests.append((method, target, body))
                if not _answer(conn):
                    break
    except h11.RemoteProtocolError:
        out.refused = True
    return out


def _answer(conn: h11.Connection) -> bool:
    """Send an empty 200; whether h11 will read another request on this connection."""
    if conn.our_state is not h11.SEND_RESPONSE:
        return False
    conn.send(h11.Response(status_code=200, headers=[("Content-Length", "0")]))
    conn.send(h11.EndOfMessage())
    if conn.states != {h11.CLIENT: h11.DONE, h11.SERVER: h11.DONE}:
        return False
    conn.start_next_cycle()
    return True


def disagreement(data: bytes, split: int) -> str | None:
    """Why the framer is wrong to stay on for ``data``, or None when it is right (or off).

    Wrong: it completed a request a parser did not (or read it differently), or it took the whole
    stream as complete requests where a parser refused it. A framer still inside a message has
    mirrored nothing of it, and checks the rest as it comes.
    """
    framed, off = framer_reading(data, split)
    if off is not None and off not in {"upgrade", "connection_close"}:
        return None  # off: nothing more is mirrored from this connection
    for name, reading in (("llhttp", llhttp_reading(data)), ("h11", h11_reading(data))):
        if reading.refused and off is None and not framed.refused:
            return f"{name} refused a stream the framer took as complete requests"
        if reading.requests[:len(framed.requests)] != framed.requests:
            return f"{name} read {reading.requests!r}, the framer {framed.requests!r}"
    return None


# generated streams: mostly well-formed requests, with every piece open to mutation ----------------------

TOKEN_CHARS = "!#$%&'*+-.^_`|~" + "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_ODD = st.sampled_from([b"\n", b"\r", b"\r\n", b" ", b"\t", b"\x00", b"\x7f", b"\xff", b":", b";", b",",
                        b"0x",
                        b"+", b"-", b'"', b"=", b"\x0b", b"\x0c"])
_NAMES = st.sampled_from([b"X-A", b"Accept"] * 6 + [b"Host", b"Content-Length", b"Transfer-Encoding",
                                                     b"content-length", b"transfer-encoding",
                                                     b"TRANSFER-ENCODING"])
_VALUES = st.one_of(*[st.sampled_from([b"1", b"a b", b"chunked", b"", b" v ", b"0", b"text/plain"])] * 3,
                    st.binary(max_size=6))


@st.composite
def _chunked(draw: st.DrawFn, body: bytes) -> bytes:
    out = b""
    pos = 0
    while pos < len(body):
        size = draw(st.integers(1, max(1, len(body) - pos)))
        ext = draw(st.sampled_from([b""] * 6 + [b";a=b", b";x", b" ", b"; a", b';a="q"']))
        out += b"%x%s\r\n%s\r\n" % (size, ext, body[pos:pos + size])
        pos += size
    trailer = draw(st.sampled_from([b""] * 4 + [b"X-T: 1\r\n", b"X-T : 1\r\n", b"X-T\n: 1\r\n"]))
    return out + b"0\r\n" + trailer + b"\r\n"


@st.composite
def request(draw: st.DrawFn) -> bytes:
    """One request, usually valid; hypothesis mutates methods, names, values, lengths and line ends."""
    methods = [b"GET", b"POST", b"PUT", b"HEAD", b"DELETE", b"PATCH"]
    method = draw(st.sampled_from(methods * 3 + [b"post", b"FOO"]))
    target = draw(st.sampled_from([b"/route", b"/a?b=1", b"/%20x", b"http://h/x"] * 3 + [b"*", b"/\xff"]))
    version = draw(st.sampled_from([b"HTTP/1.1"] * 12 + [b"HTTP/1.0", b"HTTP/2.0", b"HTTP/1.1 "]))
    body = draw(st.binary(max_size=24))
    framing = draw(st.sampled_from(["length"] * 4 + ["chunked"] * 3 + ["none", "both"]))
    headers: list[tuple[bytes, bytes]] = [(b"Host", b"u")]
    if framing in {"length", "both"}:
        headers.append((b"Content-Length", b"%d" % len(body)))
    if framing in {"chunked", "both"}:
        headers.append((b"Transfer-Encoding", b"chunked"))
    headers.extend(draw(st.lists(st.tuples(_NAMES, _VALUES), max_size=2)))
    headers = draw(st.permutations(headers))
    lines = [b"%s %s %s" % (method, target, version), *(b"%s: %s" % kv for kv in headers)]
    if draw(st.sampled_from([False] * 5 + [True])):  # mutate one line: insert an odd byte somewhere
        i = draw(st.integers(0, len(lines) - 1))
        at = draw(st.integers(0, len(lines[i])))
        lines[i] = lines[i][:at] + draw(_ODD) + lines[i][at:]
    eol = draw(st.sampled_from([b"\r\n"] * 12 + [b"\n"]))
    head = eol.join(lines) + eol + eol
    if framing == "chunked" or (framing == "both" and draw(st.booleans())):
        return head + draw(_chunked(body))
    return head + (body if framing != "none" else b"")


streams = st.lists(request(), min_size=1, max_size=4).map(b"".join)
"""Pipelined request streams."""
