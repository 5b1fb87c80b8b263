"""The hand-off channel between the relay process and the sidecar: frames over a Unix socket.

Frames: a type byte, a 4-byte big-endian length, the payload. ``X`` an exchange (four length-prefixed
blobs: request head, request body, response head, response body; a body over the mirror cap has length
0xFFFFFFFF), ``C`` cumulative counters as JSON, ``R`` ready with the bound port as JSON.

The relay never waits for the sidecar: `ChannelHooks` drops a frame that does not fit in
``SHADOW_PROXY_HANDOFF_BYTES`` of unsent bytes and counts it (``handoff_full``), per claimed route too,
so the sidecar can count those exchanges in its ``drops`` summaries; ``relay_memory`` (no room in
``SHADOW_PROXY_HELD_BYTES`` for a body copy, `shadow.proxy.held`) likewise.
"""

from __future__ import annotations

import json
import struct
from typing import TYPE_CHECKING

from shadow.proxy.framing import Message
from shadow.proxy.hooks import request_path

if TYPE_CHECKING:
    import asyncio

FRAME = struct.Struct("!cI")
BLOBS = struct.Struct("!IIII")
NONE = 0xFFFFFFFF


def encode_head(message: Message) -> bytes:
    """The start line and headers as CRLF-separated lines."""
    lines = [" ".join(message.start)]
    lines.extend(f"{name}: {value}" for name, value in message.headers)
    return "\r\n".join(lines).encode("latin-1")


def decode_head(data: bytes, body: bytes | None) -> Message:
    """The inverse of `encode_head`, with the body."""
    lines = data.decode("latin-1").split("\r\n")
    start = lines[0].split(" ", 2)
    headers = [(name, value) for name, _, value in (line.partition(": ") for line in lines[1:])]
    return Message((start[0], start[1], start[2] if len(start) > 2 else ""), headers, body, complete=True)


def encode_exchange(request: Message, response: Message) -> bytes:
    """One ``X`` frame."""
    blobs = [encode_head(request), request.body, encode_head(response), response.body]
    sizes = [NONE if b is None else len(b) for b in blobs]
    payload = b"".join([BLOBS.pack(*sizes), *(b for b in blobs if b)])
    return FRAME.pack(b"X", len(payload)) + payload


def decode_exchange(payload: bytes) -> tuple[Message, Message]:
    """The inverse of `encode_exchange` (without the frame header)."""
    sizes = BLOBS.unpack_from(payload)
    pos = BLOBS.size
    blobs: list[bytes | None] = []
    for size in sizes:
        if size == NONE:
            blobs.append(None)
            continue
        blobs.append(payload[pos:pos + size])
        pos += size
    req_head, req_body, resp_head, resp_body = blobs
    return decode_head(req_head or b"", req_body), decode_head(resp_head or b"", resp_body)


def encode_json(kind: bytes, value: object) -> bytes:
    """A ``C`` or ``R`` frame."""
    payload = json.dumps(value).encode()
    return FRAME.pack(kind, len(payload)) + payload




class ChannelHooks:
    """The relay's `ProxyHooks`: exchanges and counters go to the sidecar over the channel."""

    def __init__(self, transport: asyncio.Transport, limit: int) -> None:
        self.transport = transport
        self.limit = limit
        self.answered_by_class: dict[str, int] = {}
        self.unmirrored_by_reason: dict[str, int] = {}
        self.refused_by_reason: dict[str, int] = {}
        self.by_route: dict[str, dict[str, int]] = {"handoff_full": {}, "relay_memory": {}}
        """Per reason, per ``"METHOD path"``: the sidecar counts them in its drop summaries."""

    def answered(self, status: int) -> None:
        """Counted here, sent with the next counters frame."""
        key = f"{status // 100}xx"
        self.answered_by_class[key] = self.answered_by_class.get(key, 0) + 1

    def exchange(self, request: Message, response: Message) -> None:
        """One ``X`` frame, unless the channel is gone or its unsent bytes are over the limit."""
        if self.transport.is_closing():
            self.unmirrored("sidecar_unavailable")
        elif self.transport.get_write_buffer_size() > self.limit:
            self.dropped("handoff_full", request)
        else:
            self.transport.write(encode_exchange(request, response))

    def unmirrored(self, reason: str, n: int = 1) -> None:
        """Counted here, sent with the next counters frame."""
        self.unmirrored_by_reason[reason] = self.unmirrored_by_reason.get(reason, 0) + n

    def refused(self, reason: str) -> None:
        """Counted here, sent with the next counters frame."""
        self.refused_by_reason[reason] = self.refused_by_reason.get(reason, 0) + 1

    def dropped(self, reason: str, request: Message) -> None:
        """Unmirrored, and counted per route for the sidecar's ``drops``."""
        self.unmirrored(reason)
        routes = self.by_route[reason]
        route = f"{request.start[0].upper()} {request_path(request.start[1])}"
        routes[route] = routes.get(route, 0) + 1

    def send_counters(self, health: dict[str, int] | None = None) -> None:
        """One ``C`` frame with every counter so far, and the relay's health gauges."""
        if not self.transport.is_closing():
            self.transport.write(encode_json(b"C", {"answered": self.answered_by_class,
                                                    "unmirrored": self.unmirrored_by_reason,
                                                    "refused": self.refused_by_reason,
                                                    **self.by_route,
                                                    "health": health or {}}))


