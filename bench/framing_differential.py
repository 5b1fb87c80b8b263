"""The proxy framer against llhttp (httptools) and h11 on generated request streams, a long run.

    python -m bench.framing_differential --examples 20000

Prints how many streams the framer followed (and agreed with both parsers on), how many it turned off
for, and how many disagreements were found (must be 0). The bounded run of the same property is
``tests/shadow/proxy/test_framing_differential.py``; the count of the last run is in docs/security.md.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.shadow.proxy.parsers import disagreement, framer_reading, streams


def main() -> None:
    """Run the property ``--examples`` times and print the table."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=20_000)
    args = parser.parse_args()
    counts: Counter[str] = Counter()
    found: list[tuple[bytes, str]] = []

    @settings(max_examples=args.examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(data=streams, split=st.sampled_from([1, 3, 7, 1 << 20]))
    def run(data: bytes, split: int) -> None:
        why = disagreement(data, split)
        framed, off = framer_reading(data, split)
        counts["streams"] += 1
        counts["framer off" if off and off not in {"upgrade", "connection_close"} else "framer followed"] += 1
        counts["requests framed"] += len(framed.requests)
        if why is not None:
            counts["disagreements"] += 1
            found.append((data, why))

    started = time.perf_counter()
    run()
    counts["disagreements"] += 0
    print(f"{'measure':<20} {'count':>10}")
    for key in ("streams", "framer followed", "framer off", "requests framed", "disagreements"):
        print(f"{key:<20} {counts[key]:>10}")
    print(f"{'seconds':<20} {time.perf_counter() - started:>10.1f}")
    for data, why in found[:5]:
        print(repr(data), why)


if __name__ == "__main__":
    main()
