"""Normal clients' latency through the proxy while each attack runs, against no attack, in one run.

For each attack of ``tests/shadow/proxy/attacks.py`` (connect-then-close, idle connections, slowloris,
a head one byte at a time, pipelined bodies to an unclaimed route, bare-LF smuggling) and for none: a
fresh upstream, sidecar and relay process (the default), four keep-alive clients posting decisions to
the claimed route, paced, while the attack runs. Reports the normal requests' p50 and p99 (medians
over ``--repeats``) and their ratio to the no-attack row of the same run::

    .venv/bin/python -m bench.proxy_soak --repeats 3 --requests 50
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.shadow.fault_scorer import Faults, fault_app
from tests.shadow.harness import serve
from tests.shadow.proxy.attacks import ATTACKS, under_attack
from tests.shadow.proxy.test_proxy import proxy_stack


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _one(attack: str | None, scorer: str, requests: int) -> tuple[float, float, int]:
    """(p50 ms, p99 ms, wrong answers) of the normal clients under ``attack``, on a fresh stack."""
    with tempfile.TemporaryDirectory() as folder:
        stack = proxy_stack(Path(folder), scorer, "process", proxy_idle_timeout_s=1.0)
        async with stack as (_up, proxy, _api):
            result = await under_attack(proxy, attack, requests=requests, pace_s=0.005)
    return (_percentile(result.latencies_ms, 0.5), _percentile(result.latencies_ms, 0.99),
            len(result.wrong))


async def main_async(args: argparse.Namespace) -> None:
    """Every attack (and none) ``--repeats`` times, interleaved; print the table."""
    faults = Faults()
    rows: dict[str, list[tuple[float, float, int]]] = {}
    async with serve(fault_app(faults)) as scorer:
        for _ in range(args.repeats):
            for attack in [None, *sorted(ATTACKS)]:
                rows.setdefault(attack or "none", []).append(await _one(attack, scorer, args.requests))
        faults.release.set()
    base50 = statistics.median(r[0] for r in rows["none"])
    base99 = statistics.median(r[1] for r in rows["none"])
    print(f"{'attack':22} {'p50 ms':>8} {'x none':>7} {'p99 ms':>8} {'x none':>7} {'wrong':>6}")
    for name, runs in rows.items():
        p50 = statistics.median(r[0] for r in runs)
        p99 = statistics.median(r[1] for r in runs)
        wrong = sum(r[2] for r in runs)
        print(f"{name:22} {p50:8.2f} {p50 / base50:7.2f} {p99:8.2f} {p99 / base99:7.2f} {wrong:6d}")


def main() -> None:
    """Parse the flags and run."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3, help="runs per attack (median reported)")
    parser.add_argument("--requests", type=int, default=50, help="requests per normal client per run")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
