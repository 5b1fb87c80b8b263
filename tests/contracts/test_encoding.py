"""`decode_body`: request bodies in gzip or deflate, decoded under the body cap, refused by name."""

from __future__ import annotations

import gzip
import zlib

import pytest

from contracts.encoding import DecodedTooLarge, UnsupportedEncoding, decode_body
from contracts.errors import InvalidRequest

BODY = b'{"decision_id": "d-1", "state": "' + b"x" * 500 + b'"}'
CAP = 1 << 20


@pytest.mark.parametrize(("coding", "data"), [
    ("", BODY),
    ("identity", BODY),
    ("gzip", gzip.compress(BODY)),
    ("x-gzip", gzip.compress(BODY)),
    ("GZIP", gzip.compress(BODY)),
    ("deflate", zlib.compress(BODY)),
    ("deflate", zlib.compress(BODY)[2:-4]),  # raw deflate, as some clients send it
    ("gzip, deflate", zlib.compress(gzip.compress(BODY))),  # gzip applied first, so undone last
    ("identity, gzip", gzip.compress(BODY)),
])
def test_whole_streams_decode_to_the_body(coding: str, data: bytes) -> None:
    """Each supported coding (and a list of them, undone in reverse) gives back the body sent."""
    assert decode_body(data, coding, CAP) == BODY


@pytest.mark.parametrize("cut", [0, 1, 9, 20, -9, -1])
@pytest.mark.parametrize("coding", ["gzip", "deflate"])
def test_a_stream_cut_short_is_a_400_naming_body(coding: str, cut: int) -> None:
    """A stream that ends early (the case that hung aiohttp's own decoder) is a 400 on ``body``."""
    data = gzip.compress(BODY) if coding == "gzip" else zlib.compress(BODY)
    with pytest.raises(InvalidRequest) as caught:
        decode_body(data[:cut], coding, CAP)
    assert caught.value.field == "body"
    assert caught.value.status == 400


@pytest.mark.parametrize(("coding", "data"), [
    ("gzip", b"not gzip at all"),
    ("deflate", b"\xff" * 40),
    ("gzip", gzip.compress(BODY) + b"trailing"),
    ("gzip", BODY),
])
def test_bytes_not_in_the_coding_are_a_400_naming_body(coding: str, data: bytes) -> None:
    """Garbage, plain bytes labelled gzip, and bytes after the stream's end are refused on ``body``."""
    with pytest.raises(InvalidRequest) as caught:
        decode_body(data, coding, CAP)
    assert caught.value.field == "body"


@pytest.mark.parametrize("coding", ["gzip", "deflate"])
def test_a_bomb_stops_at_the_cap_with_a_413(coding: str) -> None:
    """64 MiB of zeros in ~64 KiB: refused as 413 on ``body`` after decoding at most the cap (+1)."""
    bomb = gzip.compress(bytes(64 << 20)) if coding == "gzip" else zlib.compress(bytes(64 << 20))
    assert len(bomb) < 128 << 10
    with pytest.raises(DecodedTooLarge) as caught:
        decode_body(bomb, coding, CAP)
    assert (caught.value.status, caught.value.field) == (413, "body")
    assert decode_body(gzip.compress(bytes(CAP)), "gzip", CAP) == bytes(CAP)  # exactly the cap is fine


@pytest.mark.parametrize("coding", ["br", "zstd", "compress", "x-bogus", "gzip, br"])
def test_an_unknown_coding_is_a_415_naming_content_encoding(coding: str) -> None:
    """A coding this service does not decode is a 415 on ``Content-Encoding``, before any decoding."""
    with pytest.raises(UnsupportedEncoding) as caught:
        decode_body(gzip.compress(BODY), coding, CAP)
    assert (caught.value.status, caught.value.field) == (415, "Content-Encoding")
