"""The proxy's framer: message boundaries found from any split of the stream, bodies kept up to a cap."""

from __future__ import annotations

import pytest

from shadow.proxy.framing import Framer, Message
from tests.shadow.proxy.harness import SMUGGLING

REQUESTS = (b"POST /route?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello"
            b"GET /plain HTTP/1.1\r\nHost: a\r\n\r\n"
            b"PUT /chunks HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"3;name=x\r\nabc\r\n4\r\ndefg\r\n0\r\nX-Sum: 7\r\n\r\n")


def feed_in_pieces(framer: Framer, data: bytes, size: int) -> list[Message]:
    """Feed ``data`` ``size`` bytes at a time; collect the completed messages."""
    done: list[Message] = []
    for i in range(0, len(data), size):
        done.extend(framer.feed(data[i:i + size]))
    return done


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, 10_000])
def test_requests_are_framed_the_same_whatever_the_split(size: int) -> None:
    """Content-Length, no body and chunked (extensions, trailers) give the same messages from any split."""
    messages = feed_in_pieces(Framer("request", keep=1024), REQUESTS, size)
    assert [(m.start, m.body) for m in messages] == [
        (("POST", "/route?x=1", "HTTP/1.1"), b"hello"),
        (("GET", "/plain", "HTTP/1.1"), b""),
        (("PUT", "/chunks", "HTTP/1.1"), b"abcdefg"),
    ]
    assert messages[0].headers == [("Host", "a"), ("Content-Length", "5")]
    assert all(m.complete for m in messages)


def test_bodies_over_the_cap_are_framed_but_not_kept() -> None:
    """A body larger than ``keep`` still ends where it should; its copy is None."""
    data = (b"POST /big HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n0123456789"
            b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
    messages = Framer("request", keep=4).feed(data)
    assert [(m.start[1], m.body) for m in messages] == [("/big", None), ("/", b"")]


def test_responses_follow_the_request_method_and_status() -> None:
    """HEAD, 204 and 304 have no body; 100 Continue is skipped; no length means until close."""
    methods = iter(["HEAD", "GET", "GET", "POST", "GET"])
    current = {"method": next(methods)}
    framer = Framer("response", keep=1024, request_method=lambda: current["method"])
    stream = [b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n",            # HEAD: no body follows
              b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n",
              b"HTTP/1.1 304 Not Modified\r\n\r\n",
              b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok",
              b"HTTP/1.0 200 OK\r\n\r\nuntil the end"]
    bodies: list[tuple[int, bytes | None]] = []
    for data in stream:
        done = framer.feed(data)
        bodies.extend((m.status, m.body) for m in done)
        if done:
            current["method"] = next(methods, "GET")
    bodies.extend((m.status, m.body) for m in framer.eof())
    assert bodies == [(200, b""), (204, b""), (304, b""), (201, b"ok"), (200, b"until the end")]


def test_upgrades_and_connect_turn_framing_off() -> None:
    """After 101 or a 2xx to CONNECT the bytes are another protocol: the framer stops, saying why."""
    framer = Framer("response", keep=64, request_method=lambda: "GET")
    assert framer.feed(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x81\x05hello") == []
    assert framer.off == "upgrade"
    connect = Framer("response", keep=64, request_method=lambda: "CONNECT")
    assert [m.status for m in connect.feed(b"HTTP/1.1 200 Connection established\r\n\r\n\x16\x03")] == [200]
    assert connect.off == "upgrade"
    request = Framer("request", keep=64)
    done = request.feed(b"GET /ws HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
                        b"\x81\x85")
    assert [m.start[1] for m in done] == ["/ws"]
    assert request.off == "upgrade"


@pytest.mark.parametrize("name", sorted(SMUGGLING))
def test_what_a_parser_could_read_two_ways_turns_framing_off(name: str) -> None:
    """Each smuggling vector: no message is framed, the framer is off and stays off.

    The relay still forwards the bytes; the upstream decides.
    """
    framer = Framer("request", keep=64)
    assert framer.feed(SMUGGLING[name]) == []
    assert framer.off == "unparsed_request"
    assert framer.feed(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n") == []


@pytest.mark.parametrize("piece", [1, 7, 4096])
def test_a_head_fed_in_pieces_is_searched_in_linear_work(piece: int) -> None:
    """A head arriving a few bytes per feed costs work linear in its size, not quadratic.

    Counted, not timed: ``Framer.searched`` is the bytes searched for line ends. Per byte of head it
    stays under a constant (about 10 at one byte per feed), and four times the head is at most about
    four times the work. A re-scan of the whole buffer on each feed (the quadratic framing) searches
    ~30,000 bytes per byte of a 60 KiB head and fails both checks.
    """
    work = {}
    for size in (15_000, 60_000):
        head = b"GET / HTTP/1.1\r\nHost: a\r\nX-Big: " + b"x" * size + b"\r\n\r\n"
        framer = Framer("request", keep=64)
        done = feed_in_pieces(framer, head, piece)
        assert [m.start[1] for m in done] == ["/"]
        assert framer.off is None
        assert framer.searched <= 12 * len(head), (size, framer.searched)
        work[size] = framer.searched
    assert work[60_000] <= 4.5 * work[15_000], work


def test_a_head_over_the_limit_turns_framing_off() -> None:
    """Heads are buffered only up to ``head_limit``."""
    framer = Framer("request", keep=64, head_limit=100)
    assert framer.feed(b"GET / HTTP/1.1\r\nHost: a\r\nX-Big: " + b"x" * 200) == []
    assert framer.off == "request_head_too_large"


def test_on_head_sees_requests_before_their_bodies_arrive() -> None:
    """The relay pairs responses with requests from the head on (a 413 can come before the body ends)."""
    heads: list[Message] = []
    framer = Framer("request", keep=64, on_head=heads.append)
    framer.feed(b"POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\npart")
    assert [(m.start[1], m.complete) for m in heads] == [("/upload", False)]


def test_responses_in_one_feed_each_follow_their_own_request() -> None:
    """A HEAD answer and a GET answer arriving together: each is framed by its own request's method.

    With ``on_message`` the caller moves to the next request as each response completes (the HEAD
    answer's Content-Length must not swallow the next response as its body).
    """
    pending = ["HEAD", "GET", "GET"]
    done: list[Message] = []

    def answered(message: Message) -> None:
        done.append(message)
        pending.pop(0)

    framer = Framer("response", keep=1024, request_method=lambda: pending[0] if pending else None,
                    on_message=answered)
    assert framer.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 3145728\r\n\r\n"
                       b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
                       b"HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\n\r\nnope") == []
    assert [(m.status, m.body) for m in done] == [(200, b""), (200, b"ok"), (404, b"nope")]
    assert pending == []


def test_on_head_decides_whether_a_body_is_copied() -> None:
    """The relay copies bodies only for claimed routes: ``on_head`` sets ``keep`` before the body comes."""
    framer = Framer("request", keep=1024)
    framer.on_head = lambda m: setattr(framer, "keep", 1024 if m.start[1] == "/route" else 0)
    done = framer.feed(b"POST /other HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc"
                       b"POST /route HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nxyz")
    assert [(m.start[1], m.body) for m in done] == [("/other", None), ("/route", b"xyz")]
