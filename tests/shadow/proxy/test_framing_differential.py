"""The framer against real parsers: where llhttp (httptools) or h11 reads a stream otherwise, it is off.

A bounded run here; ``bench/framing_differential.py`` runs longer.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.shadow.proxy.harness import SMUGGLING, VALID
from tests.shadow.proxy.parsers import disagreement, framer_reading, streams


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=streams, split=st.sampled_from([1, 3, 7, 1 << 20]))
def test_the_framer_is_off_wherever_a_real_parser_disagrees(data: bytes, split: int) -> None:
    """Generated pipelined streams, fed in pieces: the framer reads what llhttp and h11 read, or is off.

    Methods, targets, versions, header names and values, lengths, chunk lines and line ends are mutated.
    """
    assert disagreement(data, split) is None


def test_the_smuggling_vectors_are_refused_by_a_real_parser_or_ambiguous() -> None:
    """The named vectors are framed by no one here: the framer is off on each, as the fuzz rule wants."""
    for name, data in SMUGGLING.items():
        assert disagreement(data, 1 << 20) is None, name


def test_the_framer_still_follows_well_formed_streams() -> None:
    """Strictness has a floor: a clean pipelined stream is framed, and agrees with both parsers."""
    framed, off = framer_reading(VALID, 5)
    assert off is None
    assert [r[:2] for r in framed.requests] == [("POST", "/route"), ("PUT", "/a?b=1"), ("GET", "/")]
    assert disagreement(VALID, 5) is None
