"""What answering ``POST /v1/decisions`` only once the accept marks are on disk costs the mirror API.

Runs ``semif-shadow sidecar run`` (API mode) from two source trees, one after the other, several times
alternating: ``--before`` (a checkout whose 202 is sent once decisions are queued in memory, made with
``git worktree add /tmp/before REV``) and this tree (the 202 waits for the journal's group commit
of the accept marks). Each run loads a fresh sidecar with single-decision posts over ``--clients``
keep-alive connections, back to back (closed loop), for ``--duration`` seconds, and reports answers/s
and the answer latency's p50 and p99. The scorer is a closed port, so no scorer competes for the CPU
(decisions are accepted, then dropped by the breaker). Prints the medians of the runs side by side::

    .venv/bin/python bench/api_ack.py --before /tmp/before --runs 3 --duration 5
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import yaml

ROOT = Path(__file__).resolve().parents[1]
CLI = Path(sys.executable).parent / "semif-shadow"


def free_port() -> int:
    """A free loopback port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def catalog(folder: Path) -> Path:
    """One decision type scored by a closed port."""
    dtype = {"question": "Which team?", "options": [{"id": "a", "text": "A"}, {"id": "b", "text": "B"}],
             "scorer": {"backend": "semif_http", "endpoint": f"http://127.0.0.1:{free_port()}"},
             "experiment_ends_at": "2099-01-01T00:00:00Z"}
    path = folder / "catalog.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "decision_types": {"t": dtype}}), encoding="utf-8")
    return path


async def load(url: str, clients: int, duration: float) -> dict[str, float]:
    """Closed-loop single-decision posts; answers/s, p50 and p99 in ms."""
    latencies: list[float] = []
    deadline = time.perf_counter() + duration

    async def one(c: int) -> None:
        async with aiohttp.ClientSession() as session:
            i = 0
            while time.perf_counter() < deadline:
                body = {"decision_type": "t", "decision_id": f"{c}-{i}", "state": "x"}
                t0 = time.perf_counter()
                async with session.post(f"{url}/v1/decisions", json=body) as resp:
                    await resp.read()
                latencies.append((time.perf_counter() - t0) * 1000)
                i += 1

    await asyncio.gather(*(one(c) for c in range(clients)))
    q = statistics.quantiles(latencies, n=100, method="inclusive")
    return {"rps": len(latencies) / duration, "p50": q[49], "p99": q[98]}


async def run_one(tree: Path, clients: int, duration: float) -> dict[str, float]:
    """A fresh sidecar from ``tree``, loaded once."""
    with tempfile.TemporaryDirectory() as tmp:
        folder, port = Path(tmp), free_port()
        env = {**os.environ, "PYTHONPATH": str(tree), "SHADOW_CATALOG": str(catalog(folder)),
               "SHADOW_PORT": str(port), "SHADOW_RECORDS_ROOT": str(folder / "records"),
               "SHADOW_RECORDS_SPOOL_DIR": str(folder / "spool"), "SHADOW_QUEUE_MAX_ITEMS": "100000"}
        proc = await asyncio.create_subprocess_exec(str(CLI), "sidecar", "run", env=env,
                                                    stderr=asyncio.subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        try:
            async with aiohttp.ClientSession() as session:
                for _ in range(400):
                    try:
                        async with session.get(url + "/healthz") as resp:
                            if resp.status == 200:
                                break
                    except aiohttp.ClientConnectionError:
                        await asyncio.sleep(0.05)
            return await load(url, clients, duration)
        finally:
            proc.send_signal(signal.SIGTERM)
            await proc.wait()


async def main_async(args: argparse.Namespace) -> None:
    """Alternate before / after, ``--runs`` times per client count; print medians and ratios."""
    trees = {"before (202 when queued)": args.before.resolve(), "after (202 when durable)": ROOT}
    rows: list[tuple[int, str, dict[str, float]]] = []
    for clients in args.clients:
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
        for _ in range(args.runs):
            for name, tree in trees.items():
                runs[name].append(await run_one(tree, clients, args.duration))
        for name, results in runs.items():
            rows.append((clients, name, {k: statistics.median(r[k] for r in results) for k in results[0]}))
    print(f"median of {args.runs} runs, {args.duration:g} s each, closed loop, one decision per POST")
    print(f"{'clients':>7}  {'sidecar':<26} {'answers/s':>10} {'p50 ms':>8} {'p99 ms':>8}")
    for clients, name, m in rows:
        print(f"{clients:>7}  {name:<26} {m['rps']:>10.0f} {m['p50']:>8.2f} {m['p99']:>8.2f}")
    print("after / before:")
    for clients in args.clients:
        before, after = (m for c, _, m in rows if c == clients)
        ratios: dict[str, Any] = {k: after[k] / before[k] for k in before}
        print(f"{clients:>7}  answers/s x{ratios['rps']:.2f}, p50 x{ratios['p50']:.2f}, "
              f"p99 x{ratios['p99']:.2f}")


def main() -> None:
    """Parse the flags and run."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, required=True, help="the sidecar's source tree to compare")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--duration", type=float, default=5.0, help="seconds of load per run")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 16], help="connections (one row each)")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
